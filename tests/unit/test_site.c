/* Site keys as data (GG_SITE_KEYS, lib/core/sitekey.c, lib/engine/site.c):
 * every key is whole (an option, help, its member), survives the file, shows
 * in --json and in the lines of a change, is documented on gridgpu-site(1),
 * and is checked by site add and site set as it always was. Nothing here names
 * a key where a loop over the list can: a new key is tested by adding it. */
#include "unit.h"

#include "core/core.h"
#include "gridgpu/site.h"

UNIT_TMPDIR("gg-site")

/* Values some key takes; each key must take one of them (a choice: its first
 * word). */
static const char *const candidates[] = {
	"https://ce.example.org:443/arex",
	"u@jump.example.org:2222",
	"/srv/data:/data",
	"192.0.2.0/24",
	"1h30m",
	"root://cache.example.org:1094",
	"8.0",
	"40960",
	"1g.10gb",
	"4",
};

/* Set k in s through site set to a value it takes; that value. */
static const char *set_some(struct gg_site *s, const struct gg_site_key *k)
{
	struct gg_err err = {0};
	static char choice[64];
	if (k->kind == GG_SK_CHOICE) {
		snprintf(choice, sizeof choice, "%.*s", (int)strcspn(k->argname, "|"), k->argname);
		assert_int_equal(gg_site_set_key(s, k->option, choice, &err), 0);
		return choice;
	}
	for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
		if (gg_site_set_key(s, k->option, candidates[i], &err) == 0)
			return candidates[i];
	fail_msg("site key %s takes none of the test's values (last: %s)", k->key, err.msg);
	return NULL;
}

static void test_keys_whole(void **state)
{
	(void)state;
	assert_int_equal(gg_site_key_count(), GG_SITE_NKEYS);
	assert_null(gg_site_key_at(gg_site_key_count()));
	for (size_t i = 0; i < gg_site_key_count(); i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		char opt[64], dashed[66];
		assert_true(k->key[0] && k->field[0] && k->help[0] && k->argname[0]);
		/* the option is the key with '-' for '_' (the man page says so) */
		snprintf(opt, sizeof opt, "%s", k->key);
		for (char *p = opt; *p; p++)
			*p = *p == '_' ? '-' : *p;
		assert_string_equal(k->option, opt);
		snprintf(dashed, sizeof dashed, "--%s", k->option);
		assert_ptr_equal(gg_site_key_find(k->key), k);
		assert_ptr_equal(gg_site_key_find(k->option), k);
		assert_ptr_equal(gg_site_key_find(dashed), k);
		assert_int_equal(gg_site_key_index(k), i);
		for (size_t j = 0; j < i; j++) {
			const struct gg_site_key *o = gg_site_key_at(j);
			assert_true(strcmp(o->option, k->option) != 0 &&
				    strcmp(o->field, k->field));
			assert_true(!k->shortopt || o->shortopt != k->shortopt);
		}
	}
	assert_null(gg_site_key_find("user"));
	assert_null(gg_site_key_find("nope"));
}

/* site s with k set alone (and the CE a site needs). */
static void site_with(struct gg_site *s, const struct gg_site_key *k)
{
	memset(s, 0, sizeof *s);
	s->name = strdup("a");
	struct gg_err err = {0};
	if (strcmp(k->key, "ce"))
		assert_int_equal(gg_site_set_key(s, "ce", "https://ce.example.org/arex", &err), 0);
	set_some(s, k);
}

static void count_change(void *ud, const struct gg_site_key *k, const char *before,
			 const char *after)
{
	const struct gg_site_key **want = ud;
	if (strcmp(k->key, "ce") == 0) /* the base site has one too */
		return;
	assert_ptr_equal(k, *want);
	assert_null(before);
	assert_non_null(after);
	*want = NULL;
}

/* Every key, set through site set: written, read back the same, in --json
 * under its member, the one change from a site without it. */
