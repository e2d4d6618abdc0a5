/* lib/node: the node's contract in one place (node.def): the session launcher's
 * options, the files of the session directory, the members of the session file;
 * what is generated from it (the launcher's arguments in a job description, the
 * commands run on the node, the stream freeze --session reads) and the session
 * file's parser. */
#ifndef GG_LIB_NODE_H
#define GG_LIB_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

struct gg_jobdesc;

/* The names the client stages and reads in the session directory (node.def's
 * paths) are gridgpu/node.h's GG_*_NAME, GG_SESSION_FILE, GG_LAUNCHER_LOG. */
#include "gridgpu/node.h"

/* The snapshot at a session's end, unless the site says otherwise. */
#define GG_SNAPSHOT_TIME 20
#define GG_SNAPSHOT_MAX  (2ull << 30)

/* A command that starts with this runs on the node, outside the session's
 * container (the enter script's login lets it through). */
#define GG_NODE_MARK ": gridgpu-node;"
/* sh: sif_offset FILE prints the offset of a SIF's primary system partition (a
 * squashfs), read from its descriptors (lib/image/sif.c's layout: the header's
 * descriptor count at 88 and offset at 96; each descriptor 585 bytes: type at 0,
 * used at 4, offset at 17, file system type at 201, partition type at 205), or
 * nothing. Read with od and awk, byte by byte, so the node's byte order does not
 * matter. For a SIF the node has that gridgpu did not make (request --image
 * node:/PATH.sif, submit of a node's image). */
#define GG_NODE_SIF_OFFSET_SH                                                                       \
	"sif_offset() { od -An -v -t u1 -N 65536 \"$1\" 2>/dev/null | awk '\n"                      \
	"\tfunction le(p, k,  v, i) { v = 0; for (i = k - 1; i >= 0; i--) v = v * 256 + b[p + i]; " \
	"return v }\n"                                                                              \
	"\t{ for (i = 1; i <= NF; i++) b[n++] = $i }\n"                                             \
	"\tEND { d = le(96, 8); t = le(88, 8); if (t > 100 || d + t * 585 > n) exit\n"              \
	"\t\tfor (i = 0; i < t; i++) { o = d + i * 585\n"                                           \
	"\t\t\tif (le(o, 4) == 16388 && b[o + 4] == 1 && le(o + 201, 4) == 1 && "                   \
	"le(o + 205, 4) == 2) { printf \"%.0f\\n\", le(o + 17, 8); exit } } }'; }\n"

/* The session directory, as the launcher gives it to every login. */
#define GG_NODE_SD_VAR                      "GRIDGPU_SESSION_DIR"

#define GG_NODE_FLAG(id, letter, arg, help) GG_NF_##id,
#define GG_NODE_PATH(id, path, help)
#define GG_NODE_FIELD(name, type, help)
#define GG_NODE_ENV(id, name, own, help)
enum gg_node_flag {
#include "node/node.def"
	GG_NF_COUNT
};
#undef GG_NODE_FLAG
#undef GG_NODE_PATH
#define GG_NODE_FLAG(id, letter, arg, help)
#define GG_NODE_PATH(id, path, help) GG_NP_##id,
enum gg_node_path {
#include "node/node.def"
	GG_NP_COUNT
};
#undef GG_NODE_PATH
#undef GG_NODE_ENV
#define GG_NODE_PATH(id, path, help)
#define GG_NODE_ENV(id, name, own, help) GG_NE_##id,
enum gg_node_env {
#include "node/node.def"
	GG_NE_COUNT
};
#undef GG_NODE_FLAG
#undef GG_NODE_PATH
#undef GG_NODE_FIELD
#undef GG_NODE_ENV

struct gg_node_flag_info {
	char letter;
	const char *arg; /* the operand's name; NULL: takes none */
	const char *help;
};
#define GG_NODE_FLAG(id, letter, arg, help)
#define GG_NODE_PATH(id, path, help)
#define GG_NODE_FIELD(name, type, help)
#define GG_NODE_ENV(id, name, own, help)
#define GG_NODE_WFLAG(id, letter, arg, help) GG_NW_##id,
enum gg_node_wflag {
#include "node/node.def"
	GG_NW_COUNT
};
#undef GG_NODE_FLAG
#undef GG_NODE_PATH
#undef GG_NODE_FIELD
#undef GG_NODE_ENV
#undef GG_NODE_WFLAG

struct gg_node_field_info {
	const char *name;
	char type; /* 's' string, 'n' whole number */
};
const struct gg_node_flag_info *gg_node_flag_info(enum gg_node_flag f);
/* A file of the session directory, relative to it (static). */
const char *gg_node_path(enum gg_node_path p);
/* A variable of the job's or the logins' environment (static). */
const char *gg_node_env(enum gg_node_env e);
/* 1: the session's own variable, which a batch job of its image has not. */
int gg_node_env_own(enum gg_node_env e);
/* The session file's members, *n of them (static). */
const struct gg_node_field_info *gg_node_fields(size_t *n);
/* The launcher's getopts option string ("d:i:...g..."), malloc'd. */
char *gg_node_optstring(void);
/* The batch wrapper's options, and its getopts option string (malloc'd). */
const struct gg_node_flag_info *gg_node_wflag_info(enum gg_node_wflag f);
char *gg_node_wrapper_optstring(void);

