/* request --image: the image and the enter script staged with a session. */
#ifndef GG_CLI_STAGE_H
#define GG_CLI_STAGE_H

#include "cli.h"

struct stage {
	const char *image_file; /* the local SIF staged (the user's, or sif_tmp) */
	char *sif_tmp;          /* a SIF made of another kind of image */
	char *enter_tmp;        /* gridgpu-enter, written for the upload */
	char *enter_text;       /* its text */
	int64_t offset;         /* the staged SIF's squashfs partition */
	int node_path;          /* the image is a path on the node */
};

/* Set q->enter and q->image_file for q->image; with dry_run nothing is made or
 * written. 0, or the exit code after saying what is wrong. */
int stage_image(struct gg_cli *cli, struct gg_session_spec *q, const struct gg_site *site,
		int dry_run, struct stage *s);
/* Remove the temp files, free. */
void stage_clear(struct stage *s);

#endif
