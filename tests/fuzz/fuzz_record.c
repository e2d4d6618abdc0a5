/* Session and job records (one JSON file each in the store): json_loadb as the
 * store reads them, then gg_record_from_json. A record that loads must survive
 * being saved and loaded again unchanged (the store rewrites records on every
 * update), and feeds the SSH config writer. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "store/store.h"
#include "node/sshview.h"
#include "ssh/ssh.h"

static int record_str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void record_same(const struct gg_record *a, const struct gg_record *b)
{
#define S(f) FUZZ_CHECK(record_str_eq(a->f, b->f), "'%s' changed on a round trip", #f);
#define I(f)                                                                       \
	FUZZ_CHECK(a->f == b->f, "'%s' changed on a round trip: %lld -> %lld", #f, \
		   (long long)a->f, (long long)b->f);
	GG_RECORD_STR_FIELDS(S);
	GG_RECORD_INT_FIELDS(I);
	I(kind);
	I(state);
#undef S
#undef I
	if (a->state == GG_S_UNKNOWN)
		FUZZ_CHECK(a->last_known == b->last_known, "'last_known' changed on a round trip");
}

FUZZ_TARGET(record)
{
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, 0, &je); /* as the store reads */
	if (!j)
		return 0;
	struct gg_record r;
	struct gg_err err = {0};
	int rc = gg_record_from_json(j, &r, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0], "failure without a message (rc %d)", rc);
		json_decref(j);
		return 0;
	}
	FUZZ_CHECK(gg_record_name_valid(r.name), "loaded a record with a bad name");
	/* integers are read as written, or the record is refused: never wrapped */
#define I(f)                                                                              \
	if (json_is_integer(json_object_get(j, #f)))                                      \
		FUZZ_CHECK((json_int_t)r.f == json_integer_value(json_object_get(j, #f)), \
			   "'%s' %lld was read as %lld", #f,                              \
			   (long long)json_integer_value(json_object_get(j, #f)), (long long)r.f);
	GG_RECORD_INT_FIELDS(I);
#undef I
	json_decref(j);

	/* saved as the store saves it, then read back */
	json_t *o = gg_record_to_json(&r);
	FUZZ_CHECK(o, "gg_record_to_json failed");
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	FUZZ_CHECK(text, "json_dumps failed");
	json_t *j2 = json_loads(text, 0, &je);
	FUZZ_CHECK(j2, "the saved record is not JSON: %s", je.text);
	struct gg_record r2;
	struct gg_err err2 = {0};
	rc = gg_record_from_json(j2, &r2, &err2);
	json_decref(j2);
	FUZZ_CHECK(rc == 0, "a record that loaded does not load once saved: %s\n%s", err2.msg,
		   text);
	free(text);
	record_same(&r, &r2);
	gg_record_clear(&r2);

	struct gg_record c;
	FUZZ_CHECK(gg_record_copy(&c, &r) == 0, "gg_record_copy failed");
	record_same(&r, &c);
	gg_record_clear(&c);

	/* the generated ssh config and its alias */
	char *alias = gg_session_host_alias(&r);
	FUZZ_CHECK(alias, "no alias");
	free(alias);
	struct gg_site site = {0};
	char *jumps[] = {"gguser@127.0.0.1:9522", "jump2.example.org"};
	site.name = r.site ? r.site : "fuzz";
	site.jumps[0] = jumps[0];
	site.jumps[1] = jumps[1];
	site.njumps = 2;
	struct gg_config cfg = {0};
	cfg.sites = &site;
	cfg.nsites = 1;
	struct gg_ssh_paths p = {0};
	p.dir = "/nonexistent/ssh";
	p.config = "/nonexistent/ssh/config";
	p.config_win = "/nonexistent/ssh/config.windows";
	p.known_hosts = "/nonexistent/ssh/known_hosts";
	p.keys = "/nonexistent/ssh/keys";
	p.control = "/nonexistent/ssh/cm";
	for (int win = 0; win < 2; win++) {
		char *conf = gg_session_format_ssh_config(&p, &cfg, &r, 1, win);
		FUZZ_CHECK(conf, "gg_session_format_ssh_config failed");
		free(conf);
	}
	gg_record_clear(&r);
	return 0;
}
