/* freeze's output: its progress bar on stderr, its warnings, its report. */
#include "freeze-ui.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "interrupt.h"

void freeze_bar_clear(struct freeze_bar *c)
{
	if (c->drawn) {
		fputs("\r\033[K", stderr);
		c->drawn = 0;
	}
}

void freeze_bar_warn(void *ud, const char *msg)
{
	struct freeze_bar *c = ud;
	freeze_bar_clear(c);
	ui_warn(c->cli, "%s", msg);
}

double freeze_bar_elapsed(const struct freeze_bar *c)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - c->start.tv_sec) +
	       (double)(now.tv_nsec - c->start.tv_nsec) / 1e9;
}

static void human(uint64_t b, char *buf, size_t len)
{
	gg_size_format(b, buf, len);
}

/* "147/344 MiB": both in the unit of the total. */
static void pair(uint64_t done, uint64_t total, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	double div = 1;
	while (u < 4 && (double)total / div >= 1024) {
		div *= 1024;
		u++;
	}
	snprintf(buf, len, "%.*f/%.*f %s", u && (double)total / div < 10 ? 1 : 0,
		 (double)done / div, u && (double)total / div < 10 ? 1 : 0, (double)total / div,
		 unit[u]);
}

void freeze_bar_progress(void *ud, const struct gg_image_progress *p)
{
	struct freeze_bar *c = ud;
	if (!c->bar)
		return;
	if (p->phase == GG_IMAGE_PHASE_DONE) {
		freeze_bar_clear(c);
		return;
	}
	double t = freeze_bar_elapsed(c);
	char done[32], total[32], rate[32], line[256];
	human(p->bytes_done, done, sizeof done);
	human(t > 0.2 ? (uint64_t)((double)p->bytes_done / t) : 0, rate, sizeof rate);
	int n;
	if (p->phase == GG_IMAGE_PHASE_SCAN) {
		human(p->bytes_total, total, sizeof total);
		n = snprintf(line, sizeof line, "scanning  %llu files, %s",
			     (unsigned long long)p->files_total, total);
	} else if (p->phase == GG_IMAGE_PHASE_META) {
		n = snprintf(line, sizeof line, "writing inodes, directories and tables");
	} else if (p->bytes_total) {
		char bytes[48];
		pair(p->bytes_done, p->bytes_total, bytes, sizeof bytes);
		double f = (double)p->bytes_done / (double)p->bytes_total;
		if (f > 1)
			f = 1;
		char eta[32] = "--:--";
		if (f > 0.01 && t > 1) {
			long s = (long)(t / f - t);
			snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
		}
		int width = 16;
		char bar[32];
		int fill = (int)(f * width);
		for (int i = 0; i < width; i++)
			bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
		bar[width] = '\0';
		if (p->files_total)
			n = snprintf(line, sizeof line,
				     "[%s] %3d%%  %llu/%llu files  %s  %s/s  ETA %s", bar,
				     (int)(f * 100), (unsigned long long)p->files_done,
				     (unsigned long long)p->files_total, bytes, rate, eta);
		else
			n = snprintf(line, sizeof line, "[%s] %3d%%  %llu files  %s  %s/s  ETA %s",
				     bar, (int)(f * 100), (unsigned long long)p->files_done, bytes,
				     rate, eta);
	} else {
		n = snprintf(line, sizeof line, "%llu files  %s read  %s/s",
			     (unsigned long long)p->files_done, done, rate);
	}
	if (n > c->cols - 1)
		line[c->cols > 1 ? c->cols - 1 : 0] = '\0';
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	c->drawn = 1;
}

void freeze_bar_info(void *ud, const char *msg)
{
	struct freeze_bar *c = ud;
	freeze_bar_clear(c);
	ui_info(c->cli, "%s", msg);
}

