/* The script that puts a session's logins into its container ("gridgpu-enter"),
 * made by request --image and staged beside the launcher. Its fixed part holds
 * the container runtimes' command lines; the head, the values of this request
 * (runtime, image, partition offset, GPUs, binds), quoted for sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridgpu/engine.h" /* gg_session_bind_check */
#include "node/node.h"

/* The session directory, then its files (node.def) as variables. */
static const char enter_sd[] = "# ---- what follows is the same for every session ----\n"
			       "SD=${" GG_NODE_SD_VAR ":-$(cd \"$(dirname \"$0\")\" && pwd)}\n"
			       "NODE_MARK='" GG_NODE_MARK "'\n";
static const struct {
	const char *var;
	enum gg_node_path path;
} enter_paths[] = {{"G", GG_NP_DIR},
		   {"SB", GG_NP_SANDBOX},
		   {"MOUNTS", GG_NP_SANDBOX_MOUNTS},
		   {"PASSWD", GG_NP_PASSWD},
		   {"GROUP", GG_NP_GROUP}};

/* The part every session shares (POSIX sh). */
static const char enter_body[] =
	"say() { echo \"gridgpu-enter: $*\" >&2; }\n"
	"die() { say \"$*\"; exit 1; }\n"
	"q() { printf \"'%s'\" \"$(printf '%s' \"$1\" | sed \"s/'/'\\\\\\\\''/g\")\"; }\n"
	"A=\"\"\n"
	"add() { for a; do A=\"$A $(q \"$a\")\"; done; }\n"
	"find_rt() {\n"
	"\tcase $RUNTIME in\n"
	"\tbwrap) command -v bwrap ;;\n"
	"\t*) command -v apptainer || command -v singularity ;;\n"
	"\tesac\n"
	"}\n"
	"no_rt() {\n"
	"\tcase $RUNTIME in\n"
	"\tbwrap) die \"no bwrap (bubblewrap) on this node\" ;;\n"
	"\t*) die \"no apptainer or singularity on this node (a site whose nodes have bubblewrap: "
	"'gridgpu site set SITE --runtime bwrap')\" ;;\n"
	"\tesac\n"
	"}\n"
	"# bind SRC DST: a path of the node in the container (skipped when not on this node)\n"
	"bind() {\n"
	"\t[ -e \"$1\" ] || { [ -n \"${quiet:-}\" ] || say \"not bound: $1 is not on this node\"; "
	"return 0; }\n"
	"\tcase $RUNTIME in\n"
	"\tbwrap) add --bind \"$1\" \"$2\" ;;\n"
	"\t*) add --bind \"$1:$2\" ;;\n"
	"\tesac\n"
	"\tmounts=\"$mounts\n$2\"\n"
	"}\n"
	"mounts=\"\"\n"
	"session_binds() {\n"
	"\tbind \"$SD\" \"$SD\"\n"
	"\t# a batch job's directory is also /srv, its working directory\n"
	"\t[ -n \"${JOB:-}\" ] && bind \"$SD\" /srv\n"
	"\t[ -d /cvmfs ] && bind /cvmfs /cvmfs\n"
	"\tuser_binds\n"
	"}\n"
	"# the runtime's command line, without the command\n"
	"runtime_args() {\n"
	"\tcase $RUNTIME in\n"
	"\tbwrap)\n"
	"\t\tadd \"$RT\" --bind \"$SB\" / --dev-bind /dev /dev --bind /proc /proc --ro-bind /sys /sys\n"
	"\t\tadd --ro-bind \"$PASSWD\" /etc/passwd --ro-bind \"$GROUP\" /etc/group\n"
	"\t\tfor f in /etc/hosts /etc/resolv.conf; do [ -e \"$f\" ] && add --ro-bind \"$f\" \"$f\"; "
	"done\n"
	"\t\t[ -n \"${HOME:-}\" ] && [ -d \"$HOME\" ] && bind \"$HOME\" \"$HOME\"\n"
	"\t\tsession_binds\n"
	"\t\twd=/; [ -n \"${HOME:-}\" ] && [ -d \"$HOME\" ] && wd=$HOME\n"
	"\t\t[ -n \"${JOB:-}\" ] && { wd=/srv; add --tmpfs /tmp --unshare-pid --die-with-parent; }\n"
	"\t\tadd --chdir \"$wd\" --\n"
	"\t\t;;\n"
	"\t*)\n"
	"\t\tadd \"$RT\" exec\n"
	"\t\tif [ -n \"${JOB:-}\" ]; then add --pwd /srv; else add --writable; fi\n"
	"\t\t[ \"$GPUS\" = 1 ] && add --nv\n"
	"\t\tsession_binds\n"
	"\t\tadd \"$SB\"\n"
	"\t\t;;\n"
	"\tesac\n"
	"}\n"
	"is_sif() { [ \"$(dd if=\"$1\" bs=1 skip=32 count=9 2>/dev/null)\" = SIF_MAGIC ]; }\n"
	"# the squashfs partition of a SIF not made by this request\n" GG_NODE_SIF_OFFSET_SH
	"unpack_sif() { # SRC: bubblewrap cannot mount a SIF: unsquashfs its partition\n"
	"\toff=$OFFSET\n"
	"\t[ \"$off\" -gt 0 ] || off=$(sif_offset \"$1\")\n"
	"\t[ -n \"$off\" ] || die \"no squashfs partition in $1\"\n"
	"\tcommand -v unsquashfs >/dev/null || die \"no unsquashfs on this node (squashfs-tools)\"\n"
	"\t# device nodes cannot be made without privileges: bwrap gives /dev\n"
	"\tunsquashfs -q -n -no-xattrs -o \"$off\" -d \"$SB\" \"$1\" >\"$G/unsquashfs.log\" 2>&1 ||\n"
	"\t\t[ -d \"$SB/bin\" ] || [ -d \"$SB/usr\" ] || { cat \"$G/unsquashfs.log\" >&2; "
	"die \"unpacking $1 failed\"; }\n"
	"}\n"
	"make_from() { # SRC: the writable sandbox\n"
	"\tif [ -d \"$1\" ]; then\n"
	"\t\tmkdir -p \"$SB\" && cp -pR \"$1/.\" \"$SB/\" || die \"copying the sandbox $1 failed\"\n"
	"\telif [ \"$RUNTIME\" != bwrap ]; then\n"
	"\t\tis_sif \"$1\" && src=$1 || src=docker-archive:$1\n"
	"\t\t\"$RT\" build --sandbox \"$SB\" \"$src\" >\"$G/build.log\" 2>&1 ||\n"
	"\t\t\t{ tail -n 5 \"$G/build.log\" >&2; die \"$(basename \"$RT\") build --sandbox failed\"; }\n"
	"\telif is_sif \"$1\"; then\n"
	"\t\tunpack_sif \"$1\"\n"
	"\telse # a root file system as a tar (gridgpu makes a SIF of other images)\n"
	"\t\tmkdir -p \"$SB\" && tar -xf \"$1\" -C \"$SB\" || die \"unpacking $1 failed\"\n"
	"\tfi\n"
	"}\n"
	"# the node's sftp-server and its libraries, for an image without one\n"
	"pack_sftp() {\n"
	"\tfor p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server "
	"/usr/lib/ssh/sftp-server; do\n"
	"\t\t[ -x \"$p\" ] || continue\n"
	"\t\tmkdir -p \"$G/sftp\" && cp \"$p\" \"$G/sftp/sftp-server\" || return 0\n"
	"\t\tldd \"$p\" 2>/dev/null | awk '/=> \\// {print $3} /^\\t\\/[^ ]*ld[^ ]*\\.so/ {print \"L\" "
	"$1}' |\n"
	"\t\t\twhile read -r l; do\n"
	"\t\t\t\tcase $l in L*) cp \"${l#L}\" \"$G/sftp/ld.so\" ;; *) cp \"$l\" \"$G/sftp/\" ;; "
	"esac\n"
	"\t\t\tdone\n"
	"\t\treturn 0\n"
	"\tdone\n"
	"}\n"
	"image_sftp() {\n"
	"\tfor p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server "
	"/usr/lib/ssh/sftp-server; do\n"
	"\t\t[ -x \"$SB$p\" ] && { echo \"$p\"; return 0; }\n"
	"\tdone\n"
	"\treturn 1\n"
	"}\n"
	"# the highest directory of path $1 the image does not have (\"./home\"); the\n"
	"# walk up ends at / (or ., for a path that is not absolute) and after 256 steps\n"
	"top_new() {\n"
	"\tp=$1 t=\"\" n=0\n"
	"\twhile [ \"$p\" != / ] && [ \"$p\" != . ] && [ \"$n\" -lt 256 ] && [ ! -e \"$SB$p\" ]; do\n"
	"\t\tt=$p; p=$(dirname \"$p\"); n=$((n + 1))\n"
	"\tdone\n"
	"\tcase $t in /?*) echo \".$t\" ;; esac\n"
	"}\n"
	"# $HOME: the user's home of the node (as sshd gives logins), the same path\n"
	"# in the container, for logins and batch jobs alike (not in the image)\n"
	"site_home() {\n"
	"\th=$(getent passwd \"$(id -un)\" | cut -d: -f6) && [ -n \"$h\" ] && HOME=$h\n"
	"\texport HOME\n"
	"}\n"
	"ids() { # the container's /etc/passwd and /etc/group: the user's of the node\n"
	"\tu=$(id -un)\n"
	"\t{ grep -v \"^$u:\" \"$SB/etc/passwd\" 2>/dev/null; getent passwd \"$u\" ||\n"
	"\t\techo \"$u:x:$(id -u):$(id -g)::${HOME:-/}:/bin/sh\"; } >\"$PASSWD\"\n"
	"\t{ grep -v \"^$(id -gn):\" \"$SB/etc/group\" 2>/dev/null; getent group \"$(id -g)\" ||\n"
	"\t\techo \"$(id -gn):x:$(id -g):\"; } >\"$GROUP\"\n"
	"}\n"
	"# a batch job's command (the batch wrapper runs it in the job's directory):\n"
	"# the container run of a login, on the image itself (bubblewrap: unpacked)\n"
	"do_job() {\n"
	"\tJOB=1\n"
	"\tRT=$(find_rt) || { (no_rt); exit 3; }\n"
	"\tsite_home\n"
	"\tsrc=$IMAGE\n"
	"\tcase $src in /*) ;; *) src=$SD/$src ;; esac\n"
	"\t[ -r \"$src\" ] || die \"the image $src is not there\"\n"
	"\tmkdir -p \"$G\" && rm -rf \"$SB\"\n"
	"\tif [ \"$RUNTIME\" = bwrap ]; then\n"
	"\t\tcommand -v unsquashfs >/dev/null || { say \"no unsquashfs on this node (squashfs-tools)\"; exit 3; }\n"
	"\t\tunpack_sif \"$src\"\n"
	"\t\tmkdir -p \"$SB/tmp\" \"$SB/srv\" \"$SB/etc\"\n"
	"\t\tids\n"
	"\telse\n"
	"\t\tSB=$src\n"
	"\tfi\n"
	"\tquiet=1 runtime_args\n"
	"\tfor a; do add \"$a\"; done\n"
	"\teval \"set -- $A\"\n"
	"\t\"$@\"\n"
	"\trc=$?\n"
	"\trm -rf \"$G\"\n"
	"\treturn $rc\n"
	"}\n"
	"do_make() {\n"
	"\tRT=$(find_rt) || no_rt\n"
	"\tsite_home\n"
	"\tsrc=$IMAGE\n"
	"\tcase $src in /*) ;; *) src=$SD/$src ;; esac\n"
	"\t[ -e \"$src\" ] || die \"the image $src is not on this node\"\n"
	"\tmkdir -p \"$G\" && rm -rf \"$SB\"\n"
	"\tmake_from \"$src\"\n"
	"\tmkdir -p \"$SB/tmp\" \"$SB/etc\" && chmod 1777 \"$SB/tmp\"\n"
	"\tids\n"
	"\timage_sftp >/dev/null || pack_sftp\n"
	"\t# the mount points the runtime makes in the sandbox: the session's, not the image's\n"
	"\tquiet=1 runtime_args\n"
	"\t# one a line (a path may hold blanks; line ends are refused at the client)\n"
	"\tprintf '%s\\n' \"$mounts\" | while IFS= read -r m; do [ -z \"$m\" ] || top_new \"$m\"; done |\n"
	"\t\tsort -u >\"$MOUNTS\"\n"
	"\t# the staged image stays: a snapshot's base (freeze --session, request --resume)\n"
	"\techo \"$(basename \"$RT\") $IMAGE (writable sandbox $SB)\"\n"
	"}\n"
	"# the command of a login, inside the sandbox\n"
	"login_cmd() {\n"
	"\tif [ -z \"${SSH_ORIGINAL_COMMAND+x}\" ]; then\n"
	"\t\tsh=/bin/sh; [ -x \"$SB/bin/bash\" ] && sh=/bin/bash\n"
	"\t\tset -- \"$sh\" -l\n"
	"\telif [ -n \"${GRIDGPU_SFTP:-}\" ] && [ \"$SSH_ORIGINAL_COMMAND\" = \"$GRIDGPU_SFTP\" ]; "
	"then\n"
	"\t\tif p=$(image_sftp); then set -- \"$p\"\n"
	"\t\telse set -- \"$G/sftp/ld.so\" --library-path \"$G/sftp\" \"$G/sftp/sftp-server\"; fi\n"
	"\telse\n"
	"\t\tset -- /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n"
	"\tfi\n"
	"\tfor a; do add \"$a\"; done\n"
	"}\n"
	"case ${1:-} in\n"
	"make) do_make ;;\n"
	"job) shift; do_job \"$@\"; exit ;;\n"
	"login)\n"
	"\t# $NODE_MARK commands (freeze --session) run on the node, outside\n"
	"\tcase ${SSH_ORIGINAL_COMMAND:-} in \"$NODE_MARK\"*) exec /bin/sh -c "
	"\"$SSH_ORIGINAL_COMMAND\" ;; esac\n"
	"\tRT=$(find_rt) || no_rt\n"
	"\tquiet=1 runtime_args\n"
	"\tlogin_cmd\n"
	"\teval \"exec $A\"\n"
	"\t;;\n"
	"print) # the runtime's command line for a command, one word a line\n"
	"\tshift\n"
	"\tRT=$(find_rt) || RT=$RUNTIME\n"
	"\truntime_args\n"
	"\tfor a; do add \"$a\"; done\n"
	"\teval \"set -- $A\"\n"
	"\tprintf '%s\\n' \"$@\"\n"
	"\t;;\n"
	"*) die \"usage: gridgpu-enter make|login|job CMD...|print CMD...\" ;;\n"
	"esac\n";

