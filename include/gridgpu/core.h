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
	GG_EDIFFER = -12,  /* check: the image runs it otherwise     exit 6 */
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
/* Split a command line into words as the configuration's token_command is:
 * blanks separate words; '...' keeps everything literally; "..." keeps
 * everything but \" and \\ (a backslash before them escapes them); a
 * backslash outside quotes escapes the next character. No variables, globs
 * or other shell syntax. *argv is NULL-terminated, free with gg_argv_free.
 * GG_EUSAGE for an unterminated quote or no word at all. */
GG_API int gg_argv_split(const char *s, char ***argv, struct gg_err *err);
GG_API void gg_argv_free(char **argv);
/* The words as one line gg_argv_split reads back as the same words (and a
 * POSIX shell too): a word of letters, digits and @%+=:,./_- as it is, any
 * other in '...' (a ' in it as '\''). malloc'd; NULL on allocation failure. */
GG_API char *gg_argv_join(char *const *argv, size_t n);
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
#define GG_MAX_MIG   8

/* What a site key's value is: how struct gg_site holds it, how the file, site
 * show --json and site add take and show it, what completion offers. */
enum gg_site_kind {
	GG_SK_TEXT,     /* char *: one line of text */
	GG_SK_FILE,     /* char *: a local file */
	GG_SK_DIR,      /* char *: a local directory */
	GG_SK_CHOICE,   /* char *: one of the words of argname ("proxy|token") */
	GG_SK_DURATION, /* int64_t seconds, 0: none (the default); written exact, "1h30m" */
	GG_SK_LIST,     /* char *[max] and a count: one value a line in the file */
	GG_SK_ADDRS,    /* a list of addresses or ranges, several a value with ','
			   between (gg_site_allow_add) */
};
#define GG_SKF_REQUIRED 1u /* a site has it (the CE): site set cannot clear it */

/* Every key of a site profile, once. A row makes the member of struct gg_site,
 * the INI key (read, written, in this order), site add's option and site set's
 * KEY, its help, completion, site show's text and --json member, the man page
 * check, and the check site add and site set make:
 *   S(kind, field, option, short, argname, default, flags, check, help)  char *
 *   L(kind, field, count, max, noun, key, option, short, argname, check, help)
 *                                                        char *field[max]; int count
 *   D(field, option, default, help)                      int64_t, a duration
 * field: the member, the INI key (but a list's, key) and the --json member;
 * option: the key with '-' for '_'; default: the value that applies unset, as
 * help shows it, or NULL; check: check_<check> in lib/engine/site.c (none:
 * what the kind takes). Adding a key is one row here and its lines in
 * man/gridgpu-site.1 (tests/unit/test_site.c checks both). */
