/* What a session's work used: the launcher's usage file (its samples' peaks and sums,
 * outside input), its JSON, and the smallest GPU or MIG slice that would have done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridgpu/image.h"
#include "gridgpu/node.h"
#include "core/core.h"

#define USAGE_MAX     4096 /* the file's bytes at most */
#define USAGE_NUM_MAX 999999999999999LL

/* The file's keys, in the launcher's order; NULL: read, not kept (a sum). */
enum {
	K_INTERVAL,
	K_SAMPLES,
	K_FIRST,
	K_LAST,
	K_GSAMPLES,
	K_READINGS,
	K_USUM,
	K_UPEAK,
	K_MEM,
	K_TOTAL,
	K_CPU,
	K_RSS,
	K_N
};
static const char *const usage_keys[K_N] = {
	"interval",         "samples",           "first",        "last",
	"gpu_samples",      "gpu_readings",      "gpu_util_sum", "gpu_util_peak",
	"gpu_mem_peak_mib", "gpu_mem_total_mib", "cpu_seconds",  "rss_peak_kib",
};

/* One "KEY NUMBER" line into v (its key's slot); a key of a newer launcher is left. */
static int usage_line(const char *p, size_t n, int64_t *v, int *seen, struct gg_err *err)
{
	const char *sp = memchr(p, ' ', n);
	if (!sp || sp == p || sp + 1 == p + n)
		return gg_err_set(err, GG_EPROTO, "a line is not 'KEY NUMBER'");
	size_t kl = (size_t)(sp - p), dl = n - kl - 1;
	if (dl > 15 || strspn(sp + 1, "0123456789") < dl)
		return gg_err_set(err, GG_EPROTO, "'%.*s': not a number of up to 15 digits",
				  (int)(kl < 40 ? kl : 40), p);
	for (int k = 0; k < K_N; k++) {
		if (strlen(usage_keys[k]) != kl || memcmp(usage_keys[k], p, kl))
			continue;
		if (seen[k]++)
			return gg_err_set(err, GG_EPROTO, "%s twice", usage_keys[k]);
		v[k] = strtoll(sp + 1, NULL, 10);
		return 0;
	}
	for (size_t i = 0; i < kl; i++) /* a newer key: a name, nothing else */
		if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_' || (p[i] >= '0' && p[i] <= '9')))
			return gg_err_set(err, GG_EPROTO, "a key is not a name");
	return 0;
}

/* The numbers that cannot be together. */
static int usage_sane(const int64_t *v, struct gg_err *err)
{
	const char *bad = v[K_GSAMPLES] > v[K_SAMPLES]          ? "more GPU samples than samples"
			  : v[K_GSAMPLES] && !v[K_READINGS]     ? "GPU samples without readings"
			  : v[K_UPEAK] > 100                    ? "a utilisation over 100%"
			  : v[K_USUM] > 100 * v[K_READINGS]     ? "a utilisation sum over 100% each"
			  : v[K_TOTAL] && v[K_MEM] > v[K_TOTAL] ? "more GPU memory held than it has"
			  : v[K_FIRST] > v[K_LAST]              ? "the first sample after the last"
			  : !v[K_GSAMPLES] && (v[K_MEM] || v[K_USUM])
				  ? "GPU figures without GPU samples"
				  : NULL;
	return bad ? gg_err_set(err, GG_EPROTO, "%s", bad) : 0;
}

int gg_usage_parse(const char *text, size_t len, struct gg_usage *u, struct gg_err *err)
{
	static const char head[] = "gridgpu-usage 1\n";
	int64_t v[K_N] = {0};
	int seen[K_N] = {0}, rc = 0;
	memset(u, 0, sizeof *u);
	if (len > USAGE_MAX)
		return gg_err_set(err, GG_EPROTO, "the usage file is larger than %d bytes",
				  USAGE_MAX);
	if (len < sizeof head - 1 || memcmp(text, head, sizeof head - 1))
		return gg_err_set(err, GG_EPROTO, "not a usage file of version 1");
	for (size_t i = sizeof head - 1; rc == 0 && i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		if (!nl) {
			rc = gg_err_set(err, GG_EPROTO, "the last line is not whole");
			break;
		}
		rc = usage_line(text + i, (size_t)(nl - text - i), v, seen, err);
		i = (size_t)(nl - text) + 1;
	}
	if (rc == 0)
		rc = usage_sane(v, err);
	if (rc < 0)
		return gg_err_prefix(err, "the usage file");
	*u = (struct gg_usage){.interval = v[K_INTERVAL],
			       .samples = v[K_SAMPLES],
			       .first = v[K_FIRST],
			       .last = v[K_LAST],
			       .gpu_samples = v[K_GSAMPLES],
			       .gpu_busy_pct = v[K_READINGS] ? v[K_USUM] / v[K_READINGS] : 0,
			       .gpu_util_peak = v[K_UPEAK],
			       .gpu_mem_peak_mib = v[K_MEM],
			       .gpu_mem_total_mib = v[K_TOTAL],
			       .cpu_seconds = v[K_CPU],
			       .rss_peak_kib = v[K_RSS]};
	return 0;
}