/* the first n bytes of s, 'quoted' for sh */
static void sh_quote(FILE *f, const char *s, size_t n)
{
	fputc('\'', f);
	for (size_t i = 0; i < n && s[i]; i++)
		s[i] == '\'' ? fputs("'\\''", f) : fputc(s[i], f);
	fputc('\'', f);
}

static void head_line(FILE *f, const char *name, const char *value)
{
	fprintf(f, "%s=", name);
	sh_quote(f, value, strlen(value));
	fputc('\n', f);
}

/* A "." or ".." part of a path (or of SRC:DST) */
static int dot_part(const char *b)
{
	for (const char *p = b; *p;) {
		size_t n = strcspn(p, "/:");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 1;
		p += n + (p[n] != '\0');
	}
	return 0;
}

int gg_session_bind_check(const char *what, const char *b, struct gg_err *err)
{
	const char *colon = strchr(b, ':');
	if (gg_str_has_control(b))
		return gg_err_set(err, GG_EUSAGE,
				  "%s '%s': a control character (a line end, a tab...) cannot be "
				  "carried to the node",
				  what, b);
	if (b[0] != '/' || (colon && colon[1] != '/') || (colon && strchr(colon + 1, ':')))
		return gg_err_set(err, GG_EUSAGE, "%s '%s': expected SRC[:DST], absolute paths",
				  what, b);
	if (dot_part(b))
		return gg_err_set(err, GG_EUSAGE,
				  "%s '%s': a path with '.' or '..' in it (name the directory "
				  "itself)",
				  what, b);
	return 0;
}

