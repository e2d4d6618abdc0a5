/* gridgpu gpus: the NVIDIA GPUs and MIG devices of this machine as this process
 * sees them, as a table, JSON, or HTCondor machine attributes. No GPU (no
 * driver, no NVML, no device) is an answer, exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gridgpu/gpu.h"

enum { O_CLASSAD = 256, O_NOT_NESTED };

const struct gg_opt cmd_gpus_opts[] = {
	{"classad", 0, OPT_NONE, NULL,
	 "HTCondor machine attributes (DetectedGPUs, Common=[...], per-GPU ads)", O_CLASSAD},
	{"not-nested", 0, OPT_NONE, NULL,
	 "with --classad: the prefixed form (CUDACapability, CUDADeviceName, ...)", O_NOT_NESTED},
	OPT_END,
};

#define NCOL 9
struct row {
	char c[NCOL][GG_GPU_STR + 32];
};

static void mem_cell(char *b, size_t n, int have, uint64_t v)
{
	if (have) /* MiB, as nvidia-smi and GlobalMemoryMb count */
		snprintf(b, n, "%llu MiB", (unsigned long long)(v >> 20));
	else
		snprintf(b, n, "?");
}

static void cc_cell(char *b, size_t n, int maj, int min)
{
	if (maj >= 0 && min >= 0)
		snprintf(b, n, "%d.%d", maj, min);
	else
		snprintf(b, n, "?");
}

static const char *onoff(int v)
{
	return v == GG_GPU_ON ? "on" : v == GG_GPU_OFF ? "off" : "-";
}

static void dev_row(struct row *w, const struct gg_gpu_dev *d)
{
	snprintf(w->c[0], sizeof w->c[0], "%u", d->index);
	snprintf(w->c[1], sizeof w->c[1], "%s", d->name[0] ? d->name : "?");
	cc_cell(w->c[2], sizeof w->c[2], d->cc_major, d->cc_minor);
	mem_cell(w->c[3], sizeof w->c[3], d->have_mem, d->mem_total);
	mem_cell(w->c[4], sizeof w->c[4], d->have_mem, d->mem_free);
	snprintf(w->c[5], sizeof w->c[5], "%s", onoff(d->ecc));
	if (d->mig != GG_GPU_UNKNOWN && d->mig_pending != GG_GPU_UNKNOWN &&
	    d->mig_pending != d->mig)
		snprintf(w->c[6], sizeof w->c[6], "%s>%s", onoff(d->mig), onoff(d->mig_pending));
	else
		snprintf(w->c[6], sizeof w->c[6], "%s", onoff(d->mig));
	snprintf(w->c[7], sizeof w->c[7], "%s",
		 d->mig == GG_GPU_ON ? "-"
		 : d->visible        ? "yes"
				     : "no");
	snprintf(w->c[8], sizeof w->c[8], "%s", d->uuid[0] ? d->uuid : "?");
}

static void mig_row(struct row *w, const struct gg_gpu_dev *d, const struct gg_gpu_mig *m)
{
	snprintf(w->c[0], sizeof w->c[0], "%u/%u", d->index, m->index);
	if (m->gi_id >= 0)
		snprintf(w->c[1], sizeof w->c[1], "  MIG %s (gi %d, ci %d)",
			 m->profile[0] ? m->profile : "?", m->gi_id, m->ci_id);
	else
		snprintf(w->c[1], sizeof w->c[1], "  MIG %s", m->profile[0] ? m->profile : m->name);
	cc_cell(w->c[2], sizeof w->c[2], m->cc_major, m->cc_minor);
	mem_cell(w->c[3], sizeof w->c[3], m->have_mem, m->mem_total);
	mem_cell(w->c[4], sizeof w->c[4], m->have_mem, m->mem_free);
	snprintf(w->c[5], sizeof w->c[5], "%s", onoff(m->ecc));
	snprintf(w->c[6], sizeof w->c[6], "-");
	snprintf(w->c[7], sizeof w->c[7], "%s", m->visible ? "yes" : "no");
	snprintf(w->c[8], sizeof w->c[8], "%s", m->uuid[0] ? m->uuid : "?");
}

/* The rows, the heading first; *nrows of them (NULL: out of memory). */
static struct row *table_rows(const struct gg_gpu_info *info, size_t *nrows)
{
	*nrows = 1;
	for (size_t i = 0; i < info->ndevs; i++)
		*nrows += 1 + info->devs[i].nmigs;
	struct row *rows = calloc(*nrows, sizeof *rows);
	if (!rows)
		return NULL;
	const char *head[NCOL] = {"GPU", "NAME", "CC",  "MEMORY", "FREE",
				  "ECC", "MIG",  "USE", "UUID"};
	for (int k = 0; k < NCOL; k++)
		snprintf(rows[0].c[k], sizeof rows[0].c[k], "%s", head[k]);
	size_t r = 1;
	for (size_t i = 0; i < info->ndevs; i++) {
		const struct gg_gpu_dev *d = &info->devs[i];
		dev_row(&rows[r++], d);
		for (size_t k = 0; k < d->nmigs; k++)
			mig_row(&rows[r++], d, &d->migs[k]);
	}
	return rows;
}

static void print_rows(const struct row *rows, size_t nrows)
{
	int width[NCOL] = {0};
	for (size_t i = 0; i < nrows; i++)
		for (int k = 0; k < NCOL; k++) {
			int l = (int)strlen(rows[i].c[k]);
			width[k] = l > width[k] ? l : width[k];
		}
	int color = ui_color();
	for (size_t i = 0; i < nrows; i++) {
		int dim = color && i > 0 && !strcmp(rows[i].c[7], "no");
		if (dim)
			fputs("\033[2m", stdout);
		for (int k = 0; k < NCOL - 1; k++)
			ui_out("%-*s  ", width[k], rows[i].c[k]);
		ui_out("%s", rows[i].c[NCOL - 1]);
		if (dim)
			fputs("\033[0m", stdout);
		putchar('\n');
	}
}