/* The members of the JSON, in order, with their places in struct gg_usage. */
/* clang-format off */
#define USAGE_MEMBERS(X) \
	X(interval) X(samples) X(first) X(last) X(gpu_samples) X(gpu_busy_pct) \
	X(gpu_util_peak) X(gpu_mem_peak_mib) X(gpu_mem_total_mib) X(cpu_seconds) \
	X(rss_peak_kib)
/* clang-format on */

json_t *gg_usage_json(const struct gg_usage *u)
{
	json_t *j = json_object();
#define SET(m) gg_json_set(j, #m, json_integer(u->m));
	if (j) {
		USAGE_MEMBERS(SET)
	}
#undef SET
	return j;
}

int gg_usage_from_json(json_t *j, struct gg_usage *u, struct gg_err *err)
{
	memset(u, 0, sizeof *u);
	if (!json_is_object(j))
		return gg_err_set(err, GG_EPROTO, "the usage is not an object");
#define GET(m)                                                                                   \
	{                                                                                        \
		json_t *x = json_object_get(j, #m);                                              \
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||                          \
		    json_integer_value(x) > USAGE_NUM_MAX)                                       \
			return gg_err_set(err, GG_EPROTO, "the usage's " #m " is not a number"); \
		u->m = json_integer_value(x);                                                    \
	}
	USAGE_MEMBERS(GET)
#undef GET
	return 0;
}

/* A MIG profile's memory in MiB as its name says it ("1g.10gb": 10 GB), a little
 * under what the GPU gives it (1g.10gb: 9856 MiB); 0 for a name that is none. */
static int64_t mig_mib(const char *p, int *slices)
{
	unsigned c = 0, g = 0, m = 0;
	char rest[16] = "";
	if (sscanf(p, "%uc.%ug.%ugb%15s", &c, &g, &m, rest) < 3 &&
	    (c = 0, sscanf(p, "%ug.%ugb%15s", &g, &m, rest) < 2))
		return 0;
	*slices = (int)g;
	return (int64_t)m * 950;
}

/* The smallest of the site's profiles that holds need MiB (fewer slices on a tie). */
static const char *smallest_mig(const struct gg_site *site, int64_t need)
{
	const char *best = NULL;
	int64_t bm = 0;
	int bs = 0;
	for (int i = 0; site && i < site->nmig_profiles; i++) {
		int s = 0;
		int64_t m = mig_mib(site->mig_profiles[i], &s);
		if (m >= need && (!best || m < bm || (m == bm && s < bs)))
			best = site->mig_profiles[i], bm = m, bs = s;
	}
	return best;
}

int gg_usage_fit(const struct gg_usage *u, const struct gg_site *site, char *mig, size_t miglen,
		 char *line, size_t linelen, struct gg_err *err)
{
	char peak[32];
	if (miglen)
		mig[0] = '\0';
	if (!u->gpu_samples) {
		snprintf(line, linelen,
			 "no GPU use was sampled (no nvidia-smi on the node, a MIG "
			 "device, or the session too short)");
		return gg_err_set(err, GG_ENOTFOUND, "%s", line);
	}
	int64_t m = u->gpu_mem_peak_mib, need = m + (m / 4 > 1024 ? m / 4 : 1024);
	gg_size_format((uint64_t)m << 20, peak, sizeof peak);
	const char *p = smallest_mig(site, need);
	if (p) {
		snprintf(mig, miglen, "%s", p);
		snprintf(line, linelen, "peak %s, busy %lld%%: --mig %s would do", peak,
			 (long long)u->gpu_busy_pct, p);
	} else {
		snprintf(line, linelen, "peak %s, busy %lld%%: a whole GPU (%s)", peak,
			 (long long)u->gpu_busy_pct,
			 site && site->nmig_profiles
				 ? "no MIG slice of the site holds it with a margin"
				 : "the site offers no MIG slice");
	}
	return 0;
}

int gg_image_usage(const char *path, struct gg_usage *u, struct gg_err *err)
{
	struct gg_sif *sif;
	char *text = NULL;
	size_t len;
	memset(u, 0, sizeof *u);
	if (gg_sif_open(path, &sif, err) < 0)
		return err->code;
	const struct gg_sif_descr *d =
		gg_sif_find(sif, GG_SIF_GENERIC_JSON, "gridgpu-provenance.json");
	int rc = d ? gg_sif_read_object(sif, d, 1 << 20, &text, &len, err) : 0;
	gg_sif_close(sif);
	if (rc < 0)
		return rc;
	json_t *j = text ? json_loadb(text, len, 0, NULL) : NULL, *us = json_object_get(j, "usage");
	free(text);
	rc = us ? gg_usage_from_json(us, u, err)
		: gg_err_set(err, GG_ENOTFOUND,
			     "'%s' records no usage (freeze --session of a session records it)",
			     path);
	json_decref(j);
	return rc;
}