/* user_binds(): one "bind SRC DST" per bind of the site profile, then per
 * --bind SRC[:DST]. */
static int binds_fn(FILE *f, const struct gg_enter_opts *o, struct gg_err *err)
{
	fputs("user_binds() {\n\t:\n", f);
	for (int i = 0; i < o->nsite_binds + o->nbinds; i++) {
		int site = i < o->nsite_binds;
		const char *s = site ? o->site_binds[i] : o->binds[i - o->nsite_binds];
		const char *what = site ? "the site's bind" : "--bind";
		if (gg_session_bind_check(what, s, err) < 0)
			return GG_EUSAGE;
		if (strcmp(o->runtime && *o->runtime ? o->runtime : "apptainer", "bwrap") &&
		    strchr(s, ','))
			return gg_err_set(err, GG_EUSAGE,
					  "%s '%s': apptainer takes a ',' as the end of a bind: a "
					  "path with one cannot be bound (the site's runtime bwrap "
					  "can)",
					  what, s);
		const char *colon = strchr(s, ':'), *dst = colon ? colon + 1 : s;
		fputs("\tbind ", f);
		sh_quote(f, s, colon ? (size_t)(colon - s) : strlen(s));
		fputc(' ', f);
		sh_quote(f, dst, strlen(dst));
		fputc('\n', f);
	}
	fputs("}\n", f);
	return 0;
}

