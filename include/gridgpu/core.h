/* gridgpu/core.h (lib/core): the error type, durations and sizes, strings from
 * outside made printable, XDG paths, and the INI configuration. Everything else
 * in libgridgpu is built on this. */
#ifndef GRIDGPU_CORE_H
#define GRIDGPU_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gridgpu/api.h"

#define GG_ATTR_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- errors ------------------------------------------------------------ */

/* Error codes. Negative, so "rc < 0" means failure. Each maps to one exit code
 * of the gridgpu command (gg_err_exit_code), documented in gridgpu(1). */
enum gg_code {
	GG_OK = 0,
	GG_EFAIL = -1,     /* generic failure                        exit 1 */
	GG_EUSAGE = -2,    /* bad argument or value                  exit 2 */
	GG_ECRED = -3,     /* credentials: none, expired, unreadable exit 3 */
	GG_ENET = -4,      /* CE or network unreachable              exit 4 */
	GG_ENOTFOUND = -5, /* no such session or job                 exit 5 */
	GG_EJOB = -6,      /* the remote job failed                  exit 6 */
	GG_EIO = -7,       /* local file system                      exit 1 */
	GG_ENOMEM = -8,    /* out of memory                          exit 1 */
	GG_EPROTO = -9,    /* a peer answered something unusable     exit 4 */
	GG_EINTR = -10,    /* interrupted by a signal                exit 130 */
	GG_EHOSTKEY = -11, /* an SSH host key is not the pinned one  exit 4 */
};

#define GG_ERR_MSG_MAX 1024

/* Carried through the library: the callee that knows the cause fills it once;
 * callers may prefix context. Never printed by the library. */
struct gg_err {
	int code;
	char msg[GG_ERR_MSG_MAX];
};

/* Set code and message; returns code, so "return gg_err_set(err, ...)" works.
 * err may be NULL. */
GG_API int gg_err_set(struct gg_err *err, int code, const char *fmt, ...) GG_ATTR_PRINTF(3, 4);
/* Same, with ": <strerror(errnum)>" appended. */
GG_API int gg_err_sys(struct gg_err *err, int code, int errnum, const char *fmt, ...)
	GG_ATTR_PRINTF(4, 5);
/* Prefix the message with "<context>: "; returns err->code. */
GG_API int gg_err_prefix(struct gg_err *err, const char *fmt, ...) GG_ATTR_PRINTF(2, 3);
GG_API void gg_err_clear(struct gg_err *err);
/* Exit code of the gridgpu command for an error code (0 for GG_OK). */
GG_API int gg_err_exit_code(int code);
/* Short name of a code ("credentials", "network"), for --json output. */
GG_API const char *gg_err_kind(int code);
/* The table both come from: one row per code, GG_OK first. */
struct gg_err_kind_row {
	int code;
	const char *kind;
	int exit_code;
};
GG_API const struct gg_err_kind_row *gg_err_kinds(size_t *n);

/* ---- logging ----------------------------------------------------------- */

/* What the library does, for -v and -vv: the caller's hook (the library never
 * prints). Level 1: each HTTP request (method, URL, status, time taken) and
 * each ssh hop; level 2: the request and response headers too, secrets masked
 * (no token, proxy or key ever reaches the hook). */
struct gg_log {
	void (*fn)(void *ud, int level, const char *msg);
	void *ud;
	int level; /* the most detailed level wanted; 0: none */
};
/* Tell log->fn at level when log wants that level (log may be NULL). */
GG_API void gg_logf(const struct gg_log *log, int level, const char *fmt, ...) GG_ATTR_PRINTF(3, 4);

/* What a workflow tells its caller beside its result (the engine, proxy
 * making): the caller shows it or not (the library never prints). */
enum gg_note {
	GG_NOTE_INFO,    /* "submitted ...", "adopted ...", "killed ...", "cleaned ..." */
	GG_NOTE_WARN,    /* the CE refused one job of a bulk call, ... */
	GG_NOTE_VERBOSE, /* for -v */
};
typedef void (*gg_note_fn)(void *ud, enum gg_note kind, const char *msg);

/* ---- progress ---------------------------------------------------------- */

/* Progress of an upload or download: return non-zero to abort (GG_EINTR). */
typedef int (*gg_http_progress_fn)(void *ud, uint64_t done, uint64_t total);

/* ---- durations and sizes ----------------------------------------------- */