#define GG_SITE_KEYS(S, L, D)                                                                    \
	S(GG_SK_TEXT, ce, "ce", 0, "URL", NULL, GG_SKF_REQUIRED, ce_url,                         \
	  "CE endpoint: https://ce.example.org:443/arex, slurm+ssh://USER@LOGIN[/DIR]")          \
	L(GG_SK_LIST, jumps, njumps, GG_MAX_JUMPS, "jump hosts", "jump", "jump", 'J',            \
	  "USER@HOST[:PORT]", jump, "a jump host, in order (repeat for more hops)")              \
	S(GG_SK_FILE, identity, "identity", 'i', "FILE", NULL, 0, ssh_path,                      \
	  "your ssh key for the jump hosts")                                                     \
	S(GG_SK_FILE, known_hosts, "known-hosts", 0, "FILE", NULL, 0, ssh_path,                  \
	  "known_hosts file with the jump hosts' keys")                                          \
	S(GG_SK_TEXT, worker_address, "worker-address", 0, "ADDR", NULL, 0, none,                \
	  "address the last jump host reaches workers by")                                       \
	S(GG_SK_TEXT, queue, "queue", 0, "QUEUE", NULL, 0, none, "default queue")                \
	S(GG_SK_TEXT, gpu_queue, "gpu-queue", 0, "QUEUE", NULL, 0, none, "queue for GPU jobs")   \
	S(GG_SK_TEXT, gpu_rte, "gpu-rte", 0, "RTE", NULL, 0, none,                               \
	  "runtime environment that requests GPUs")                                              \
	S(GG_SK_TEXT, image, "image", 0, "IMAGE", NULL, 0, none, "default container image")      \
	S(GG_SK_DIR, ca_dir, "ca-dir", 0, "DIR", NULL, 0, none, "CA directory for this site")    \
	S(GG_SK_CHOICE, auth, "auth", 0, "proxy|token", "proxy", 0, choice,                      \
	  "credential the CE takes")                                                             \
	S(GG_SK_CHOICE, runtime, "runtime", 0, "apptainer|bwrap", "apptainer", 0, choice,        \
	  "how batch jobs run images")                                                           \
	S(GG_SK_TEXT, token_command, "token-command", 0, "CMD", NULL, 0, command,                \
	  "get tokens by running CMD (split into words, no shell; stdout: the token)")           \
	S(GG_SK_TEXT, oidc_account, "oidc-account", 0, "NAME", NULL, 0, none,                    \
	  "get tokens from this oidc-agent account")                                             \
	S(GG_SK_TEXT, token_audience, "token-audience", 0, "AUD", NULL, 0, none,                 \
	  "the audience asked of oidc-agent")                                                    \
	S(GG_SK_TEXT, token_scopes, "token-scopes", 0, "SCOPES", NULL, 0, none,                  \
	  "the scopes asked of oidc-agent (space separated)")                                    \
	S(GG_SK_TEXT, output_base, "output-base", 0, "URL", NULL, 0, output_base,                \
	  "storage URL outputs go under, e.g. davs://se.example:1094/store/user/$USER/")         \
	S(GG_SK_TEXT, cache, "cache", 0, "URL", NULL, 0, cache,                                  \
	  "the site's XCache (root://HOST:PORT): inputs are read through it")                    \
	L(GG_SK_LIST, binds, nbinds, GG_MAX_BINDS, "bind paths", "bind", "bind", 0, "SRC[:DST]", \
	  bind, "a path of the node in every session's and job's container (repeat)")            \
	L(GG_SK_ADDRS, allow_from, nallow, GG_MAX_ALLOW, "allow_from addresses", "allow_from",   \
	  "allow-from", 0, "ADDR[/BITS]", none,                                                  \
	  "sessions admit ssh only from ADDR: the last jump host's (repeat for more)")           \
	D(connect_deadline, "connect-deadline", NULL,                                            \
	  "end a session nobody connected to after DUR")                                         \
	D(idle_limit, "idle-limit", NULL, "end a session idle for longer than DUR")              \
	D(token_refresh, "token-refresh", "5m",                                                  \
	  "renew a site's token when it has less than DUR left")                                 \
	S(GG_SK_CHOICE, image_check, "image-check", 0, "none|login", "none", 0, choice,          \
	  "check node:/PATH images on the last jump host (it sees the nodes' files) first")      \
	S(GG_SK_TEXT, gpu_model, "gpu-model", 0, "MODEL", NULL, 0, gpu_model,                    \
	  "the nodes' GPU model, as nvidia-smi names it (NVIDIA A100-SXM4-40GB)")                \
	S(GG_SK_TEXT, gpu_memory, "gpu-memory", 0, "MIB", NULL, 0, mib,                          \
	  "each GPU's memory in MiB (40960)")                                                    \
	S(GG_SK_TEXT, gpu_capability, "gpu-capability", 0, "X.Y", NULL, 0, capability,           \
	  "the GPUs' CUDA compute capability (8.0)")                                             \
	S(GG_SK_TEXT, gpus_per_node, "gpus-per-node", 0, "N", NULL, 0, count,                    \
	  "how many GPUs a node has")                                                            \
	L(GG_SK_LIST, mig_profiles, nmig_profiles, GG_MAX_MIG, "MIG profiles", "mig_profile",    \
	  "mig-profile", 0, "PROFILE", mig, "a MIG profile the site offers, 1g.10gb (repeat)")   \
	S(GG_SK_TEXT, arch, "arch", 0, "ARCH", NULL, 0, arch,                                    \
	  "the nodes' CPU architecture (x86_64, aarch64): the images they run")                  \
	D(snapshot_time, "snapshot-time", "20s",                                                 \
	  "time a session's snapshot at its end may take (0s: none)")                            \
	S(GG_SK_TEXT, snapshot_max, "snapshot-max", 0, "SIZE", "2G", 0, size,                    \
	  "largest snapshot of a session's changes kept (2G)")                                   \
	D(usage_interval, "usage-interval", "30s",                                               \
	  "how often a session's node samples what the work uses (GPU, CPU, memory)")            \
	L(GG_SK_LIST, second_factor, nsecond_factor, GG_MAX_JUMPS, "second-factor hops",         \
	  "second_factor", "second-factor", 0, "N", hop_number,                                  \
	  "jump host N (1 = the first) asks for a second factor: 'gridgpu login' (repeat)")      \
	D(control_persist, "control-persist", "4h",                                              \
	  "how long a master 'gridgpu login' opened stays up unused")                            \
	S(GG_SK_CHOICE, slurm_gpu, "slurm-gpu", 0, "gres|gpus", "gres", 0, choice,               \
	  "slurm+ssh: sbatch asks --gres=gpu:[TYPE:]N or --gpus=[TYPE:]N")                       \
	S(GG_SK_TEXT, slurm_gpu_type, "slurm-gpu-type", 0, "TYPE", NULL, 0, gres_type,           \
	  "slurm+ssh: the GPU type whole GPUs are asked by (a100)")                              \
	S(GG_SK_CHOICE, slurm_stage, "slurm-stage", 0, "node|login", "node", 0, choice,          \
	  "slurm+ssh: storage URLs are copied on the compute node or on the login node")