static void test_keys_round_trip(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/config", tmpdir);
	for (size_t i = 0; i < gg_site_key_count(); i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		struct gg_config cfg = {.path = path};
		struct gg_site s, empty = {.name = (char *)"a"};
		struct gg_err err = {0};
		site_with(&s, k);
		int oom;
		char *text = gg_site_value_text(&s, k, &oom);
		assert_non_null(text);
		assert_int_equal(gg_config_set_site(&cfg, &s, &err), 0);
		assert_int_equal(gg_config_save(&cfg, &err), 0);
		struct gg_config *back = NULL;
		assert_int_equal(gg_config_load(path, &back, &err), 0);
		const struct gg_site *b = gg_config_site(back, "a");
		assert_non_null(b);
		char *again = gg_site_value_text(b, k, &oom);
		assert_non_null(again);
		assert_string_equal(again, text);
		const struct gg_site_key *want = k;
		if (strcmp(k->key, "ce")) {
			assert_int_equal(gg_site_changes(&empty, b, count_change, &want), 2);
			assert_null(want);
		}
		json_t *j = gg_site_to_json(b);
		assert_non_null(json_object_get(j, k->field));
		assert_string_equal(json_string_value(json_object_get(j, "name")), "a");
		json_decref(j);
		/* and unset by site set "" (but the CE) */
		int rc = gg_site_set_key(&s, k->option, "", &err);
		assert_int_equal(rc, k->flags & GG_SKF_REQUIRED ? GG_EUSAGE : 0);
		char *gone = gg_site_value_text(&s, k, &oom);
		assert_true(k->flags & GG_SKF_REQUIRED ? gone != NULL : gone == NULL);
		free(gone);
		free(again);
		free(text);
		gg_config_free(back);
		gg_site_clear(&s);
		gg_site_clear(&cfg.sites[0]);
		free(cfg.sites);
	}
}

/* gridgpu-site(1) documents every key: its option among site add's, its
 * short option, its name in site set's list of KEYs. */
static void test_keys_man(void **state)
{
	(void)state;
	char *man = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_file_read("man/gridgpu-site.1", 1 << 20, &man, NULL, &err), 0);
	char *keys = strstr(man, "is the name of a value option of");
	char *keys_end = keys ? strstr(keys, "the value is checked") : NULL;
	assert_non_null(keys_end);
	*keys_end = '\0'; /* keys: site set's list, "(\n.BR ce ,\n ... \n.BR idle\-limit );" */
	for (size_t i = 0; i < gg_site_key_count(); i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		char esc[80] = "", opt[96], item[96];
		for (const char *p = k->option; *p; p++)
			strcat(esc, *p == '-' ? "\\-" : (char[]){*p, 0});
		snprintf(opt, sizeof opt, "\\-\\-%s", esc);
		if (!strstr(keys_end + 1, opt)) /* in OPTIONS, after that list */
			fail_msg("gridgpu-site(1) does not document --%s", k->option);
		snprintf(item, sizeof item, " %s ", esc);
		if (!strstr(keys, item))
			fail_msg("gridgpu-site(1): site set's KEYs do not list %s", k->option);
		snprintf(opt, sizeof opt, "\\-%c \", \" \\-\\-%s", k->shortopt, esc);
		if (k->shortopt && !strstr(keys_end + 1, opt))
			fail_msg("gridgpu-site(1) does not document -%c", k->shortopt);
	}
	free(man);
}

/* site add's checks, with the messages they always had. */
static void test_add_value(void **state)
{
	(void)state;
	static const struct {
		const char *key, *value, *msg;
	} bad[] = {
		{"ce", "http://ce/arex",
		 "--ce 'http://ce/arex': the CE URL must start with https://"},
		{"jump", "a@b/c", "--jump: expected [USER@]HOST[:PORT]"},
		{"jump", "a@b:99999", "--jump: "},
		{"identity", "/a\"b", "--identity"},
		{"bind", "rel", "--bind 'rel': expected SRC[:DST], absolute paths"},
		{"auth", "foo", "--auth 'foo': expected proxy or token"},
		{"runtime", "docker", "--runtime 'docker': expected apptainer or bwrap"},
		{"idle-limit", "7200", "--idle-limit: '7200' needs a unit"},
		{"connect_deadline", "5q", "--connect-deadline: invalid duration '5q'"},
		{"allow-from", "10.1.2.3/8", "--allow-from '10.1.2.3/8': bits set past"},
		{"token-command", "'open", "--token-command: "},
		{"cache", "https://x.example", "--cache: "},
		{"output-base", "ftp://se/x/", "--output-base 'ftp://se/x/': "},
		{"gpu-model", "A100\n", "--gpu-model: expected the GPU's name"},
		{"gpu-memory", "40GB", "--gpu-memory '40GB': expected MiB"},
		{"gpu-memory", "0", "--gpu-memory '0': expected MiB"},
		{"gpu-capability", "8", "--gpu-capability '8': expected a CUDA compute"},
		{"gpu-capability", "8.0.1", "--gpu-capability '8.0.1': expected a CUDA compute"},
		{"gpus-per-node", "-1", "--gpus-per-node '-1': expected a count"},
		{"mig-profile", "1g10gb", "--mig-profile: '1g10gb' is not a MIG profile"},
		{"arch", "x86-64", "--arch 'x86-64': expected an architecture"},
		{"nope", "x", "unknown key 'nope'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gg_site s = {0};
		struct gg_err err = {0};
		assert_int_equal(gg_site_add_value(&s, bad[i].key, bad[i].value, &err), GG_EUSAGE);
		if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) != 0)
			fail_msg("%s '%s': got \"%s\", want \"%s...\"", bad[i].key, bad[i].value,
				 err.msg, bad[i].msg);
		gg_site_clear(&s);
	}
	/* a list takes its room, then says so and stays as it was */
	struct gg_site s = {0};
	struct gg_err err = {0};
	for (int i = 0; i < GG_MAX_JUMPS; i++)
		assert_int_equal(gg_site_add_value(&s, "jump", "u@h.example", &err), 0);
	assert_int_equal(gg_site_add_value(&s, "jump", "u@h.example", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "more than 8 jump hosts");
	assert_int_equal(s.njumps, GG_MAX_JUMPS);
	/* a bad value leaves the good one there */
	assert_int_equal(gg_site_add_value(&s, "idle-limit", "2h", &err), 0);
	assert_int_equal(gg_site_add_value(&s, "idle-limit", "2", &err), GG_EUSAGE);
	assert_int_equal(s.idle_limit, 7200);
	/* no err to fill: refused all the same */
	assert_int_equal(gg_site_add_value(&s, "allow-from", "10.1.2.3/8", NULL), GG_EUSAGE);
	assert_int_equal(gg_site_add_value(&s, "ce", "http://x", NULL), GG_EUSAGE);
	assert_null(gg_site_value_text(&s, gg_site_key_find("queue"), NULL));
	gg_site_clear(&s);
}