/* Parse "90", "90s", "90m", "12h", "2d", "1w", "1h30m", "HH:MM" (grid-proxy-init's
 * -valid form) into seconds. A bare number is seconds. Rejects negative values,
 * overflow, trailing garbage and the empty string. */
GG_API int gg_duration_parse(const char *s, int64_t *out, struct gg_err *err);
/* "2d3h", "12h", "45m", "30s", "0s" (largest two units). buf >= 32 bytes. */
GG_API char *gg_duration_format(int64_t secs, char *buf, size_t len);
/* Every unit, nothing rounded ("1d2h3m4s"): parses back to secs. buf >= 32. */
GG_API char *gg_duration_format_exact(int64_t secs, char *buf, size_t len);
/* Parse "16G", "512M", "2GiB", "1.5T", "4096" (bytes) into bytes; binary units
 * (K = 1024). */
GG_API int gg_size_parse(const char *s, uint64_t *out, struct gg_err *err);
/* "1.5 GiB", "512 MiB", "12 B". */
GG_API char *gg_size_format(uint64_t bytes, char *buf, size_t len);

/* ---- times ------------------------------------------------------------- */

/* One convention per audience. For programs (--json): ISO 8601 in UTC,
 * "2026-11-26T10:20:49Z". On screen: local time with its zone,
 * "2026-11-26 11:20 CET". buf >= 40 bytes; t <= 0 gives "-". */
GG_API char *gg_time_iso(int64_t t, char *buf, size_t len);
GG_API char *gg_time_local(int64_t t, char *buf, size_t len);

/* ---- strings ----------------------------------------------------------- */

/* malloc'd printf; NULL on allocation failure. */
GG_API char *gg_strdup_printf(const char *fmt, ...) GG_ATTR_PRINTF(1, 2);
/* Damerau-Levenshtein distance (a transposition counts 1), for "did you mean". */
GG_API size_t gg_edit_distance(const char *a, const char *b);
/* Text from outside (a CE, a node, an image, a file name), made safe to print on
 * a terminal: every control character (C0 incl. ESC, CR, LF and TAB, DEL, the
 * C1 controls U+0080-U+009F), every bidirectional control and invisible format
 * character (U+061C, U+200B-U+200F, U+2028-U+202E, U+2060-U+2064,
 * U+2066-U+2069, U+FEFF) and every byte that is not valid UTF-8 is escaped
 * visibly, byte by byte ("\n", "\r", "\t", "\x1b", "\xc2\x9b", "\xe2\x80\xae",
 * "\xff"), a backslash is doubled; other valid UTF-8 text is kept. The result is
 * valid UTF-8 with none of those code points.
 * malloc'd (at most 4 * len + 1 bytes); NULL when out of memory. */
GG_API char *gg_str_printable(const char *s, size_t len);

/* ---- durations and sizes typed by a user ------------------------------- */

/* gg_duration_parse and gg_size_parse for what a user types (an option, a
 * configuration value): a bare number other than 0 is refused (GG_EUSAGE, "'4'
 * needs a unit: 4h, 4m or 4d") instead of being read as seconds or bytes, which
 * turned "--walltime 4" into a minute and "--memory 16" into 16 bytes. A bare 0
 * stays valid: it means none or the default wherever the option takes it. */
GG_API int gg_duration_parse_unit(const char *s, int64_t *out, struct gg_err *err);
GG_API int gg_size_parse_unit(const char *s, uint64_t *out, struct gg_err *err);

/* ---- files ------------------------------------------------------------- */

/* Read a whole file (at most max bytes, else GG_EIO "too large"); NUL-terminated.
 * *out is malloc'd, *len (may be NULL) without the NUL. */
GG_API int gg_file_read(const char *path, size_t max, char **out, size_t *len, struct gg_err *err);

/* ---- XDG paths --------------------------------------------------------- */

enum gg_xdg { GG_XDG_CONFIG, GG_XDG_STATE, GG_XDG_CACHE, GG_XDG_RUNTIME };
/* "$XDG_<KIND>_HOME/gridgpu" (or ~/.config, ~/.local/state, ~/.cache defaults;
 * runtime falls back to the state dir). malloc'd. */
GG_API int gg_xdg_dir(enum gg_xdg kind, char **out, struct gg_err *err);

/* ---- configuration ----------------------------------------------------- */

#define GG_MAX_JUMPS 8
#define GG_MAX_BINDS 16
#define GG_MAX_ALLOW 32

