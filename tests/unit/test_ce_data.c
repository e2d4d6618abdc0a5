/* Unit tests of lib/ce/data.c (storage URLs: checks, --input/--output forms,
 * the cache's URL form, the HTTPS form, what A-REX says of the staging), the
 * xRSL of storage inputs and outputs, and lib/engine/storage.c's record
 * lines. */
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"
#include "engine/engine.h"
#include "engine/engine_int.h"

static void test_url_parse(void **state)
{
	(void)state;
	struct gg_data_url u;
	struct gg_err err = {0};
	assert_int_equal(gg_data_url_parse("root://se.example:1094//store/f.root", &u, &err), 0);
	assert_int_equal(u.scheme, GG_URL_ROOT);
	assert_string_equal(u.host, "se.example");
	assert_int_equal(u.port, 1094);
	assert_string_equal(u.path, "/store/f.root");
	assert_int_equal(gg_data_url_parse("root://se.example/store/f", &u, &err), 0);
	assert_string_equal(u.path, "/store/f");
	assert_int_equal(u.port, 0);
	assert_int_equal(gg_data_url_parse("xroot://se/store/f", &u, &err), 0);
	assert_int_equal(u.scheme, GG_URL_ROOT);
	assert_int_equal(gg_data_url_parse("davs://se.example:2880/pnfs/f", &u, &err), 0);
	assert_int_equal(u.scheme, GG_URL_DAVS);
	assert_int_equal(gg_data_url_parse("HTTPS://se/f", &u, &err), 0);
	assert_int_equal(u.scheme, GG_URL_HTTPS);
	/* what the CE cannot stage, each with why */
	assert_int_equal(gg_data_url_parse("gsiftp://se/f", &u, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "GridFTP"));
	assert_int_equal(gg_data_url_parse("http://se/f", &u, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "unencrypted"));
	assert_int_equal(gg_data_url_parse("srm://se/f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("file:///etc/passwd", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("ftp://se/f", &u, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "root://, davs:// or https://"));
	/* malformed */
	assert_int_equal(gg_data_url_parse("root://", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root:///store/f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se:0//f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se:99999//f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se:12a//f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://u@se//f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://[::1]//f", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se//store/dir/", &u, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "directory"));
	assert_int_equal(gg_data_url_parse("root://se//a b", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se//a\"b", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se//a;cache=no", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("root://se//a\nb", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("https://se?x=1", &u, &err), GG_EUSAGE);
	/* bytes that are not UTF-8: refused (a URL must be kept exactly), UTF-8 kept */
	assert_int_equal(gg_data_url_parse("root://se//data/a\xff.root", &u, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "not valid UTF-8"));
	assert_int_equal(gg_data_url_parse("davs://se/d/caf\xc3\xa9\xc3", &u, &err), GG_EUSAGE);
	assert_int_equal(gg_data_url_parse("davs://se/d/caf\xc3\xa9", &u, &err), 0);
	char *n = NULL, *url = NULL;
	assert_int_equal(
		gg_data_output_parse("a.out=root://se//d/a\xff", NULL, NULL, &n, &url, &err),
		GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--output a.out"));
	assert_null(n);
	assert_true(gg_data_url_is_remote("root://x//y"));
	assert_false(gg_data_url_is_remote("data/x.root"));
}

static void test_input_output(void **state)
{
	(void)state;
	struct gg_err err = {0};
	char *url, *name;
	assert_int_equal(gg_data_input_parse("root://se:1094//store/a.root", &url, &name, &err), 0);
	assert_string_equal(url, "root://se:1094//store/a.root");
	assert_string_equal(name, "a.root");
	free(url);
	free(name);
	/* URL:NAME; the port's ':' is not a name */
	assert_int_equal(
		gg_data_input_parse("root://se:1094//store/a.root:in.root", &url, &name, &err), 0);
	assert_string_equal(url, "root://se:1094//store/a.root");
	assert_string_equal(name, "in.root");
	free(url);
	free(name);
	assert_int_equal(gg_data_input_parse("davs://se/store/a:-rf", &url, &name, &err),
			 GG_EUSAGE);
	assert_int_equal(gg_data_input_parse("gsiftp://se/store/a", &url, &name, &err), GG_EUSAGE);
	assert_null(url);
	assert_null(name);

	assert_int_equal(gg_data_output_parse("r.root=davs://se/store/user/u/r.root", NULL, NULL,
					      &name, &url, &err),
			 0);
	assert_string_equal(name, "r.root");
	assert_string_equal(url, "davs://se/store/user/u/r.root");
	free(url);
	free(name);
	/* NAME with the site's base; $USER and ${USER} */
	assert_int_equal(gg_data_output_parse("r.root", "root://se//store/user/$USER/run", "alice",
					      &name, &url, &err),
			 0);
	assert_string_equal(url, "root://se//store/user/alice/run/r.root");
	free(url);
	free(name);
	assert_int_equal(
		gg_data_output_parse("r.root", "root://se//u/${USER}/", "bob", &name, &url, &err),
		0);
	assert_string_equal(url, "root://se//u/bob/r.root");
	free(url);
	free(name);
	assert_int_equal(gg_data_output_parse("r.root", NULL, NULL, &name, &url, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "output_base"));
	assert_int_equal(gg_data_output_parse("a/b=root://se//f", NULL, NULL, &name, &url, &err),
			 GG_EUSAGE);
	assert_int_equal(gg_data_output_parse("r=srm://se//f", NULL, NULL, &name, &url, &err),
			 GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--output r"));
	assert_null(url);
}

static void test_cache_and_http(void **state)
{
	(void)state;
	struct gg_err err = {0};
	char *u = gg_data_cache_url("root://xcache.site:1094", "root://se.site:1095//store/f");
	assert_string_equal(u, "root://xcache.site:1094//root://se.site:1095//store/f");
	free(u);
	u = gg_data_cache_url("root://xcache.site:1094/", "root://se.site//store/f");
	assert_string_equal(u, "root://xcache.site:1094//root://se.site//store/f");
	free(u);
	/* not through the cache: https, no cache, the cache itself */
	u = gg_data_cache_url("root://xc:1", "davs://se/store/f");
	assert_string_equal(u, "davs://se/store/f");
	free(u);
	u = gg_data_cache_url(NULL, "root://se//store/f");
	assert_string_equal(u, "root://se//store/f");
	free(u);
	u = gg_data_cache_url("root://xc:1", "root://xc:1//store/f");
	assert_string_equal(u, "root://xc:1//store/f");
	free(u);
	assert_int_equal(gg_data_cache_check("root://xcache.site:1094", &err), 0);
	assert_int_equal(gg_data_cache_check("root://xcache.site:1094/", &err), 0);
	assert_int_equal(gg_data_cache_check("https://xcache.site", &err), GG_EUSAGE);
	assert_int_equal(gg_data_cache_check("root://xcache.site//store", &err), GG_EUSAGE);
	assert_int_equal(gg_data_cache_check("", &err), GG_EUSAGE);

	u = gg_data_http_url("root://se:1094//store/f");
	assert_string_equal(u, "https://se:1094/store/f");
	free(u);
	u = gg_data_http_url("davs://se/store/f");
	assert_string_equal(u, "https://se/store/f");
	free(u);
	assert_null(gg_data_http_url("gsiftp://se/f"));
}

static void test_xrsl_storage(void **state)
{
	(void)state;
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	char *x = NULL;
	gg_jd_set(&jd.executable, "/bin/sh", &err);
	assert_int_equal(
		gg_jd_input(&jd, "in.root", "root://xc//root://se//store/in.root", NULL, &err), 0);
	assert_int_equal(gg_jd_input(&jd, "w.root", "davs://se:2880/store/w.root", NULL, &err), 0);
	assert_int_equal(gg_jd_output_url(&jd, "r.root", "davs://se/store/u/r.root", &err), 0);
	assert_int_equal(gg_jd_output_url(&jd, "r.root", "root://se//x", &err), GG_EUSAGE);
	assert_int_equal(gg_jd_output(&jd, "kept.txt", &err), 0);
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	/* davs:// as https:// (A-REX's absolute-form requests), root:// as is */
	assert_non_null(strstr(x,
			       "(inputfiles=(\"in.root\" \"root://xc//root://se//store/in.root\")"
			       "(\"w.root\" \"https://se:2880/store/w.root\"))"));
	assert_non_null(strstr(x, "(outputfiles=(\"r.root\" \"https://se/store/u/r.root\")"
				  "(\"kept.txt\" \"\"))"));
	free(x);
	gg_jd_clear(&jd);
}

static void test_staging_state(void **state)
{
	(void)state;
	assert_int_equal(gg_arc_inputs_pending(NULL), 0);
	assert_int_equal(gg_arc_inputs_pending("/gridgpu-wrapper\n/image.sif\n"), 0);
	assert_int_equal(gg_arc_inputs_pending(
				 "/gridgpu-wrapper\n/image.sif\n"
				 "/a.bin https://se/store/a.bin /ctl/delegations/1/2/3\n"
				 "/b.bin root://xc//root://se//store/b.bin /ctl/delegations/1/2/3\n"
				 "/c.bin root://se//store/c.bin"),
			 3);
	assert_int_equal(gg_arc_inputs_pending("/x /not-a-url\n\n"), 0);
}

static void test_staging_failure(void **state)
{
	(void)state;
	char out[1024];
	const char *up =
		"[2026-11-26 14:30:15] [INFO] [1/5] DTR 34d8...22a4: Scheduler received new DTR "
		"34d8c384-62ca-4bd9-ab14-9987d6d122a4 with source: file:/s/job/out.bin, destination: "
		"root://se:1094//store/quota/out.bin, assigned to transfer share _default-upload\n"
		"[2026-11-26 14:30:15] [INFO] [1/18] DTR 34d8...22a4: DataDelivery:  [external] "
		"Failed to copy //s/job/out.bin: [E\n"
		"rror from a cut line\n"
		"[2026-11-26 14:30:16] [INFO] [1/18] DTR 34d8...22a4: DataDelivery: [Error  ][File] "
		"kXR_pgwrite returned with [ERROR] Server responded with an error: [3009] Unable to "
		"write /store/quota/out.bin; no space left on device\n"
		"[2026-11-26 14:30:16] [ERROR] [1/5] DTR 34d8...22a4: Transfer failed: Transfer timed "
		"out\n";
	assert_int_equal(gg_arc_staging_failure(up, out, sizeof out), 1);
	assert_string_equal(out, "staging out of out.bin to root://se:1094//store/quota/out.bin "
				 "failed: [3009] Unable to write /store/quota/out.bin; no space "
				 "left on device");
	const char *down =
		"[x] [INFO] [1/5] DTR 7227...1023: Scheduler received new DTR "
		"7227bf7f-e49b-47cf-ba2c-2a6c0c611023 with source: "
		"root://xc//root://se//store/data/in.bin, destination: file:/s/job/in.bin, assigned\n"
		"[x] [ERROR] [1/5] DTR 7227...1023: Transfer failed: Failed reading from source: "
		"root://xc//root://se//store/data/in.bin : No such file\n"
		"[x] [ERROR] [1/5] DTR 9999...0000: Transfer failed: another DTR, earlier\n";
	/* the last failed DTR is the other one, whose ends are not logged */
	assert_int_equal(gg_arc_staging_failure(down, out, sizeof out), 1);
	assert_string_equal(out, "data staging failed: another DTR, earlier");
	const char *down1 =
		"[x] [INFO] [1/5] DTR 7227...1023: Scheduler received new DTR "
		"7227bf7f-e49b-47cf-ba2c-2a6c0c611023 with source: "
		"root://xc//root://se//store/data/in.bin, destination: file:/s/job/in.bin, assigned\n"
		"[x] [ERROR] [1/5] DTR 7227...1023: Transfer failed: Failed reading from source: "
		"No such file \x1b[31m\n";
	assert_int_equal(gg_arc_staging_failure(down1, out, sizeof out), 1);
	assert_non_null(strstr(out, "staging in of in.bin from root://xc//root://se//store/data/"
				    "in.bin failed: Failed reading from source: No such file"));
	assert_null(strchr(out, '\x1b')); /* the CE's text, printable */
	const char *check =
		"[x] [INFO] [1/6] DTR 6fed...8097: Scheduler received new DTR "
		"6fedb405-7814-4f5c-bf4a-81a870de8097 with source: root://xc//store/none.bin, "
		"destination: file:/s/job/none.bin, assigned\n"
		"[x] [ERROR] [1/326] DTR 6fed...8097: Failed checking source replica "
		"root://xc//store/none.bin: Failed to obtain information about file: Operation not "
		"supported\n"
		"[x] [ERROR] [1/6] DTR 6fed...8097: Permanent failure\n";
	assert_int_equal(gg_arc_staging_failure(check, out, sizeof out), 1);
	assert_string_equal(out, "staging in of none.bin from root://xc//store/none.bin failed: "
				 "Failed checking source replica root://xc//store/none.bin: Failed "
				 "to obtain information about file: Operation not supported");
	assert_int_equal(gg_arc_staging_failure("nothing here\n", out, sizeof out), 0);
	assert_int_equal(gg_arc_staging_failure(NULL, out, sizeof out), 0);
}

static void test_storage_outputs(void **state)
{
	(void)state;
	struct gg_record r = {0};
	struct gg_storage_output *o = NULL;
	size_t n = 0;
	assert_int_equal(gg_storage_outputs(&r, &o, &n, NULL), 0);
	assert_int_equal(n, 0);
	gg_storage_outputs_free(o, n);
	r.storage_outputs = strdup("a.root root://se//store/a.root\nbad\n"
				   "b.txt davs://se/store/b.txt\n");
	assert_int_equal(gg_storage_outputs(&r, &o, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(o[0].name, "a.root");
	assert_string_equal(o[0].url, "root://se//store/a.root");
	assert_string_equal(o[1].name, "b.txt");
	assert_string_equal(o[1].url, "davs://se/store/b.txt");
	gg_storage_outputs_free(o, n);
	gg_record_clear(&r);
}

/* An empty output_base (a site profile's "output_base =") is expanded without
 * reading before it (ASan: a heap under-read of one byte) and gives a base the
 * job's check refuses, naming the setting. */
static void test_empty_output_base(void **state)
{
	(void)state;
	struct gg_site s = {.name = (char *)"tb", .output_base = strdup("")};
	assert_non_null(s.output_base);
	char *base = gg_site_output_base(&s);
	assert_string_equal(base, "/");
	free(base);
	const char *outs[] = {"res.txt"};
	struct gg_job_spec *q = NULL;
	assert_int_equal(gg_job_spec_new(&q, NULL), 0);
	assert_int_equal(gg_job_spec_add_output(q, outs[0], NULL), 0);
	char *dest = gg_job_output_dest(q, &s, 0);
	assert_string_equal(dest, "/res.txt");
	free(dest);
	free(s.output_base);
	gg_job_spec_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_parse),       cmocka_unit_test(test_input_output),
		cmocka_unit_test(test_cache_and_http),  cmocka_unit_test(test_xrsl_storage),
		cmocka_unit_test(test_staging_state),   cmocka_unit_test(test_staging_failure),
		cmocka_unit_test(test_storage_outputs), cmocka_unit_test(test_empty_output_base),
	};
	return cmocka_run_group_tests_name("ce_data", tests, NULL, NULL);
}