/* site set: the whole setting, a list's values separated by ','; "" unsets;
 * a failure changes nothing; the CE cannot go. */
static void test_set_key(void **state)
{
	(void)state;
	struct gg_site s = {.name = strdup("a")};
	struct gg_err err = {0};
	assert_int_equal(gg_site_set_key(&s, "ce", "https://ce/arex", &err), 0);
	assert_int_equal(gg_site_set_key(&s, "jump", "a@h1.example,b@h2.example:2222", &err), 0);
	assert_int_equal(s.njumps, 2);
	assert_string_equal(s.jumps[1], "b@h2.example:2222");
	assert_int_equal(gg_site_set_key(&s, "--jump", "c@h3.example,bad/x", &err), GG_EUSAGE);
	assert_int_equal(s.njumps, 2);
	assert_string_equal(s.jumps[0], "a@h1.example");
	assert_int_equal(gg_site_set_key(&s, "allow-from", "192.0.2.1,2001:db8::/32", &err), 0);
	assert_int_equal(s.nallow, 2);
	assert_int_equal(gg_site_set_key(&s, "allow-from", "192.0.2.1,,x", &err), GG_EUSAGE);
	assert_int_equal(s.nallow, 2);
	assert_int_equal(gg_site_set_key(&s, "gpu_queue", "gpu", &err), 0);
	assert_int_equal(gg_site_set_key(&s, "gpu-queue", "gpu2", &err), 0);
	assert_string_equal(s.gpu_queue, "gpu2");
	assert_int_equal(gg_site_set_key(&s, "gpu-queue", "", &err), 0);
	assert_null(s.gpu_queue);
	assert_int_equal(gg_site_set_key(&s, "jump", "", &err), 0);
	assert_int_equal(s.njumps, 0);
	assert_int_equal(gg_site_set_key(&s, "ce", "", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "site set: ce cannot be empty");
	assert_string_equal(s.ce, "https://ce/arex");
	assert_int_equal(gg_site_check(&s, &err), 0);
	gg_site_clear(&s);
}

/* A site without its CE: refused by site add (gg_site_check) and, since it
 * would make the file unreadable ("has no 'ce = URL'"), by gg_config_set_site. */
static void test_ce_required(void **state)
{
	(void)state;
	struct gg_site s = {.name = (char *)"a", .queue = (char *)"q"};
	struct gg_config cfg = {.path = NULL};
	struct gg_err err = {0};
	assert_int_equal(gg_site_check(&s, &err), GG_EUSAGE);
	assert_string_equal(err.msg, "--ce URL is required");
	assert_int_equal(gg_config_set_site(&cfg, &s, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--ce URL is required"));
	assert_int_equal(cfg.nsites, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_whole), cmocka_unit_test(test_keys_round_trip),
		cmocka_unit_test(test_keys_man),   cmocka_unit_test(test_add_value),
		cmocka_unit_test(test_set_key),    cmocka_unit_test(test_ce_required),
	};
	return cmocka_run_group_tests_name("site", tests, setup_tmp, teardown_tmp);
}