#define GG_SITE_FIELD_S(kind, field, ...) char *field;
#define GG_SITE_FIELD_L(kind, field, count, max, ...) \
	char *field[max];                             \
	int count;
#define GG_SITE_FIELD_D(field, ...) int64_t field;
#define GG_SITE_ONE(...)            +1

/* A site profile: the members are the rows of GG_SITE_KEYS (ce, jumps and
 * njumps, identity, ..., connect_deadline), read and set by key with the
 * functions below and those of gridgpu/site.h. */
struct gg_site {
	char *name;
	GG_SITE_KEYS(GG_SITE_FIELD_S, GG_SITE_FIELD_L, GG_SITE_FIELD_D)
};
/* How many rows GG_SITE_KEYS has (gg_site_key_count() at run time). */
enum { GG_SITE_NKEYS = 0 GG_SITE_KEYS(GG_SITE_ONE, GG_SITE_ONE, GG_SITE_ONE) };

/* One row of GG_SITE_KEYS. Only ever seen through the pointers below: rows may
 * get members at the end. */
struct gg_site_key {
	const char *key;    /* in the INI file: "gpu_queue", "jump" */
	const char *field;  /* the member of struct gg_site and of site --json: "jumps" */
	const char *option; /* site add's --OPTION, site set's KEY: "gpu-queue" */
	int shortopt;       /* site add's -X, or 0 */
	enum gg_site_kind kind;
	const char *argname; /* "URL"; a choice's words, "proxy|token" */
	const char *help;    /* one line, for site add --help */
	const char *dflt;    /* what applies when unset, as help shows it; NULL */
	unsigned flags;      /* GG_SKF_* */
};
GG_API size_t gg_site_key_count(void);
/* Row i (NULL past the end), in GG_SITE_KEYS's order. */
GG_API const struct gg_site_key *gg_site_key_at(size_t i);
/* The row whose key or option is name ("gpu_queue", "gpu-queue", "--gpu-queue"),
 * or NULL. */
GG_API const struct gg_site_key *gg_site_key_find(const char *name);
/* k's value in s: the text of a TEXT, FILE, DIR or CHOICE key (NULL: unset); the
 * values of a LIST or ADDRS key (*n of them); a DURATION's seconds (0: unset). */
GG_API const char *gg_site_get_text(const struct gg_site *s, const struct gg_site_key *k);
GG_API char *const *gg_site_get_list(const struct gg_site *s, const struct gg_site_key *k, int *n);
GG_API int64_t gg_site_get_duration(const struct gg_site *s, const struct gg_site_key *k);
/* k's value as site add --force and site set show it: the text, a list's values
 * with ", " between, a duration exact ("1h30m"); NULL when unset (or out of
 * memory: *oom set, when oom is not NULL). malloc'd. */
GG_API char *gg_site_value_text(const struct gg_site *s, const struct gg_site_key *k, int *oom);

/* The credential a site's CE calls take by default: its auth, else "token"
 * when it names a token source (token_command, oidc_account), else "proxy". */
GG_API const char *gg_site_auth_kind(const struct gg_site *site);

struct gg_config {
	char *path;
	char *default_site;
	struct gg_site *sites;
	size_t nsites;
};

/* Load the INI file at path (NULL: the user's, gg_config_default_path); a
 * missing file gives an empty config (rc 0). Parse errors name the line. */
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
