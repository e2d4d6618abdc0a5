/* lib/voms and lib/cred/ac.c: vomses lines, FQANs as legacy commands, the
 * server's XML answer, and a real VOMS AC (tests/fuzz/corpus/voms/ac, from the
 * test site's server) read, re-wrapped and read back. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voms/voms.h"

#ifndef GG_FUZZ_DIR
#define GG_FUZZ_DIR "tests/fuzz"
#endif

static void test_vomses_line(void **state)
{
	(void)state;
	struct gg_voms_server s;
	struct gg_err err = {0};
	assert_int_equal(gg_voms_server_parse("\"atlas\" \"voms.cern.ch\" \"15001\" "
					      "\"/DC=ch/CN=voms.cern.ch\" \"atlas\"\n",
					      &s, &err),
			 0);
	assert_string_equal(s.host, "voms.cern.ch");
	assert_int_equal(s.port, 15001);
	assert_string_equal(s.dn, "/DC=ch/CN=voms.cern.ch");
	assert_string_equal(s.vo, "atlas");
	free(s.alias), free(s.host), free(s.dn), free(s.vo);
	assert_int_equal(gg_voms_server_parse("# comment\n", &s, &err), 1);
	assert_int_equal(gg_voms_server_parse("   \n", &s, &err), 1);
	assert_int_equal(gg_voms_server_parse("\"a\" \"h\" \"0\" \"/CN=x\" \"a\"", &s, &err),
			 GG_EUSAGE);
	assert_int_equal(gg_voms_server_parse("\"a\" \"h\" \"15\" \"/CN=x\" \"a\" junk", &s, &err),
			 GG_EUSAGE);
	assert_int_equal(gg_voms_server_parse("\"a\" \"h\" \"x15\"", &s, &err), GG_EUSAGE);
}

static void test_fqan_command(void **state)
{
	(void)state;
	char *c;
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo"), "G/vo"), free(c);
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/g"), "G/vo/g"), free(c);
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/g/Role=r"), "B/vo/g:r"), free(c);
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/Role=r/Capability=NULL"), "B/vo:r"),
		free(c);
	assert_null(gg_voms_fqan_command("vo", "/other/g"));
	assert_null(gg_voms_fqan_command("vo", "/vox"));
	assert_null(gg_voms_fqan_command("vo", "/vo/g,/vo/h"));
	assert_null(gg_voms_fqan_command("vo", "/vo/</command>"));
	assert_null(gg_voms_fqan_command("vo", "vo/g"));
}

static void test_answer(void **state)
{
	(void)state;
	struct gg_voms_answer a;
	struct gg_err err = {0};
	const char *e = "<?xml version=\"1.0\"?><voms><error><code>NoSuchUser</code><message>not a "
			"member &amp; more</message></error></voms>";
	assert_int_equal(gg_voms_answer_parse(e, strlen(e), &a, &err), 0);
	assert_true(a.code != 0);
	assert_string_equal(a.message, "not a member & more");
	assert_null(a.ac);
	gg_voms_answer_clear(&a);
	const char *l = "<vomsans><version>3</version><error><item><number>1001</number><message>"
			"no</message></item></error><ac>QQ==\n</ac></vomsans>";
	assert_int_equal(gg_voms_answer_parse(l, strlen(l), &a, &err), 0);
	assert_int_equal(a.code, 1001);
	gg_voms_answer_clear(&a);
	const char *ok = "<voms><ac>MIIB\nAA==</ac></voms>";
	assert_int_equal(gg_voms_answer_parse(ok, strlen(ok), &a, &err), 0);
	assert_int_equal(a.ac_len, 4);
	gg_voms_answer_clear(&a);
	const char *bad[] = {"",
			     "<voms>",
			     "<voms><ac>QQ==</ac></vomx>",
			     "<voms a=\"1\"><ac/></voms>",
			     "<!DOCTYPE x><voms><ac>QQ==</ac></voms>",
			     "<voms><ac>&xxe;</ac></voms>",
			     "<voms><ac>QQ==</ac></voms>trailing",
			     "<voms><ac>!!</ac></voms>",
			     "<voms><ac>QQ==</ac><ac>QQ==</ac></voms>",
			     "<html><body>hi</body></html>"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(gg_voms_answer_parse(bad[i], strlen(bad[i]), &a, &err), GG_EPROTO);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char *b = malloc(65536);
	*len = fread(b, 1, 65536, f);
	fclose(f);
	return b;
}

static void test_ac(void **state)
{
	(void)state;
	size_t len, sl, n = 0;
	struct gg_err err = {0};
	unsigned char *der = slurp(GG_FUZZ_DIR "/corpus/voms/ac", &len), *seq = NULL;
	struct gg_ac ac, *acs = NULL;
	assert_int_equal(gg_ac_parse(der, len, 0, &ac, &err), 0);
	assert_string_equal(ac.vo, "testvo");
	assert_string_equal(ac.issuer, "/DC=org/DC=example/CN=localhost");
	assert_int_equal(ac.n_fqans, 2);
	assert_string_equal(ac.fqans[0], "/testvo/analysis/Role=NULL/Capability=NULL");
	assert_true(ac.not_after - ac.not_before == 12 * 3600);
	/* a day after its end it is expired */
	struct gg_ac late;
	assert_int_equal(gg_ac_parse(der, len, ac.not_after + 86400, &late, &err), 0);
	assert_int_equal(late.time_left, 0);
	gg_ac_clear(&late);
	const unsigned char *one[2] = {der, der};
	size_t lens[2] = {len, len};
	assert_int_equal(gg_ac_seq_encode(one, lens, 2, &seq, &sl, &err), 0);
	assert_int_equal(gg_ac_seq_parse(seq, sl, 0, &acs, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(acs[1].fqans[1], ac.fqans[1]);
	gg_ac_list_free(acs, n);
	/* truncated, or one byte changed in the length: refused */
	assert_int_equal(gg_ac_seq_parse(seq, sl - 1, 0, &acs, &n, &err), GG_EPROTO);
	assert_int_equal(gg_ac_parse(der, len - 1, 0, &late, &err), GG_EPROTO);
	lens[0] = len - 1;
	unsigned char *none = NULL;
	assert_int_equal(gg_ac_seq_encode(one, lens, 1, &none, &sl, &err), GG_EPROTO);
	assert_null(none);
	free(seq);
	gg_ac_clear(&ac);
	free(der);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vomses_line),
		cmocka_unit_test(test_fqan_command),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_ac),
	};
	return cmocka_run_group_tests_name("voms", tests, NULL, NULL);
}
