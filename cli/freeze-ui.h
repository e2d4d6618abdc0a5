/* freeze's output: its progress bar on stderr (a terminal's, without -q), its warnings,
 * its report (text or --json). */
#ifndef GG_CLI_FREEZE_UI_H
#define GG_CLI_FREEZE_UI_H

#include <stdint.h>
#include <time.h>

#include "cli.h"
#include "gridgpu/engine.h"
#include "gridgpu/image.h"
#include "gridgpu/node.h"

struct freeze_bar {
	struct gg_cli *cli;
	int bar;   /* draw the progress bar */
	int drawn; /* a bar is on the line */
	struct timespec start;
	int cols;
};

void freeze_bar_init(struct freeze_bar *c, struct gg_cli *cli);
/* Take the bar off the line (before anything else is printed). */
void freeze_bar_clear(struct freeze_bar *c);
/* Seconds since freeze_bar_init. */
double freeze_bar_elapsed(const struct freeze_bar *c);
/* The callbacks (ud: the struct freeze_bar). */
void freeze_bar_progress(void *ud, const struct gg_image_progress *p);
void freeze_bar_warn(void *ud, const char *msg);
void freeze_bar_info(void *ud, const char *msg);
/* What was frozen into what (sf: the session's freeze, or NULL: what came from the node,
 * what the image will not carry). */
void freeze_report(struct gg_cli *cli, const struct gg_freeze_opts *o, const char *source,
		   const struct gg_session_freeze *sf, const struct gg_freeze_result *res,
		   double secs);
/* The level against the compressor, SOURCE_DATE_EPOCH, a word on compressors that not
 * every installation reads: 0, or the exit code after saying what is wrong. */
int freeze_check_settings(struct gg_cli *cli, struct gg_freeze_opts *o);

/* submit's image (gg_job_image_prepare) into spec, with the bar while it is
 * frozen and a line on what was frozen or taken from the cache: 0, or the
 * exit code after saying what is wrong. */
int cli_job_image(struct gg_cli *cli, struct gg_job_spec *spec, const char *image, int dry_run,
		  struct gg_dev_gpu *dev, enum gg_job_image_how *how);

#endif
