/* Any JSON answer of a CE (GET /rest, /info GLUE2, session listings, delegation
 * lists) goes through gg_http_resp_json first: an empty body is an empty object,
 * anything else must parse or fail with a message. The body is NUL-terminated in
 * a response, as gg_http_request leaves it. */
#include <jansson.h>

#include "fuzz.h"
#include "http/http.h"

FUZZ_TARGET(http_json)
{
	struct gg_http_resp resp = {0};
	resp.status = 200;
	resp.body = fuzz_cstr(data, size);
	resp.len = size;
	json_t *j = NULL;
	struct gg_err err = {0};
	int rc = gg_http_resp_json(&resp, &j, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0], "failure without a message (rc %d)", rc);
	} else {
		FUZZ_CHECK(j != NULL, "success without a value");
		if (size == 0)
			FUZZ_CHECK(json_is_object(j) && json_object_size(j) == 0,
				   "an empty body is not an empty object");
		/* what the CE code then reads */
		json_t *v = json_object_get(j, "version");
		(void)json_string_value(v);
		json_t *f = json_object_get(j, "file");
		(void)json_array_size(f);
		json_decref(j);
	}
	free(resp.body);
	return 0;
}
