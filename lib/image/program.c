/* Whether an image has the program a batch job is to run, looked up in its squashfs
 * before anything is uploaded: a job whose command is not in its image fails only once
 * it has waited its turn in the site's queue, which on a busy site is hours.
 *
 * The lookup is the container's: a name without '/' on the default PATH apptainer and
 * the batch wrapper give (/usr/local/sbin ... /bin), an absolute path as it is, every
 * symbolic link followed inside the image (merged /usr: /bin -> usr/bin), and ".."
 * taken as the kernel does after a link. It ends at an executable regular file. The
 * image's own environment scripts may set PATH (a conda environment): then a name
 * not on the default PATH is not called missing. */
#include "image/internal.h"
#include "image/partfile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqfs/compressor.h>
#include <sqfs/dir_reader.h>
#include <sqfs/error.h>
#include <sqfs/inode.h>
#include <sqfs/super.h>

#define LINK_HOPS 40         /* the kernel's limit */
#define PATH_LEN  4096       /* what is resolved, links expanded */
#define META_MAX  (4u << 20) /* inspect-metadata.json read for its environment */

/* The inode at path (components without links, "." or ".."; "" is the root). */
static sqfs_inode_generic_t *at(sqfs_dir_reader_t *rd, const char *path)
{
	sqfs_inode_generic_t *in = NULL;
	int rc = *path ? sqfs_dir_reader_find_by_path(rd, NULL, path, &in)
		       : sqfs_dir_reader_get_root_inode(rd, &in);
	return rc == 0 ? in : NULL;
}

/* Resolve path: done holds what is resolved ("a/b", no links), rest what is left. On a
 * link its target replaces it in rest (from the root when absolute). 1: an executable
 * regular file; 0: anything else, or nothing there. */
static int resolve(sqfs_dir_reader_t *rd, const char *path)
{
	char done[PATH_LEN] = "", rest[PATH_LEN], tmp[PATH_LEN];
	if (snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest)
		return 0;
	for (int hops = 0;;) {
		char *p = rest;
		while (*p == '/')
			p++;
		if (!*p)
			return 0; /* ended on a directory */
		size_t n = strcspn(p, "/");
		int last = !p[n]; /* "a/" is a directory */
		char *next = p[n] ? p + n + 1 : p + n;
		p[n] = '\0';
		size_t dl = strlen(done);
		if (!strcmp(p, ".")) {
			memmove(rest, next, strlen(next) + 1);
			continue;
		}
		if (!strcmp(p, "..")) {
			char *slash = strrchr(done, '/');
			*(slash ? slash : done) = '\0';
			memmove(rest, next, strlen(next) + 1);
			continue;
		}
		if (dl + 1 + n + 1 > sizeof done)
			return 0;
		char *name = done + dl + (dl > 0);
		if (dl)
			done[dl] = '/';
		memcpy(name, p, n + 1);
		sqfs_inode_generic_t *in = at(rd, done);
		if (!in)
			return 0;
		int t = in->base.type;
		if (t == SQFS_INODE_SLINK || t == SQFS_INODE_EXT_SLINK) {
			sqfs_u32 tl = t == SQFS_INODE_SLINK ? in->data.slink.target_size
							    : in->data.slink_ext.target_size;
			int fits = tl > 0 && tl + 1 + strlen(next) + 1 <= sizeof tmp;
			if (fits)
				snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)tl,
					 (const char *)in->extra, last ? "" : "/", next);
			sqfs_free(in);
			if (!fits || ++hops > LINK_HOPS)
				return 0;
			done[dl] = '\0';
			if (tmp[0] == '/')
				done[0] = '\0';
			memcpy(rest, tmp, strlen(tmp) + 1);
			continue;
		}
		int dir = t == SQFS_INODE_DIR || t == SQFS_INODE_EXT_DIR;
		int exe = (t == SQFS_INODE_FILE || t == SQFS_INODE_EXT_FILE) &&
			  (in->base.mode & 0111);
		sqfs_free(in);
		if (last)
			return exe;
		if (!dir)
			return 0;
		memmove(rest, next, strlen(next) + 1);
	}
}

