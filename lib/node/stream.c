/* freeze --session's stream: the command that writes a tar of the session's
 * sandbox (or of a directory) on the node, through the compressor the node has. */
#include <stdlib.h>
#include <string.h>

#include "node/node.h"

int gg_node_link_parse(const char *s, enum gg_node_link *out)
{
	static const char *const names[] = {"auto", "zstd", "gzip", "none"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(s, names[i])) {
			*out = (enum gg_node_link)i;
			return 0;
		}
	return -1;
}

#define NO_COMP(z) "command -v " z " >/dev/null || { echo 'no " z " on the node' >&2; exit 5; }; "

/* The tar command through the compressor the node has: the link to the client is
 * the slow part, the node has idle cores. The exit status is tar's (a truncated
 * stream fails to decompress). */
static char *through_comp(const char *pre, const char *tar, enum gg_node_link link)
{
	const char *pick = link == GG_LINK_ZSTD ? NO_COMP("zstd") "Z='zstd -q -1 -T0 -c'; "
			   : link == GG_LINK_GZIP
				   ? NO_COMP("gzip") "Z='gzip -1 -c'; "
				   : "Z=cat; command -v gzip >/dev/null && Z='gzip -1 -c'; "
				     "command -v zstd >/dev/null && Z='zstd -q -1 -T0 -c'; ";
	return gg_strdup_printf(
		"%s%sif [ \"$Z\" = cat ]; then exec %s; fi; "
		"{ r=$( { { %s; echo $? >&3; } | $Z >&4; } 3>&1 ); exit ${r:-1}; } 4>&1",
		pre, pick, tar, tar);
}

/* pre, then the tar command through the link; a shell with no tar (an image
 * without it) exits GG_NODE_TAR_NO_TAR, not sh's 127. */
static char *through_link(const char *pre, const char *tar, enum gg_node_link link)
{
	char *p = gg_strdup_printf("%scommand -v tar >/dev/null || exit %d; ", pre,
				   GG_NODE_TAR_NO_TAR);
	char *cmd = !p                     ? NULL
		    : link == GG_LINK_NONE ? gg_strdup_printf("%sexec %s", p, tar)
					   : through_comp(p, tar, link);
	free(p);
	return cmd;
}

/* A directory as the login sees it. */
static char *dir_command(const char *path, enum gg_node_link link)
{
	char *q = gg_node_sh_quote(path);
	char *pre = q ? gg_strdup_printf("test -d %s || exit %d; ", q, GG_NODE_TAR_NO_DIR) : NULL;
	char *tar = q ? gg_strdup_printf("tar -C %s --numeric-owner -cf - .", q) : NULL;
	char *cmd = pre && tar ? through_link(pre, tar, link) : NULL;
	free(q);
	free(pre);
	free(tar);
	return cmd;
}

/* " --exclude='./A' --exclude='./B'" */
static char *exclude_args(const char *const *excl, size_t nexcl)
{
	char *x = strdup("");
	for (size_t i = 0; x && i < nexcl; i++) {
		char *q = gg_node_sh_quote(excl[i]);
		char *nx = q ? gg_strdup_printf("%s --exclude=%s", x, q) : NULL;
		free(q);
		free(x);
		x = nx;
	}
	return x;
}

/* " -C / 'home/u/.local' ...": paths of the node (absolute) taken in beside the sandbox. */
static char *include_args(const char *const *inc, size_t ninc)
{
	char *x = strdup(ninc ? " -C /" : "");
	for (size_t i = 0; x && i < ninc; i++) {
		char *q = gg_node_sh_quote(inc[i] + strspn(inc[i], "/"));
		char *nx = q ? gg_strdup_printf("%s %s", x, q) : NULL;
		free(q);
		free(x);
		x = nx;
	}
	return x;
}

/* GNU tar's --sort=name where the node's tar has it: the entries in an order of their
 * names alone, which a freeze of the session's snapshot gives them too (snapshot.c). */
#define SORT_SH "S=; tar --sort=name --version >/dev/null 2>&1 && S=--sort=name; "

/* The session's sandbox, on the node (outside the container: GG_NODE_MARK). */
static char *sandbox_command(const char *const *excl, size_t nexcl, const char *const *inc,
			     size_t ninc, enum gg_node_link link)
{
	char *sb = gg_node_sd_path(GG_NP_SANDBOX), *mounts = gg_node_sd_path(GG_NP_SANDBOX_MOUNTS);
	char *x = exclude_args(excl, nexcl), *in = include_args(inc, ninc);
	char *pre = sb && mounts ? gg_strdup_printf(GG_NODE_MARK " b=%s; m=%s; "
								 "test -d \"$b\" || exit %d; "
								 "touch \"$m\"; " SORT_SH,
						    sb, mounts, GG_NODE_TAR_NO_SANDBOX)
				 : NULL;
	char *tar =
		x && in ? gg_strdup_printf("tar -C \"$b\" $S --numeric-owner -X \"$m\"%s -cf - .%s",
					   x, in)
			: NULL;
	char *cmd = pre && tar ? through_link(pre, tar, link) : NULL;
	free(in);
	free(sb);
	free(mounts);
	free(x);
	free(pre);
	free(tar);
	return cmd;
}

char *gg_node_tar_command(const char *path, const char *const *excl, size_t nexcl,
			  enum gg_node_link link)
{
	return gg_node_tar_command_with(path, excl, nexcl, NULL, 0, link);
}

char *gg_node_tar_command_with(const char *path, const char *const *excl, size_t nexcl,
			       const char *const *inc, size_t ninc, enum gg_node_link link)
{
	return path ? dir_command(path, link) : sandbox_command(excl, nexcl, inc, ninc, link);
}

int gg_node_tar_error(const char *path, const char *image, int st, const char *said,
		      struct gg_err *err)
{
	if (st == GG_NODE_TAR_NO_TAR && path && image)
		return gg_err_set(err, GG_EFAIL,
				  "the session's image (%s) has no 'tar', which reading '%s' needs "
				  "inside its container: install tar in the image, or freeze the "
				  "sandbox (without --path)",
				  image, path);
	if (st == GG_NODE_TAR_NO_TAR)
		return gg_err_set(err, GG_EFAIL,
				  "the session's node has no 'tar' to read '%s' with",
				  path ? path : "the sandbox");
	if (st == GG_NODE_TAR_NO_SANDBOX && !path)
		return gg_err_set(err, GG_EFAIL,
				  "the session has no sandbox (it was requested without --image): "
				  "give --path DIR, a directory on its node");
	if (st == GG_NODE_TAR_NO_DIR && path)
		return gg_err_set(err, GG_EFAIL, "no directory '%s' on the session's node", path);
	return gg_err_set(
		err, GG_EFAIL, "reading '%s' on the session's node failed (tar exit %d%s%s)",
		path ? path : "the sandbox", st, said && *said ? ": " : "", said ? said : "");
}
