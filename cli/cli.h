/* The gridgpu command: shared declarations of cli/. The CLI parses, prompts and
 * prints; all logic is in libgridgpu (lib/). */
#ifndef GG_CLI_H
#define GG_CLI_H

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define GG_JSON_POISON 1 /* jansson's silent constructors refused (gridgpu/json.h) */
#include "gridgpu/core.h"
#include "gridgpu/json.h"

/* Exit codes (gridgpu(1)). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_CRED = 3,
	EXIT_NET = 4,
	EXIT_NOTFOUND = 5,
	EXIT_JOB = 6,
	EXIT_INTR = 130,
};

/* ---- options: one table per command drives parsing, --help and completion ---- */

/* What an option's value (or a command's operand) is. Parsing only asks
 * whether there is one; completion offers what the kind names. */
enum gg_opt_arg {
	OPT_NONE,    /* a flag: no value (as an operand kind: no operands) */
	OPT_ARG,     /* a value nothing can complete: a duration, a number, a URL */
	OPT_FILE,    /* a local file */
	OPT_DIR,     /* a local directory */
	OPT_SITE,    /* a site profile's name */
	OPT_RECORD,  /* a session's or a batch job's name */
	OPT_SESSION, /* a live interactive session's name (not a job's, not an ended one) */
	OPT_CHOICE,  /* one of the words of argname, separated by '|' ("dir|tar|oci") */
	OPT_COMMAND, /* a gridgpu command (help's operand) */
	OPT_LIVE,    /* a session's or a batch job's name that has not ended (kill) */
	OPT_JOB,     /* a batch job's name (get) */
	OPT_IMAGE,   /* an image: a directory, or a file named as one (gg_image_suffixes) */
	OPT_MIG,     /* a MIG profile (the library's table, gg_mig_profiles) */
	OPT_ENDED,   /* an interactive session's name that has ended (request --resume) */
};

struct gg_opt {
	const char *name; /* long name, without "--" */
	int shortopt;     /* letter, or 0 */
	enum gg_opt_arg arg;
	const char *argname; /* "DUR", "FILE", ... for --help */
	const char *help;
	int id; /* returned by cli_next_opt; use letters or values >= 256 */
};
#define OPT_END                                  \
	{                                        \
		NULL, 0, OPT_NONE, NULL, NULL, 0 \
	}

struct gg_cli;
struct gg_engine;

/* A command, or a sub-command (parent set: "site" for "site add"). One table,
 * commands.def, holds both: dispatch, --help, completion and the docs check
 * read it. A command with sub-commands has cli_run_subcommand as fn. */
struct gg_cmd {
	const char *parent; /* NULL for a command */
	const char *name;
	int (*fn)(struct gg_cli *cli, int argc, char **argv);
	const char *summary;
	const char *usage;         /* after "gridgpu [PARENT ]NAME " */
	const struct gg_opt *opts; /* its options (global ones are added) */
	enum gg_opt_arg operand;   /* what its operands are (completion) */
	unsigned flags;
};
#define CMD_HIDDEN    1u /* not listed in --help (aliases) */
#define CMD_NO_CONFIG 2u /* runs even when the config file is broken */
#define CMD_DEFAULT   4u /* the sub-command run when none is named */
#define CMD_FREEZES   8u /* may freeze: the heap in huge pages (gg_image_heap_huge_pages) */

struct gg_cli {
	const char *prog;
	int json, quiet, verbose;
	const char *site;      /* --site (the first one) */
	const char *sites[16]; /* every --site, in order (submit tries them all) */
	int nsites;
	const char *config_path; /* --config */
	int no_keep;             /* --no-keep */
	const struct gg_cmd *cmd;
	const struct gg_cmd *sub; /* the sub-command running ("site add"), or NULL */
	struct gg_config *cfg;    /* loaded lazily by cli_config() */
	int cfg_exit;             /* exit code when cli_config() failed */
	struct gg_engine *eng;    /* cli_engine() */
	int notes_off;            /* the engine's "killed X"-style lines not shown */
	int wait_tty, wait_shown; /* cli_wait_ready's progress line */
	int wait_top;             /* its furthest live state shown, + 1 (0: none) */
	char wait_ce[256];        /* the CE's word and why it waits, as last shown */
	/* option parser state */
	int optind;
	char *optarg;
	const char *optname;
	int sites_checked;  /* cli_check_sites ran */
	json_t *match;      /* --site auto / A,B with --dry-run --json: the ranking */
	int gpu_optional;   /* submit --gpus 0-1: 1; after matching 2 (a GPU job) or 3 (CPU) */
	int right_size;     /* request and submit --right-size */
	char right_mig[32]; /* the MIG profile it took */
};