/* The launcher's option f in a job description's arguments: "-x", then value
 * when the option takes one (value must be given exactly then). */
int gg_node_jd_arg(struct gg_jobdesc *jd, enum gg_node_flag f, const char *value,
		   struct gg_err *err);
/* The same for the batch wrapper's option f. */
int gg_node_jd_warg(struct gg_jobdesc *jd, enum gg_node_wflag f, const char *value,
		    struct gg_err *err);

/* sh for a remote shell: a path of the session directory ("${GRIDGPU_SESSION_DIR:-
 * /nonexistent}/PATH"), for a command that starts with GG_NODE_MARK. malloc'd. */
char *gg_node_sd_path(enum gg_node_path p);
/* 'text' quoted for sh. malloc'd. */
char *gg_node_sh_quote(const char *s);

/* The command that reads the session's GPU record on the node: the record's bytes
 * on stdout when it is a regular file (64 KiB at most), nothing otherwise, never
 * blocking. malloc'd. */
char *gg_node_gpus_command(void);
/* The same for another file of the session directory (GG_NP_USAGE). */
char *gg_node_read_command(enum gg_node_path p);

/* freeze --session's stream: how the node compresses it. */
enum gg_node_link { GG_LINK_AUTO, GG_LINK_ZSTD, GG_LINK_GZIP, GG_LINK_NONE };
/* "auto", "zstd", "gzip", "none"; -1 for another word. */
int gg_node_link_parse(const char *s, enum gg_node_link *out);
/* The exit statuses of the stream command, besides tar's own. */
#define GG_NODE_TAR_NO_DIR     3 /* no directory path */
#define GG_NODE_TAR_NO_SANDBOX 4 /* the session has no sandbox */
#define GG_NODE_TAR_NO_COMP    5 /* the compressor asked for is not on the node */
#define GG_NODE_TAR_NO_TAR     6 /* no tar where the command runs */
/* The command that writes a tar of path (as the login sees it) or, with path NULL,
 * of the session's sandbox less the excluded (./PATTERN, tar's --exclude) and the
 * session's mount points (the sandbox-mounts file), through the link's compressor;
 * its exit status is tar's or one of the above. malloc'd. */
char *gg_node_tar_command(const char *path, const char *const *excl, size_t nexcl,
			  enum gg_node_link link);
/* The same with paths of the node (absolute, as the login outside the container sees
 * them) taken in beside the sandbox, at the same place in the image (freeze --include). */
char *gg_node_tar_command_with(const char *path, const char *const *excl, size_t nexcl,
			       const char *const *inc, size_t ninc, enum gg_node_link link);
/* The error of a tar command's exit status (not 0) for path (NULL: the sandbox);
 * image: the session's image, whose container a path is read in (NULL: none, it
 * is read on the node); said: the first line of what it said on stderr, or NULL.
 * GG_EFAIL. */
int gg_node_tar_error(const char *path, const char *image, int status, const char *said,
		      struct gg_err *err);

/* freeze --session's report of what the image will not carry (lib/node/unfrozen.c). */
enum gg_unfrozen_kind {
	GG_UNFROZEN_USERSITE, /* Python's user site under $HOME */
	GG_UNFROZEN_LOCALBIN, /* ~/.local/bin */
	GG_UNFROZEN_CONDA,    /* a conda root under $HOME */
	GG_UNFROZEN_SPACK,    /* a spack root under $HOME */
	GG_UNFROZEN_STARTUP,  /* an export in a shell start-up file (path: the file) */
	GG_UNFROZEN_PATH,     /* a PATH entry outside the sandbox */
	GG_UNFROZEN_PYTHONPATH,
	GG_UNFROZEN_LDPATH,
	GG_UNFROZEN_BIND, /* a mount the session's processes have files open under */
};
struct gg_unfrozen {
	enum gg_unfrozen_kind kind;
	char *path;
	char *name; /* GG_UNFROZEN_STARTUP: the variable; else NULL */
};
#define GG_UNFROZEN_MAX_TEXT  (64 * 1024)
#define GG_UNFROZEN_MAX_LINES 256
#define GG_UNFROZEN_MAX_FIELD 4096
/* The command run on the node (outside the container) that prints the findings, one a
 * line (KIND TAB PATH [TAB NAME]), at most GG_UNFROZEN_MAX_LINES. malloc'd. */
char *gg_node_unfrozen_command(void);
/* The node's answer, parsed strictly: whole lines of known kinds, absolute paths without
 * a control byte or a ".." step, names of shell variables; duplicates dropped. *out
 * malloc'd (free with gg_unfrozen_clear). GG_EPROTO for anything else. */