static void print_table(struct gg_cli *cli, const struct gg_gpu_info *info)
{
	size_t nrows;
	struct row *rows = table_rows(info, &nrows);
	if (!rows)
		return;
	char cv[16];
	gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv);
	if (!cli->quiet)
		ui_out("NVIDIA driver %s, CUDA %s (%s)\n", info->driver[0] ? info->driver : "?",
		       cv[0] ? cv : "?", info->library ? info->library : GG_GPU_NVML_LIB);
	print_rows(rows, nrows);
	free(rows);
	if (!cli->quiet) {
		ui_out("%zu device%s usable by this process", info->nvisible,
		       info->nvisible == 1 ? "" : "s");
		if (info->cvd)
			ui_out(" (CUDA_VISIBLE_DEVICES=%s)", info->cvd);
		ui_out("\n");
	}
}

struct gpus_opts {
	int classad, not_nested;
	char rt[64]; /* the CUDA runtime version, when this environment says */
	int have_rt;
};

static int parse_opts(struct gg_cli *cli, int argc, char **argv, struct gpus_opts *o)
{
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_gpus_opts)) > 0) {
		if (c == O_CLASSAD)
			o->classad = 1;
		else if (c == O_NOT_NESTED)
			o->not_nested = 1;
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind)
		return ui_usage(cli, "gpus takes no arguments");
	if (o->not_nested && !o->classad)
		return ui_usage(cli, "--not-nested goes with --classad");
	if (o->classad && cli->json)
		return ui_usage(cli, "--classad and --json are two different outputs: choose one");
	return 0;
}

/* No NVML here: say why, in the output asked for. */
static void print_none(struct gg_cli *cli, const struct gpus_opts *o, const char *why)
{
	if (cli->json) {
		json_t *j = gg_json_object("gpus", json_array(), "visible", json_integer(0),
					   "reason", gg_json_text(why), "nvml", json_null(),
					   "driver_version", json_null(), NULL);
		if (j && o->have_rt)
			gg_json_set_text(j, "cuda_runtime_version", o->rt);
		ui_json_doc("gpus", j);
	} else if (o->classad) {
		ui_out("DetectedGPUs=0\n");
	} else {
		ui_out("no NVIDIA GPU visible: %s\n", why);
	}
}

/* What NVML could not say of one device or MIG slice. */
static void warn_devices(struct gg_cli *cli, const struct gpus_opts *o,
			 const struct gg_gpu_info *info)
{
	for (size_t i = 0; i < info->ndevs; i++) {
		const struct gg_gpu_dev *d = &info->devs[i];
		if (d->error)
			ui_warn(cli, "GPU %u: %s", d->index, d->error);
		for (size_t k = 0; k < d->nmigs; k++)
			if (d->migs[k].error)
				ui_warn(cli, "GPU %u MIG %u: %s", d->index, d->migs[k].index,
					d->migs[k].error);
	}
	if (info->cvd_note && !o->classad && !cli->json)
		ui_warn(cli, "%s", info->cvd_note);
}

/* The devices, in the output asked for. */
static int print_info(struct gg_cli *cli, const struct gpus_opts *o, const struct gg_gpu_info *info)
{
	if (cli->json) {
		json_t *j = gg_gpu_info_json(info);
		if (j && o->have_rt)
			gg_json_set_text(j, "cuda_runtime_version", o->rt);
		if (j && info->ndevs == 0)
			gg_json_set_text(j, "reason", "NVML reports no device");
		ui_json_doc("gpus", j);
	} else if (o->classad) {
		char *ad = gg_gpu_classad(info,
					  o->not_nested ? GG_CLASSAD_NOT_NESTED : GG_CLASSAD_NESTED,
					  o->have_rt ? o->rt : NULL);
		if (!ad) {
			struct gg_err err = {0};
			gg_err_set(&err, GG_ENOMEM, "out of memory");
			return ui_fail(cli, &err, "gpus");
		}
		fputs(ad, stdout);
		free(ad);
	} else if (info->ndevs == 0) {
		ui_out("no NVIDIA GPU visible: NVML (%s, driver %s) reports no device\n",
		       info->library ? info->library : GG_GPU_NVML_LIB,
		       info->driver[0] ? info->driver : "?");
	} else {
		print_table(cli, info);
		if (info->missing && cli->verbose)
			ui_info(cli, "NVML lacks: %s", info->missing);
	}
	return EXIT_OK;
}

int cmd_gpus(struct gg_cli *cli, int argc, char **argv)
{
	struct gpus_opts o = {0};
	int rc = parse_opts(cli, argc, argv, &o);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	struct gg_err err = {0};
	struct gg_gpu *g = NULL;
	struct gg_gpu_info info;
	memset(&info, 0, sizeof info);
	if ((rc = gg_gpu_open(NULL, &g, &err)) == 0) {
		rc = gg_gpu_query(g, &info, &err);
		gg_gpu_close(g);
	}
	if (rc < 0 && rc != GG_ENOTFOUND)
		return ui_fail(cli, &err, "reading the GPUs");
	const char *rtsrc = NULL;
	struct gg_err e2 = {0};
	o.have_rt = gg_gpu_cuda_runtime(o.rt, sizeof o.rt, &rtsrc, &e2) == 0;
	if (rc == GG_ENOTFOUND) {
		print_none(cli, &o, err.msg);
		return EXIT_OK;
	}
	warn_devices(cli, &o, &info);
	rc = print_info(cli, &o, &info);
	gg_gpu_info_clear(&info);
	return rc;
}
