/* Shared by fuzz_tar.c and fuzz_oci.c: freeze an input file into a SIF in a
 * private scratch directory, bounded (cancelled past FREEZE_MAX_BYTES of input
 * data or image), the output removed afterwards. */
#ifndef GG_FUZZ_FREEZE_H
#define GG_FUZZ_FREEZE_H

#include <dirent.h>

#include "fuzz.h"
#include "image/image.h"

#define FREEZE_MAX_BYTES (64u << 20)

struct freeze_bound {
	uint64_t done, out;
	unsigned warnings;
};

static void freeze_progress(void *ud, const struct gg_image_progress *p)
{
	struct freeze_bound *b = ud;
	b->done = p->bytes_done;
	b->out = p->bytes_out;
}

static void freeze_warn(void *ud, const char *msg)
{
	struct freeze_bound *b = ud;
	FUZZ_CHECK(msg && *msg, "empty warning");
	b->warnings++;
}

static int freeze_cancel(void *ud)
{
	struct freeze_bound *b = ud;
	return b->done > FREEZE_MAX_BYTES || b->out > FREEZE_MAX_BYTES;
}

/* The scratch directory must be empty again after each input: a freeze leaves
 * nothing behind when it fails, and the target removes the image it made. */
static void freeze_check_empty(const char *dir)
{
	DIR *d = opendir(dir);
	FUZZ_CHECK(d, "scratch directory '%s' is gone", dir);
	struct dirent *e;
	while ((e = readdir(d)))
		FUZZ_CHECK(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
			   "the freeze left '%s' behind", e->d_name);
	closedir(d);
}

/* Freeze src (a file) with format fmt into dir/out.sif; the image is checked with
 * gg_sif_verify, then removed. */
static void freeze_one(const char *src, enum gg_image_format fmt, const char *dir)
{
	char out[4200];
	snprintf(out, sizeof out, "%s/out.sif", dir);
	struct gg_freeze_opts o;
	memset(&o, 0, sizeof o);
	o.source = src;
	o.format = fmt;
	o.output = out;
	o.force = 1;
	o.comp = GG_IMAGE_COMP_GZIP;
	o.level = 1;
	o.jobs = 1;
	o.have_source_date_epoch = 1;
	o.source_date_epoch = 1700000000;
	o.tool_version = "fuzz";
	struct freeze_bound b = {0, 0, 0};
	struct gg_image_callbacks cb = {.progress = freeze_progress,
					.warn = freeze_warn,
					.cancel = freeze_cancel,
					.ud = &b};
	struct gg_freeze_result res;
	memset(&res, 0, sizeof res);
	struct gg_err err = {0};
	int rc = gg_image_freeze(&o, &cb, &res, &err);
	if (rc == 0) {
		struct gg_sif_verify_report rep;
		struct gg_err e2 = {0};
		FUZZ_CHECK(gg_sif_verify(out, &rep, &e2) == 0 && rep.ok,
			   "the image made does not verify: %s",
			   e2.msg[0] ? e2.msg : "checks failed");
		FUZZ_CHECK(res.image_size > 0 && res.squashfs_size > 0, "empty image");
		unlink(out);
	} else {
		FUZZ_CHECK(err.msg[0], "freeze failed without a message (rc %d)", rc);
	}
	freeze_check_empty(dir);
}

#endif