/* script names the variable PATH itself (PATH=, export PATH, $PATH), not only one
 * whose name ends in it (PYTHONPATH, LD_LIBRARY_PATH), which leaves the search alone. */
static int names_path(const char *script)
{
	for (const char *p = script; (p = strstr(p, "PATH")) != NULL; p += 4) {
		int before = p > script && (p[-1] == '_' || isalnum((unsigned char)p[-1]));
		int after = p[4] == '_' || isalnum((unsigned char)p[4]);
		if (!before && !after)
			return 1;
	}
	return 0;
}

/* The image's environment scripts (inspect-metadata.json, as apptainer and freeze write
 * it) set PATH. */
static int sets_path(const struct gg_sif *s)
{
	const struct gg_sif_descr *d = gg_sif_find(s, GG_SIF_GENERIC_JSON, "inspect-metadata.json");
	char *text = NULL;
	if (!d || gg_sif_read_object(s, d, META_MAX, &text, NULL, NULL) < 0)
		return 0;
	json_t *j = json_loads(text, 0, NULL);
	free(text);
	json_t *env = json_object_get(json_object_get(json_object_get(j, "data"), "attributes"),
				      "environment");
	int found = 0;
	const char *k;
	json_t *v;
	json_object_foreach (env, k, v) {
		const char *script = json_string_value(v);
		found |= script && names_path(script);
	}
	json_decref(j);
	return found;
}

static int lookup(sqfs_dir_reader_t *rd, const char *name)
{
	if (name[0] == '/')
		return resolve(rd, name);
	char path[PATH_LEN];
	for (const char *d = GG_IMAGE_DEFAULT_PATH; *d;) {
		int n = (int)strcspn(d, ":");
		if (snprintf(path, sizeof path, "%.*s/%s", n, d, name) < (int)sizeof path &&
		    resolve(rd, path))
			return 1;
		d += n + (d[n] == ':');
	}
	return 0;
}

/* A directory reader over the partition; *cmp to destroy with it. */
static sqfs_dir_reader_t *reader(sqfs_file_t *f, sqfs_super_t *sb, sqfs_compressor_t **cmp)
{
	sqfs_compressor_config_t cfg;
	*cmp = NULL;
	if (sqfs_super_read(sb, f) != 0 ||
	    sqfs_compressor_config_init(&cfg, (SQFS_COMPRESSOR)sb->compression_id, sb->block_size,
					SQFS_COMP_FLAG_UNCOMPRESS) != 0 ||
	    sqfs_compressor_create(&cfg, cmp) != 0)
		return NULL;
	if ((sb->flags & SQFS_FLAG_COMPRESSOR_OPTIONS) && (*cmp)->read_options(*cmp, f) != 0)
		return NULL;
	return sqfs_dir_reader_create(sb, *cmp, f, 0);
}

int gg_image_has_program(const char *sif, const char *name, struct gg_err *err)
{
	if (!*name || (name[0] != '/' && strchr(name, '/')))
		return 1; /* relative to the job's directory, which is not in the image */
	struct gg_sif *s;
	if (gg_sif_open(sif, &s, err) < 0)
		return err ? err->code : GG_EFAIL;
	const struct gg_sif_descr *d = gg_sif_primary(s);
	struct gg_part_file pf;
	sqfs_super_t sb;
	sqfs_compressor_t *cmp = NULL;
	sqfs_dir_reader_t *rd = NULL;
	int rc;
	if (!d) {
		rc = gg_err_set(err, GG_EFAIL, "'%s' has no primary system partition", sif);
	} else {
		gg_part_file_init(&pf, s, d);
		rd = reader(&pf.base, &sb, &cmp);
		rc = rd ? lookup(rd, name) || (name[0] != '/' && sets_path(s))
			: gg_err_set(err, GG_EFAIL, "'%s': its squashfs cannot be read", sif);
	}
	if (rd)
		sqfs_destroy(rd);
	if (cmp)
		sqfs_destroy(cmp);
	gg_sif_close(s);
	return rc;
}