int gg_unfrozen_parse(const char *text, size_t len, struct gg_unfrozen **out, size_t *n,
		      struct gg_err *err);
void gg_unfrozen_clear(struct gg_unfrozen *u, size_t n);
/* "usersite", "startup", ... (static). */
const char *gg_unfrozen_kind_name(enum gg_unfrozen_kind k);
/* One line for a user: what the image leaves out and what to do, the node's path
 * escaped (gg_str_printable). malloc'd; NULL when out of memory. */
char *gg_unfrozen_line(const struct gg_unfrozen *u);

/* The patterns a session freeze leaves out, as tar gets them ("./PATH"). */
struct gg_session_freeze;
const char *const *gg_session_freeze_excludes(const struct gg_session_freeze *sf, size_t *n);

/* The session file the launcher publishes (gridgpu-session.json), parsed and
 * checked. Returns GG_EPROTO with the reason when it is malformed. */
struct gg_launch_info {
	char *state;  /* "starting", "ready", "ended" */
	char *reason; /* why it ended */
	char *node;
	int port;
	char *user;
	char *host_key; /* validated "ssh-ed25519 AAAA..." */
	char *sessiondir;
	int64_t started, deadline_at, idle_limit, last_activity;
	/* the activity: first login (0: none yet), logins so far, open
	 * connections, when the launcher wrote the file */
	int64_t first_login, logins, connections, updated;
	/* what it last saw: idle since (0: active now), or why active (printable
	 * ASCII, at most 63 characters; else left out) */
	int64_t idle_since;
	char *active_reason;
	char *launcher_version;
	char *container;
	/* the snapshot of the sandbox's changes at the end: its size (0: none), when
	 * written, or why none was kept (printable, NULL: no word) */
	int64_t snapshot_size, snapshot_at;
	char *snapshot_error;
};
int gg_launch_info_parse(const char *text, size_t len, struct gg_launch_info *out,
			 struct gg_err *err);
void gg_launch_info_clear(struct gg_launch_info *li);

/* ---- a session's snapshot (snaplist.c, snapshot.c) ---- */

/* One entry of the list a snapshot begins with: find's type letter (f d l b c p s),
 * owner, permission bits, mtime (whole seconds), size, inode and link count, the path
 * ("." or "./A/B") and a link's target (NULL for others). */
struct gg_snap_entry {
	char type;
	uint32_t uid, gid, mode;
	int64_t mtime;
	uint64_t size, ino, nlink;
	char *path, *target;
};
#define GG_SNAP_MAX_ENTRIES (8 * 1024 * 1024)
#define GG_SNAP_PATH_MAX    4096
#define GG_SNAP_LIST_MAX    (1024u << 20) /* the list's bytes at most */
/* The list's text (NUL-separated records), parsed strictly: *out malloc'd (n entries,
 * the first the top "."), free with gg_snap_list_free. GG_EPROTO for anything else. */
int gg_snap_list_parse(const char *text, size_t len, struct gg_snap_entry **out, size_t *n,
		       struct gg_err *err);
void gg_snap_list_free(struct gg_snap_entry *e, size_t n);
/* Freeze the sandbox a snapshot (a file, the launcher's) and the image it was made
 * from (base, a SIF) give, less what excl leaves out, into o->output; usage_json (or
 * NULL) the provenance's "usage". */
int gg_snapshot_freeze_files(const char *base, const char *snapshot, const char *const *excl,
			     size_t nexcl, const char *usage_json, const struct gg_freeze_opts *o,
			     const struct gg_image_callbacks *cb, struct gg_freeze_result *res,
			     struct gg_err *err);
/* GNU tar --sort=name's order of two paths (component by component). */
int gg_snap_path_cmp(const char *a, const char *b);

/* ---- the enter script (enter.c) ---- */

/* What gridgpu-enter (the script that puts a session's logins in its
 * container) is made of: the runtime ("apptainer" or "bwrap"; NULL =
 * apptainer), the image (a name staged in the session dir or a path on the
 * node), the offset of a staged SIF's squashfs partition (0 = found on the
 * node), GPUs asked for (apptainer --nv), the site profile's binds, then
 * --bind's (SRC[:DST], absolute). */
struct gg_enter_opts {
	const char *runtime, *image;
	int64_t offset;
	int gpus;
	char *const *site_binds;
	int nsite_binds;
	const char *const *binds;
	int nbinds;
};
/* The script's text (malloc'd in *out); GG_EUSAGE for a bind or runtime it
 * cannot take. */
int gg_session_enter_script(const struct gg_enter_opts *o, char **out, struct gg_err *err);

/* Is r a session whose sandbox and sshd are there (ready)? GG_ENOTFOUND saying what
 * it is instead: a batch job, ended (its sandbox gone), not ready yet. */
struct gg_record;
int gg_node_session_ready(const struct gg_record *r, struct gg_err *err);

#endif