struct gg_site {
	char *name;
	char *ce;                  /* CE endpoint URL, https://host:port/arex */
	char *jumps[GG_MAX_JUMPS]; /* user@host[:port], in order */
	int njumps;
	char *queue;               /* default queue */
	char *gpu_queue;           /* queue for GPU jobs */
	char *gpu_rte;             /* runtime environment to ask for GPUs */
	char *image;               /* default image */
	char *binds[GG_MAX_BINDS]; /* SRC[:DST]: node paths in every session's container */
	int nbinds;
	char *ca_dir;             /* CA dir for this site, overrides X509_CERT_DIR */
	char *auth;               /* "proxy" (default) or "token" */
	char *identity;           /* ssh key for the jump hosts (the user's site key) */
	char *known_hosts;        /* known_hosts file with the jump hosts' keys */
	char *worker_address;     /* address the last jump host reaches workers by */
	char *runtime;            /* batch runtime: "apptainer" (default) or "bwrap" */
	char *token_command;      /* token source: a command, split into words (no shell) */
	char *oidc_account;       /* token source: an oidc-agent account */
	char *token_audience;     /* the audience asked of oidc-agent, or NULL */
	char *token_scopes;       /* the scopes asked of oidc-agent (space separated) */
	char *output_base;        /* storage URL outputs go under ($USER: the local user) */
	char *cache;              /* the site's XCache, root://HOST:PORT: inputs read through it */
	int64_t token_refresh;    /* refresh margin, seconds, 0 = default (5 minutes) */
	int64_t connect_deadline; /* seconds, 0 = default */
	int64_t idle_limit;       /* seconds, 0 = default */
	/* ADDR or ADDR/BITS: the only addresses a session's sshd admits
	 * connections from (its jump hosts); none: any */
	char *allow_from[GG_MAX_ALLOW];
	int nallow;
};

/* The credential a site's CE calls take by default: its auth, else "token"
 * when it names a token source (token_command, oidc_account), else "proxy". */
GG_API const char *gg_site_auth_kind(const struct gg_site *site);

struct gg_config {
	char *path;
	char *default_site;
	struct gg_site *sites;
	size_t nsites;
};

/* Load the INI file at path; a missing file gives an empty config (rc 0).
 * Parse errors name the line. */
GG_API int gg_config_load(const char *path, struct gg_config **out, struct gg_err *err);
/* Default path: $XDG_CONFIG_HOME/gridgpu/config. malloc'd. */
GG_API int gg_config_default_path(char **out, struct gg_err *err);
GG_API const struct gg_site *gg_config_site(const struct gg_config *cfg, const char *name);
/* Add or replace a site (deep copy). */
GG_API int gg_config_set_site(struct gg_config *cfg, const struct gg_site *site,
			      struct gg_err *err);
GG_API int gg_config_remove_site(struct gg_config *cfg, const char *name);
/* Serialise as INI text (malloc'd) / write atomically to cfg->path (0600). */
GG_API char *gg_config_format(const struct gg_config *cfg);
GG_API int gg_config_save(const struct gg_config *cfg, struct gg_err *err);
GG_API void gg_config_free(struct gg_config *cfg);
GG_API void gg_site_clear(struct gg_site *site);
/* A deep copy of src in dst (cleared on failure). */
GG_API int gg_site_copy(struct gg_site *dst, const struct gg_site *src, struct gg_err *err);
/* Values longer than this do not fit an inih line once written as "key = value". */
#define GG_CONFIG_VALUE_MAX 180
/* Can v be written to the INI file and read back unchanged? */
GG_API int gg_config_value_ok(const char *v);
/* One allow_from entry: an IPv4 or IPv6 address, or a CIDR range ADDR/BITS
 * with no bits set past the mask, in its plain form (no names, wildcards,
 * '!', zone or IPv4-mapped IPv6 address). 0, or GG_EUSAGE naming it. */
GG_API int gg_addr_range_check(const char *s, struct gg_err *err);
/* Add the entries of list (separated by ',') to site->allow_from: each is
 * checked first, nothing is added unless all are good (GG_EUSAGE naming the
 * bad one, an empty one, or more than GG_MAX_ALLOW in all). */
GG_API int gg_site_allow_add(struct gg_site *site, const char *list, struct gg_err *err);
/* Validate a site name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
GG_API int gg_site_name_valid(const char *name);

#endif
