/* What a session's work used (lib/node/usage.c): the launcher's usage file read
 * strictly (it comes from the node), its JSON both ways, and the smallest GPU or MIG
 * slice of the site that holds the peak with a margin (tests/e2e/t-usage.sh reads
 * what the launcher writes). */
#include "unit.h"

#include "gridgpu/node.h"

static const char good[] = "gridgpu-usage 1\ninterval 30\nsamples 12\nfirst 100\nlast 430\n"
			   "gpu_samples 12\ngpu_readings 12\ngpu_util_sum 84\n"
			   "gpu_util_peak 9\ngpu_mem_peak_mib 3072\ngpu_mem_total_mib 40960\n"
			   "cpu_seconds 17\nrss_peak_kib 81920\n";

static void test_parse(void **state)
{
	(void)state;
	struct gg_usage u;
	struct gg_err err = {0};
	assert_int_equal(gg_usage_parse(good, strlen(good), &u, &err), 0);
	assert_int_equal(u.samples, 12);
	assert_int_equal(u.gpu_busy_pct, 7); /* 84 / 12 readings */
	assert_int_equal(u.gpu_util_peak, 9);
	assert_int_equal(u.gpu_mem_peak_mib, 3072);
	assert_int_equal(u.gpu_mem_total_mib, 40960);
	assert_int_equal(u.cpu_seconds, 17);
	assert_int_equal(u.rss_peak_kib, 81920);
	/* a key of a newer launcher is left; no GPU: no GPU figure */
	static const char newer[] = "gridgpu-usage 1\nsamples 2\nnet_bytes 5\n";
	assert_int_equal(gg_usage_parse(newer, strlen(newer), &u, &err), 0);
	assert_int_equal(u.samples, 2);
	assert_int_equal(u.gpu_samples, 0);
}

static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",
		"gridgpu-usage 2\nsamples 1\n",
		"gridgpu-usage 1\nsamples 1", /* the last line not whole */
		"gridgpu-usage 1\nsamples -1\n",
		"gridgpu-usage 1\nsamples 1234567890123456\n",
		"gridgpu-usage 1\nsamples 1\nsamples 2\n",
		"gridgpu-usage 1\nsamples\n",
		"gridgpu-usage 1\nsamples 1 \n",
		"gridgpu-usage 1\nsam\001les 1\n",
		"gridgpu-usage 1\nsamples 1\ngpu_samples 2\ngpu_readings 2\n",
		"gridgpu-usage 1\nsamples 1\ngpu_samples 1\ngpu_readings 1\ngpu_util_peak 101\n",
		"gridgpu-usage 1\nsamples 1\ngpu_samples 1\ngpu_readings 1\ngpu_util_sum 101\n",
		("gridgpu-usage 1\nsamples 1\ngpu_samples 1\ngpu_readings 1\ngpu_mem_peak_mib 9\n"
		 "gpu_mem_total_mib 8\n"),
		"gridgpu-usage 1\nsamples 1\ngpu_mem_peak_mib 9\n",
		"gridgpu-usage 1\nsamples 1\ngpu_samples 1\n",
		"gridgpu-usage 1\nfirst 9\nlast 8\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gg_usage u;
		struct gg_err err = {0};
		assert_true(gg_usage_parse(bad[i], strlen(bad[i]), &u, &err) == GG_EPROTO);
		if (!strstr(err.msg, "usage file"))
			fail_msg("%zu: %s", i, err.msg);
		assert_int_equal(u.samples, 0);
	}
	char big[5000];
	memset(big, '\n', sizeof big);
	memcpy(big, "gridgpu-usage 1\n", 16);
	struct gg_usage u;
	struct gg_err err = {0};
	assert_int_equal(gg_usage_parse(big, sizeof big, &u, &err), GG_EPROTO);
}

static void test_json(void **state)
{
	(void)state;
	struct gg_usage u, back;
	struct gg_err err = {0};
	assert_int_equal(gg_usage_parse(good, strlen(good), &u, &err), 0);
	json_t *j = gg_usage_json(&u);
	assert_int_equal(json_integer_value(json_object_get(j, "gpu_busy_pct")), 7);
	assert_int_equal(gg_usage_from_json(j, &back, &err), 0);
	assert_memory_equal(&u, &back, sizeof u);
	json_object_set_new(j, "samples", json_string("12"));
	assert_int_equal(gg_usage_from_json(j, &back, &err), GG_EPROTO);
	json_decref(j);
	assert_int_equal(gg_usage_from_json(NULL, &back, &err), GG_EPROTO);
}

static void test_fit(void **state)
{
	(void)state;
	struct gg_usage u;
	struct gg_err err = {0};
	char mig[32], line[256];
	assert_int_equal(gg_usage_parse(good, strlen(good), &u, &err), 0);
	/* the test site: an A100 40GB class GPU, MIG slices of 1g.10gb only */
	struct gg_site site = {.name = "tb", .nmig_profiles = 1};
	site.mig_profiles[0] = "1g.10gb";
	assert_int_equal(gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err), 0);
	assert_string_equal(mig, "1g.10gb");
	assert_string_equal(line, "peak 3.0 GiB, busy 7%: --mig 1g.10gb would do");
	/* the smallest that holds 3 GiB and the margin: 1g.5gb (4750 MiB >= 4096) */
	site.nmig_profiles = 4;
	site.mig_profiles[0] = "3g.20gb", site.mig_profiles[1] = "1g.5gb";
	site.mig_profiles[2] = "2g.10gb", site.mig_profiles[3] = "1g.10gb";
	assert_int_equal(gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err), 0);
	assert_string_equal(mig, "1g.5gb");
	/* 10 GB holds 8 GiB with a 2 GiB margin, not 8.5; a tie: fewer slices */
	u.gpu_mem_peak_mib = 7600; /* + 1900 = 9500: 10 GB's 9500 MiB */
	assert_int_equal(gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err), 0);
	assert_string_equal(mig, "1g.10gb");
	u.gpu_mem_peak_mib = 7700;
	assert_int_equal(gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err), 0);
	assert_string_equal(mig, "3g.20gb");
	/* none holds it: a whole GPU */
	u.gpu_mem_peak_mib = 30000;
	assert_int_equal(gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err), 0);
	assert_string_equal(mig, "");
	assert_non_null(strstr(line, "a whole GPU (no MIG slice of the site holds it"));
	assert_int_equal(gg_usage_fit(&u, NULL, mig, sizeof mig, line, sizeof line, &err), 0);
	assert_non_null(strstr(line, "the site offers no MIG slice"));
	/* no GPU sample: nothing to size from */
	u.gpu_samples = 0;
	assert_int_equal(gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err),
			 GG_ENOTFOUND);
	assert_string_equal(mig, "");
	assert_non_null(strstr(err.msg, "no GPU use was sampled"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_fit),
	};
	return cmocka_run_group_tests_name("usage", tests, NULL, NULL);
}
