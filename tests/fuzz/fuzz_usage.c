/* What a session's work used as its launcher wrote it on the worker node
 * (gridgpu-usage), read by status and freeze --session: gg_usage_parse, then the
 * JSON and the suggestion made of it. What it accepts is consistent (no GPU figure
 * without GPU samples, a busy fraction of 0-100%, no more memory held than the GPU
 * has), survives its JSON unchanged, and gives a printable one-line suggestion. */
#include <string.h>

#include "fuzz.h"
#include "gridgpu/node.h"

FUZZ_TARGET(usage)
{
	struct gg_usage u, back;
	struct gg_err err = {0};
	if (gg_usage_parse((const char *)data, size, &u, &err) < 0) {
		FUZZ_CHECK(err.msg[0] && u.samples == 0, "failure without a message, or a result");
		return 0;
	}
	FUZZ_CHECK(u.gpu_busy_pct >= 0 && u.gpu_busy_pct <= 100, "busy %lld%%",
		   (long long)u.gpu_busy_pct);
	FUZZ_CHECK(u.gpu_samples <= u.samples, "more GPU samples than samples");
	FUZZ_CHECK(!u.gpu_mem_total_mib || u.gpu_mem_peak_mib <= u.gpu_mem_total_mib,
		   "more GPU memory held than the GPU has");
	json_t *j = gg_usage_json(&u);
	FUZZ_CHECK(j && gg_usage_from_json(j, &back, &err) == 0, "its JSON does not read back");
	FUZZ_CHECK(!memcmp(&u, &back, sizeof u), "its JSON reads back otherwise");
	json_decref(j);
	struct gg_site site = {.name = "fuzz", .nmig_profiles = 2};
	site.mig_profiles[0] = "1g.10gb", site.mig_profiles[1] = "3g.40gb";
	char mig[32], line[256];
	int rc = gg_usage_fit(&u, &site, mig, sizeof mig, line, sizeof line, &err);
	FUZZ_CHECK(rc == 0 || (rc == GG_ENOTFOUND && !u.gpu_samples), "fit: %d", rc);
	for (const char *p = line; *p; p++)
		FUZZ_CHECK(*p >= 0x20 && *p < 0x7f, "byte 0x%02x in the line", (unsigned char)*p);
	return 0;
}