void freeze_bar_init(struct freeze_bar *c, struct gg_cli *cli)
{
	*c = (struct freeze_bar){.cli = cli, .cols = 80};
	c->bar = !cli->quiet && isatty(STDERR_FILENO);
	struct winsize ws;
	if (c->bar && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		c->cols = ws.ws_col;
	clock_gettime(CLOCK_MONOTONIC, &c->start);
}

/* What the session's image will not carry, as freeze --session said it. */
static json_t *unfrozen_json(const struct gg_session_freeze *sf)
{
	json_t *a = json_array();
	const char *kind, *path, *name, *line;
	for (size_t i = 0; a && gg_session_freeze_unfrozen(sf, i, &kind, &path, &name, &line) == 0;
	     i++) {
		json_t *u = json_object();
		gg_json_set_text(u, "kind", kind);
		gg_json_set_text(u, "path", path);
		if (name)
			gg_json_set_text(u, "name", name);
		gg_json_set_text(u, "advice", line);
		gg_json_append(a, u);
	}
	return a;
}

static void report_json(const struct gg_freeze_opts *o, const char *source, const uint64_t *got,
			const struct gg_session_freeze *sf, const struct gg_freeze_result *res,
			double secs)
{
	json_t *r = json_object();
	gg_json_set_text(r, "output", o->output);
	gg_json_set_text(r, "source", source);
	gg_json_set_text(r, "format", gg_image_format_name(res->format));
	const struct {
		const char *k;
		uint64_t v;
	} n[] = {{"size", res->image_size},
		 {"squashfs_size", res->squashfs_size},
		 {"data_bytes", res->data_bytes},
		 {"files", res->files},
		 {"dirs", res->dirs},
		 {"symlinks", res->symlinks},
		 {"specials", res->specials},
		 {"hardlinks", res->hardlinks},
		 {"duplicates", res->duplicates}};
	for (size_t i = 0; i < sizeof n / sizeof *n; i++)
		gg_json_set(r, n[i].k, json_integer((json_int_t)n[i].v));
	gg_json_set_text(r, "arch", res->arch);
	gg_json_set(r, "compression",
		    gg_json_text(gg_image_comp_name(o->comp ? o->comp : GG_IMAGE_COMP_GZIP)));
	gg_json_set(r, "reproducible", json_boolean(!o->no_reproducible));
	gg_json_set(r, "build_time", ui_json_time(res->build_time));
	gg_json_set(r, "warnings", json_integer(res->warnings));
	gg_json_set(r, "seconds", json_real(secs));
	if (got)
		gg_json_set(r, "received_bytes", json_integer((json_int_t)*got));
	if (sf)
		gg_json_set(r, "unfrozen", unfrozen_json(sf));
	ui_json_doc("freeze", r);
}

void freeze_report(struct gg_cli *cli, const struct gg_freeze_opts *o, const char *source,
		   const struct gg_session_freeze *sf, const struct gg_freeze_result *res,
		   double secs)
{
	uint64_t recv = sf ? gg_session_freeze_received(sf) : 0;
	const uint64_t *got_bytes = sf ? &recv : NULL;
	if (cli->json) {
		report_json(o, source, got_bytes, sf, res, secs);
		return;
	}
	char in[32], outsz[32], got[64] = "", b[32];
	gg_size_format(res->data_bytes, in, sizeof in);
	gg_size_format(res->image_size, outsz, sizeof outsz);
	if (got_bytes)
		snprintf(got, sizeof got, " (%s from the node)",
			 gg_size_format(*got_bytes, b, sizeof b));
	ui_info(cli,
		"froze %s (%s%s, %llu file%s, %llu director%s, %llu symlink%s, %llu other) "
		"into %s: %s, %s, %.1f s%s",
		source, in, got, (unsigned long long)res->files, res->files == 1 ? "" : "s",
		(unsigned long long)res->dirs, res->dirs == 1 ? "y" : "ies",
		(unsigned long long)res->symlinks, res->symlinks == 1 ? "" : "s",
		(unsigned long long)res->specials, o->output, outsz, res->arch, secs,
		res->warnings ? " (with warnings)" : "");
}

/* What became of submit's image, on stderr. */
static void job_image_said(struct gg_cli *cli, const char *image, const char *sif,
			   enum gg_job_image_how how, const struct gg_freeze_result *res,
			   double secs)
{
	if (how == GG_JOB_IMAGE_TO_FREEZE)
		ui_info(cli, "dry run: '%s' is not a SIF: submit would freeze it into %s", image,
			sif);
	else if (how == GG_JOB_IMAGE_CACHED)
		ui_info(cli, "'%s' is unchanged since it was frozen: submitting %s", image, sif);
	if (how != GG_JOB_IMAGE_FROZEN)
		return;
	char out[32];
	ui_info(cli,
		"froze '%s' (%llu files) into %s: %s, %.1f s (a submit of it unchanged takes "
		"this SIF without freezing again)",
		image, (unsigned long long)res->files, sif,
		gg_size_format(res->image_size, out, sizeof out), secs);
}

int cli_job_image(struct gg_cli *cli, struct gg_job_spec *spec, const char *image, int dry_run,
		  struct gg_dev_gpu *dev, enum gg_job_image_how *how)
{
	struct freeze_bar bar;
	freeze_bar_init(&bar, cli);
	struct gg_image_callbacks cb = {.progress = freeze_bar_progress,
					.warn = freeze_bar_warn,
					.cancel = cli_cancel_cb,
					.ud = &bar};
	struct cli_sigsave save;
	cli_interrupt_push(&save);
	struct gg_freeze_result res;
	struct gg_err err = {0};
	int rc = gg_job_image_prepare(spec, image, dry_run, &cb, dev, how, &res, &err);
	freeze_bar_clear(&bar);
	cli_interrupt_pop(&save);
	if (rc < 0)
		return ui_fail(cli, &err, "%s", cli->cmd ? cli->cmd->name : "submit");
	job_image_said(cli, image, gg_job_spec_image(spec), *how, &res, freeze_bar_elapsed(&bar));
	return 0;
}

int freeze_check_settings(struct gg_cli *cli, struct gg_freeze_opts *o)
{
	enum gg_image_comp comp = o->comp ? o->comp : GG_IMAGE_COMP_GZIP;
	/* lz4 has no levels: any selects its high compression (gridgpu-freeze(1)) */
	int max_level = comp == GG_IMAGE_COMP_GZIP ? 12 : comp == GG_IMAGE_COMP_XZ ? 9 : 22;
	if (o->level > max_level)
		return ui_usage(cli, "--level %d: %s levels are 1-%d", o->level,
				gg_image_comp_name(comp), max_level);
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (sde && *sde) {
		char *end;
		errno = 0;
		long long t = strtoll(sde, &end, 10);
		if (errno || *end || t < 0)
			return ui_usage(cli, "SOURCE_DATE_EPOCH '%s': expected seconds since 1970",
					sde);
		o->have_source_date_epoch = 1;
		o->source_date_epoch = t;
	}
	if (o->comp && o->comp != GG_IMAGE_COMP_GZIP)
		ui_warn(cli,
			"%s squashfs compression might not work with some installations (apptainer "
			"needs kernel or squashfuse support for it; gzip works everywhere)",
			gg_image_comp_name(o->comp));
	return 0;
}