/* Iterate over the options of argv (argv[0] = command or subcommand name) with
 * the table opts. Returns the id of an option (cli->optarg holds its value), 0 at
 * the end (operands are then argv[cli->optind..argc-1]: GNU getopt moves them
 * there, so options may follow operands unless "--" ends them), -1 after
 * printing a usage error (exit 2), or -2 after printing --help (exit 0). Global
 * options (--json, -q, -v, --site, --config, -h) are handled here. Set
 * cli->optind = 0 before the first call. */
int cli_next_opt(struct gg_cli *cli, int argc, char **argv, const struct gg_opt *opts);
/* The index of the first "--" in argv[1..argc-1], or argc when there is none:
 * what follows belongs to the job or to ssh, and getopt must not see it (pass
 * the index as cli_next_opt's argc). */
int cli_dashdash(int argc, char **argv);
/* The value of the current option as a whole number in [min, max]; 0, or the
 * usage exit code after saying what is wrong ("--cpus 'x': expected ..."). */
int cli_opt_int(struct gg_cli *cli, int min, int max, int *out);
/* The getting-started steps (proxy init, site add, doctor, request, connect):
 * --help, and what request says when there is no site to use. */
extern const char cli_getting_started[];
/* The value of the current option as a duration / a size that needs its unit
 * (a bare 0 is taken), a MIG profile in NVIDIA's spelling; 0, or the usage exit
 * code after saying what to type ("--walltime: '4' needs a unit: 4h, ..."). */
int cli_opt_duration(struct gg_cli *cli, int64_t *out);
int cli_opt_size(struct gg_cli *cli, uint64_t *out);
int cli_opt_mig(struct gg_cli *cli, const char **out);
/* Print the help of the current command (or sub-command, cli->sub) to f. */
void cli_print_cmd_help(const struct gg_cli *cli, const struct gg_opt *opts, FILE *f);
/* The fn of a command with sub-commands: runs the one named by argv[1] (with
 * argv + 1), the CMD_DEFAULT one when none is named, or says what is wrong. */
int cli_run_subcommand(struct gg_cli *cli, int argc, char **argv);
/* Loaded config (after --config / $GRIDGPU_CONFIG / $XDG_CONFIG_HOME). Prints the
 * error, sets cli->cfg_exit and returns NULL when it cannot be read. */
struct gg_config *cli_config(struct gg_cli *cli);
/* Every --site given names a site profile; 0, or the exit code after saying
 * which does not (a usage error, with the nearest name). cli_next_opt calls it
 * once at the end of a command's options. */
int cli_check_sites(struct gg_cli *cli);
/* The whole table, commands and sub-commands (parent != NULL) alike. */
const struct gg_cmd *cli_commands(size_t *n);
/* The command name (parent NULL), or parent's sub-command name; NULL if none. */
const struct gg_cmd *cli_find_cmd(const char *parent, const char *name);
int cli_has_subcommands(const struct gg_cmd *cmd);
const struct gg_opt *cli_global_opts(void);
const struct gg_opt *cli_version_opts(void);
/* The candidate nearest to word (Damerau-Levenshtein, a prefix counts 1) when
 * it is near enough to be a likely typo, else NULL. */
const char *cli_nearest(const char *word, const char *const *cands, size_t n);

/* ---- ui.c -------------------------------------------------------------------- */

/* Every printer below takes a printf format whose %s arguments are text that
 * may come from outside (a CE, a node, an image, a file name): each one is
 * passed through gg_str_printable, so no control character or invalid UTF-8
 * reaches the terminal from an argument. The format itself is ours (it may hold
 * "\n" and colour sequences). Print outside text with these, never with
 * printf/fprintf. */

