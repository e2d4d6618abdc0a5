/* gridgpu inspect and gridgpu verify: what a SIF image holds, and whether its structure
 * is sound. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "resopt.h"
#include "ctx.h"
#include "commands.h"
#include "gridgpu/image.h"

const struct gg_opt cmd_inspect_opts[] = {OPT_END};
const struct gg_opt cmd_verify_opts[] = {OPT_END};

static int keycmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *str_or(const json_t *v, const char *dflt)
{
	const char *s = json_string_value(v);
	return s ? s : dflt;
}

static int one_operand(struct gg_cli *cli, int argc, char **argv, const struct gg_opt *opts,
		       const char **path)
{
	int c;
	while ((c = cli_next_opt(cli, argc, argv, opts)) > 0)
		;
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind != 1)
		return ui_usage(cli, "%s: expected one IMAGE.sif", cli->cmd->name);
	*path = argv[cli->optind];
	struct gg_err err = {0};
	if (cli_local_file(*path, &err) < 0)
		return ui_fail(cli, &err, "%s %s", cli->cmd->name, *path);
	return 0;
}

static void time_str(int64_t t, char *buf, size_t len)
{
	if (t == GG_SIF_GO_ZERO_TIME) {
		snprintf(buf, len, "none (reproducible image)");
		return;
	}
	gg_time_local(t, buf, len);
}

static char *link_str(uint32_t link, char *buf, size_t len)
{
	if (!link)
		snprintf(buf, len, "NONE");
	else if (link & GG_SIF_GROUP_MASK)
		snprintf(buf, len, "%u (G)", link & ~GG_SIF_GROUP_MASK);
	else
		snprintf(buf, len, "%u", link);
	return buf;
}

static char *group_str(uint32_t group, char *buf, size_t len)
{
	uint32_t g = group & ~GG_SIF_GROUP_MASK;
	if (!g)
		snprintf(buf, len, "NONE");
	else
		snprintf(buf, len, "%u", g);
	return buf;
}

static char *type_str(const struct gg_sif_descr *d, char *buf, size_t len)
{
	int32_t fs, pt;
	char arch[3];
	if (gg_sif_partition_info(d, &fs, &pt, arch) == 0)
		snprintf(buf, len, "FS (%s/%s/%s)", gg_sif_fstype_name(fs),
			 gg_sif_parttype_name(pt), gg_image_arch_name(arch));
	else
		snprintf(buf, len, "%s", gg_sif_type_name(d->type));
	return buf;
}

/* What inspect shows of an image: the SIF, its squashfs, labels and provenance. */
struct inspected {
	const char *path;
	struct gg_sif *s;
	struct gg_sif_verify_report rep;
	int have_sqfs;
	json_t *labels, *prov;
	char uuid[37], created[64];
	const char *arch;
};

/* Takes the labels and the provenance. */
static void print_json(struct inspected *in)
{
	json_t *o = gg_sif_json(in->s, in->have_sqfs ? &in->rep : NULL);
	if (o) {
		gg_json_set_text(o, "path", in->path);
		gg_json_set(o, "labels", in->labels ? in->labels : json_object());
		gg_json_set(o, "provenance", in->prov ? in->prov : json_null());
		in->labels = in->prov = NULL;
	}
	ui_json_doc("inspect", o);
}

static void print_objects(const struct inspected *in)
{
	const struct gg_sif *s = in->s;
	char sz[32];
	gg_size_format(s->file_size, sz, sizeof sz);
	ui_out("%s: SIF 01, %s, %s\n", in->path, in->arch, sz);
	ui_out("  id:       %s\n", in->uuid);
	ui_out("  created:  %s\n", in->created);
	if (in->have_sqfs)
		ui_out("  squashfs: %s, %u inodes, %u KiB blocks\n",
		       gg_image_comp_name((enum gg_image_comp)in->rep.sqfs_comp),
		       in->rep.sqfs_inodes, in->rep.sqfs_block_size / 1024);
	ui_out("\n%-4s %-6s %-7s %-26s %s\n", "ID", "GROUP", "LINK", "SIF POSITION (start-end)",
	       "TYPE");
	for (size_t i = 0; i < s->ndescr; i++) {
		const struct gg_sif_descr *d = &s->descr[i];
		if (!d->used)
			continue;
		char g[16], l[16], pos[48], t[96];
		snprintf(pos, sizeof pos, "%lld-%lld", (long long)d->offset,
			 (long long)(d->offset + d->size));
		type_str(d, t, sizeof t);
		ui_out("%-4u %-6s %-7s %-26s %s%s%.*s\n", d->id, group_str(d->group, g, sizeof g),
		       link_str(d->link, l, sizeof l), pos, t, d->name[0] ? "  " : "",
		       (int)strnlen(d->name, sizeof d->name), d->name);
	}
}

static void print_labels(json_t *labels)
{
	if (!labels || !json_object_size(labels))
		return;
	ui_out("\nLabels:\n");
	size_t n = json_object_size(labels), i = 0;
	const char **keys = malloc(n * sizeof *keys);
	const char *k;
	json_t *v;
	if (!keys)
		return;
	json_object_foreach (labels, k, v)
		keys[i++] = k;
	qsort(keys, i, sizeof *keys, keycmp);
	for (size_t j = 0; j < i; j++)
		ui_out("  %s: %s\n", keys[j], str_or(json_object_get(labels, keys[j]), ""));
	free(keys);
}

