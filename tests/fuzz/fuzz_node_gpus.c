/* The record of a session's GPUs that its launcher writes on the worker node
 * (nvidia-smi's CSV) and freeze --session reads over ssh into the image's
 * provenance: gg_gpu_smi_provenance. What it accepts is JSON whose strings are
 * printable ASCII, one entry per GPU. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gpu/gpu.h"

static void check_strings(json_t *v)
{
	size_t i;
	const char *k;
	json_t *x;
	if (json_is_string(v))
		for (const char *p = json_string_value(v); *p; p++)
			FUZZ_CHECK(*p >= 0x20 && *p <= 0x7e, "byte 0x%02x in a string",
				   (unsigned char)*p);
	json_object_foreach (v, k, x)
		check_strings(x);
	json_array_foreach (v, i, x)
		check_strings(x);
}

FUZZ_TARGET(node_gpus)
{
	char *text = malloc(size + 1), *json = NULL;
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0'; /* the caller refuses a record with a NUL in it */
	struct gg_err err = {0};
	int rc = gg_gpu_smi_provenance(text, &json, &err);
	free(text);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0] && !json, "failure without a message, or with a result");
		return 0;
	}
	if (json) {
		json_t *j = json_loads(json, 0, NULL);
		FUZZ_CHECK(j, "not JSON: %s", json);
		json_t *g = json_object_get(j, "gpus");
		FUZZ_CHECK(json_array_size(g) > 0 &&
				   json_integer_value(json_object_get(j, "visible")) ==
					   (json_int_t)json_array_size(g),
			   "visible is not the number of GPUs");
		check_strings(j);
		json_decref(j);
	}
	free(json);
	return 0;
}