/* "gridgpu: <what>: <err->msg>" on stderr (or a JSON error object on stdout with
 * --json); returns the exit code for err->code. */
int ui_fail(struct gg_cli *cli, const struct gg_err *err, const char *what, ...)
	GG_ATTR_PRINTF(3, 4);
/* A usage error: "gridgpu: <msg>" plus "Try 'gridgpu help CMD'"; returns 2. */
int ui_usage(struct gg_cli *cli, const char *fmt, ...) GG_ATTR_PRINTF(2, 3);
/* The format with printable %s arguments: malloc'd, NULL when out of memory. */
char *ui_vformat(const char *fmt, va_list ap);
char *ui_format(const char *fmt, ...) GG_ATTR_PRINTF(1, 2);
/* Results on stdout / text on stderr, as printf (no line end added). */
void ui_out(const char *fmt, ...) GG_ATTR_PRINTF(1, 2);
void ui_err(const char *fmt, ...) GG_ATTR_PRINTF(1, 2);
/* Text of several lines on stdout, each through gg_str_printable: a line it
 * would change only by escaping backslashes and tabs is printed as it is (a
 * snippet of configuration, a script read back), any other escaped whole, so a
 * value inside (a site profile's, a job description's) cannot reach the
 * terminal raw. */
void ui_out_lines(const char *text);
/* The same on stderr, unless -q: a note of several lines. */
void ui_info_lines(struct gg_cli *cli, const char *text);
/* A note on stderr unless -q. */
void ui_info(struct gg_cli *cli, const char *fmt, ...) GG_ATTR_PRINTF(2, 3);
void ui_warn(struct gg_cli *cli, const char *fmt, ...) GG_ATTR_PRINTF(2, 3);
/* A library's note (a gg_note_fn, ud the cli): a warning, a note unless -q,
 * a verbose one with -v. */
void cli_note(void *ud, enum gg_note kind, const char *msg);
/* The --json error object on stdout, {"error":{"what","message","kind","exit"}};
 * what and msg must be printable already (ui_format). */
void ui_json_error(const char *what, const char *msg, int code);
/* Every string in a --json document goes in by gg_json_text, every member by
 * gg_json_set / gg_json_append / gg_json_object (lib/core/json.h): text that is
 * not valid UTF-8 is kept, escaped, never dropped. */
/* Print a JSON value on stdout (pretty when a TTY), steals the reference. */
int ui_json(json_t *v);
/* The --json document of command cmd ("list", "proxy-info"): doc (an object,
 * or an array that becomes its "items") with "schema": "gridgpu.<cmd>/<N>",
 * printed as ui_json does (steals doc). doc/json/<cmd>.schema.json describes it.
 * A document that lost a member while it was built (gg_json_losses: out of
 * memory) is not printed: the error object is, and EXIT_FAIL returned (main
 * exits 1 then too). */
#define GG_JSON_VERSION 1
int ui_json_doc(const char *cmd, json_t *doc);
/* A session or batch job as every --json document shows it (list, status,
 * request, submit, kill): stable names, ISO 8601 times, no store internals. */
struct gg_record;
json_t *cli_record_json(const struct gg_record *r);
/* A proxy as proxy info and proxy init --json show it (cmd-proxy-info.c). */
struct gg_proxy_report;
json_t *cli_proxy_json(const struct gg_proxy_report *r);
/* A time for --json: ISO 8601 in UTC, or null for none (t <= 0). */
json_t *ui_json_time(int64_t t);
/* Colour on stdout: only when a TTY and NO_COLOR is unset. */
int ui_color(void);
/* Read a passphrase from the terminal with echo off (prompt on /dev/tty), or one
 * line from stdin when from_stdin. Returns a malloc'd string to be cleansed and
 * freed with ui_secret_free, or NULL (err set: no terminal, EOF, interrupted). */
char *ui_read_passphrase(const char *prompt, int from_stdin, struct gg_err *err);
void ui_secret_free(char *s);
/* Progress of a transfer on stderr (a TTY, not -q): a gg_http_progress_fn. */
struct ui_progress;
struct ui_progress *ui_progress_new(struct gg_cli *cli, const char *label);
int ui_progress_cb(void *ud, uint64_t done, uint64_t total);
void ui_progress_end(struct ui_progress *p);

#endif