static void print_gpus(json_t *gpus)
{
	json_t *devs = json_object_get(gpus, "gpus");
	if (json_array_size(devs)) {
		/* what `gridgpu gpus --json` gave on the node it was frozen on */
		ui_out("  gpus:       %zu, driver %s\n", json_array_size(devs),
		       str_or(json_object_get(gpus, "driver_version"), "?"));
		size_t i;
		json_t *d;
		json_array_foreach (devs, i, d)
			ui_out("              %s, compute capability %s, %lld MiB, %s\n",
			       str_or(json_object_get(d, "name"), "?"),
			       str_or(json_object_get(d, "compute_capability"), "?"),
			       (long long)json_integer_value(json_object_get(d, "memory_total_mb")),
			       str_or(json_object_get(d, "uuid"), "?"));
	} else if (gpus && !json_is_null(gpus)) {
		char *g = json_dumps(gpus, JSON_COMPACT | JSON_SORT_KEYS);
		ui_out("  gpus:       %s\n", g ? g : "?");
		free(g);
	} else {
		ui_out("  gpus:       none recorded\n");
	}
}

static void print_provenance(json_t *prov)
{
	if (!prov)
		return;
	json_t *src = json_object_get(prov, "source");
	ui_out("\nProvenance:\n");
	ui_out("  source:     %s %s\n", str_or(json_object_get(src, "kind"), "?"),
	       str_or(json_object_get(src, "path"), "?"));
	if (json_string_value(json_object_get(src, "digest")))
		ui_out("  digest:     %s\n", json_string_value(json_object_get(src, "digest")));
	if (json_string_value(json_object_get(src, "ref")))
		ui_out("  reference:  %s\n", json_string_value(json_object_get(src, "ref")));
	ui_out("  built:      %s%s\n", str_or(json_object_get(prov, "build_time"), "?"),
	       json_is_true(json_object_get(prov, "reproducible")) ? " (reproducible)" : "");
	ui_out("  gridgpu:    %s\n", str_or(json_object_get(prov, "gridgpu_version"), "?"));
	print_gpus(json_object_get(prov, "gpus"));
	cli_usage_provenance(json_object_get(prov, "usage"));
}

int cmd_inspect(struct gg_cli *cli, int argc, char **argv)
{
	struct inspected in = {0};
	int rc = one_operand(cli, argc, argv, cmd_inspect_opts, &in.path);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	struct gg_err err = {0};
	if (gg_sif_open(in.path, &in.s, &err) < 0)
		return ui_fail(cli, &err, "inspect %s", in.path);
	struct gg_err verr = {0};
	in.have_sqfs = gg_sif_verify(in.path, &in.rep, &verr) == 0 && in.rep.sqfs_inodes;
	in.prov = gg_sif_read_json(in.s, "gridgpu-provenance.json");
	in.labels = gg_sif_labels(in.s);
	gg_sif_id_str(in.s->hdr.id, in.uuid, sizeof in.uuid);
	time_str(in.s->hdr.created, in.created, sizeof in.created);
	in.arch = gg_image_arch_name(in.s->hdr.arch);
	if (cli->json) {
		print_json(&in);
	} else {
		print_objects(&in);
		print_labels(in.labels);
		print_provenance(in.prov);
	}
	json_decref(in.labels);
	json_decref(in.prov);
	gg_sif_close(in.s);
	return EXIT_OK;
}

int cmd_verify(struct gg_cli *cli, int argc, char **argv)
{
	const char *path;
	int rc = one_operand(cli, argc, argv, cmd_verify_opts, &path);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	struct gg_err err = {0};
	struct gg_sif_verify_report rep;
	if (gg_sif_verify(path, &rep, &err) < 0)
		return ui_fail(cli, &err, "verify %s", path);
	const char *first = NULL;
	for (size_t i = 0; i < rep.nchecks; i++)
		if (!rep.checks[i].ok && !first)
			first = rep.checks[i].detail;
	if (cli->json) {
		json_t *o = json_object(), *a = json_array();
		gg_json_set_text(o, "path", path);
		gg_json_set(o, "ok", json_boolean(rep.ok));
		for (size_t i = 0; i < rep.nchecks; i++) {
			json_t *c = json_object();
			gg_json_set_text(c, "check", rep.checks[i].what);
			gg_json_set(c, "ok", json_boolean(rep.checks[i].ok));
			gg_json_set_text(c, "detail", rep.checks[i].detail);
			gg_json_append(a, c);
		}
		gg_json_set(o, "checks", a);
		ui_json_doc("verify", o);
	} else if (!cli->quiet) {
		for (size_t i = 0; i < rep.nchecks; i++)
			ui_out("%-4s %-20s %s\n", rep.checks[i].ok ? "ok" : "FAIL",
			       rep.checks[i].what, rep.checks[i].detail);
	}
	if (!rep.ok) {
		gg_err_set(&err, GG_EFAIL, "%s", first ? first : "structure is not sound");
		if (cli->json) {
			ui_err("gridgpu: verify %s: %s\n", path, err.msg);
			return EXIT_FAIL;
		}
		return ui_fail(cli, &err, "verify %s", path);
	}
	if (!cli->json)
		ui_info(cli, "%s: the structure is sound", path);
	return EXIT_OK;
}