static const char enter_top[] =
	"#!/bin/sh\n"
	"# gridgpu-enter: made by 'gridgpu request --image' (lib/node/enter.c),\n"
	"# staged beside the session launcher.  'make' makes the writable sandbox\n"
	"# from the image; 'login' (sshd's ForceCommand) runs a login inside it;\n"
	"# 'print CMD...' shows the runtime's command line.\n"
	"set -u\n";

int gg_session_enter_script(const struct gg_enter_opts *o, char **out, struct gg_err *err)
{
	*out = NULL;
	if (!o->image || !*o->image || strchr(o->image, '\n'))
		return gg_err_set(err, GG_EUSAGE, "--image: expected a file or a path on the node");
	const char *rt = o->runtime && *o->runtime ? o->runtime : "apptainer";
	if (strcmp(rt, "apptainer") && strcmp(rt, "bwrap"))
		return gg_err_set(err, GG_EUSAGE, "runtime '%s': expected apptainer or bwrap", rt);
	char *text = NULL, num[32];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	fputs(enter_top, f);
	head_line(f, "RUNTIME", rt);
	head_line(f, "IMAGE", o->image);
	snprintf(num, sizeof num, "%lld", (long long)(o->offset > 0 ? o->offset : 0));
	head_line(f, "OFFSET", num);
	head_line(f, "GPUS", o->gpus ? "1" : "0");
	int rc = binds_fn(f, o, err);
	fputs(enter_sd, f);
	for (size_t i = 0; i < sizeof enter_paths / sizeof *enter_paths; i++)
		fprintf(f, "%s=\"$SD/%s\"\n", enter_paths[i].var,
			gg_node_path(enter_paths[i].path));
	fputs(enter_body, f);
	if (fclose(f) != 0 && rc == 0)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc < 0) {
		free(text);
		return rc;
	}
	*out = text;
	return 0;
}
