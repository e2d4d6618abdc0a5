/* What a session's work used, and the GPU it suggests (status, request and submit
 * --right-size): the library's figures, said in one or two lines. */
#include <string.h>

#include "cli.h"
#include "ctx.h"
#include "resopt.h"
#include "gridgpu/node.h"

/* The site the suggestion is sized for: name's profile, else --site's or the default. */
static const struct gg_site *fit_site(struct gg_cli *cli, const char *name)
{
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return NULL;
	if (!name)
		name = cli->site ? cli->site : cfg->default_site;
	return name ? gg_config_site(cfg, name) : NULL;
}

int cli_right_size(struct gg_cli *cli, const char *image, struct gg_jd_resources *res, int show)
{
	struct gg_usage u;
	struct gg_err err = {0};
	char line[256];
	if (!cli->right_size && !show)
		return 0;
	int rc = image ? gg_image_usage(image, &u, &err)
		       : gg_err_set(&err, GG_ENOTFOUND, "no image to read the work's use from");
	if (rc == 0)
		rc = gg_usage_fit(&u, fit_site(cli, NULL), cli->right_mig, sizeof cli->right_mig,
				  line, sizeof line, &err);
	if (rc < 0 && !cli->right_size)
		return 0;              /* nothing to suggest from: nothing said */
	if (rc < 0 && rc != GG_ENOMEM) /* not a SIF of a session: no record of its use */
		err.code = GG_ENOTFOUND;
	if (rc < 0)
		return ui_fail(cli, &err,
			       "--right-size (it takes the GPU use freeze --session records in the "
			       "image: give --gpus or --mig instead)");
	ui_info(cli, "%s%s", line, cli->right_size ? " (--right-size: taken)" : "");
	if (cli->right_size) {
		res->mig = cli->right_mig[0] ? cli->right_mig : NULL;
		res->gpus = cli->right_mig[0] ? 0 : 1;
	}
	return 0;
}

/* "GPU use:   peak 3.0 GiB of 40.0 GiB, busy 7% (peak 9%)" and the rest. */
static void usage_text(const struct gg_usage *u, const char *line)
{
	char a[32], b[32], d[32];
	ui_out("samples:     %lld, every %s\n", (long long)u->samples,
	       gg_duration_format(u->interval, d, sizeof d));
	if (u->gpu_samples)
		ui_out("GPU use:     peak %s of %s, busy %lld%% (at most %lld%%)\n",
		       gg_size_format((uint64_t)u->gpu_mem_peak_mib << 20, a, sizeof a),
		       gg_size_format((uint64_t)u->gpu_mem_total_mib << 20, b, sizeof b),
		       (long long)u->gpu_busy_pct, (long long)u->gpu_util_peak);
	ui_out("CPU use:     %s of CPU time, memory peak %s\n",
	       gg_duration_format(u->cpu_seconds, d, sizeof d),
	       gg_size_format((uint64_t)u->rss_peak_kib << 10, a, sizeof a));
	ui_out("right size:  %s\n", line);
}

void cli_usage_provenance(json_t *usage)
{
	struct gg_usage u;
	char a[32], b[32], c[32], d[32];
	if (!usage || gg_usage_from_json(usage, &u, NULL) < 0)
		return;
	ui_out("  used:       GPU peak %s of %s, busy %lld%%; CPU %s, memory peak %s\n",
	       gg_size_format((uint64_t)u.gpu_mem_peak_mib << 20, a, sizeof a),
	       gg_size_format((uint64_t)u.gpu_mem_total_mib << 20, b, sizeof b),
	       (long long)u.gpu_busy_pct, gg_duration_format(u.cpu_seconds, d, sizeof d),
	       gg_size_format((uint64_t)u.rss_peak_kib << 10, c, sizeof c));
}

void cli_usage_status(struct gg_cli *cli, struct gg_engine *e, const struct gg_record *r, json_t *j)
{
	struct gg_usage u;
	struct gg_err err = {0};
	char mig[32], line[256];
	if (!e || r->kind != GG_REC_SESSION || gg_engine_usage(e, r, &u, &err) < 0)
		return; /* nothing sampled (yet), or the CE not asked */
	int fit =
		gg_usage_fit(&u, fit_site(cli, r->site), mig, sizeof mig, line, sizeof line, &err);
	if (!j) {
		usage_text(&u, line);
		return;
	}
	gg_json_set(j, "usage", gg_usage_json(&u));
	if (fit == 0)
		gg_json_set_text(j, "suggestion", line);
	if (fit == 0 && mig[0])
		gg_json_set_text(j, "suggested_mig", mig);
}
