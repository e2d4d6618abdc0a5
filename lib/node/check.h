/* gridgpu check's node side (check.c): the probe run in the session and in the image,
 * the parser of its answer, and the comparison of the two answers (compare.c). */
#ifndef GG_LIB_NODE_CHECK_H
#define GG_LIB_NODE_CHECK_H

#include <stddef.h>

#include "core/core.h"

#define GG_CHECK_MAX_ENV     1024
#define GG_CHECK_MAX_MODULES 64
/* The most the probe's answer may be (the environment is most of it). */
#define GG_CHECK_MAX_TEXT (1u << 20)

enum gg_check_mod_state { GG_CHECK_MOD_OK, GG_CHECK_MOD_NO, GG_CHECK_MOD_NOPYTHON };

struct gg_check_module {
	char *name;
	enum gg_check_mod_state state;
	char *text; /* ok: its file ("(built in)"); no: python's last line */
};

struct gg_check_var {
	char *name, *value;
};

/* What the probe said in one place. */
struct gg_check_report {
	int exit_status;
	char *home;  /* $HOME ("" when unset) */
	char *which; /* where the command's first word resolves, "-" when nowhere */
	struct gg_check_module *mods;
	size_t nmods;
	struct gg_check_var *env;
	size_t nenv;
};

/* The probe as sh words for `/bin/sh -c` (a login's command): it prints its report
 * on stdout and runs cmd with its output on stderr. mods: Python modules to import
 * (gg_check_module_ok). malloc'd; NULL when out of memory. */
char *gg_check_probe_words(const char *const *mods, size_t nmods, char *const *cmd, size_t ncmd);
/* 1 for a module name the probe can carry: dotted Python identifiers. */
int gg_check_module_ok(const char *m);

/* The probe's answer (outside text). GG_EPROTO for anything it does not write;
 * rep is to be cleared (gg_check_report_clear) either way. */
int gg_check_report_parse(const char *text, size_t len, struct gg_check_report *rep,
			  struct gg_err *err);
void gg_check_report_clear(struct gg_check_report *rep);
const char *gg_check_env_get(const struct gg_check_report *rep, const char *name);

/* One difference between the session (s) and the image (j). */
enum gg_check_kind { GG_CHECK_EXIT, GG_CHECK_COMMAND, GG_CHECK_MODULE, GG_CHECK_ENV };
struct gg_check_diff {
	enum gg_check_kind kind;
	char *name;            /* the module's, the variable's, the command's first word */
	char *session, *image; /* escaped; NULL: not there */
	char *line;            /* one line saying it and what to do */
};

/* The differences of j (the image through the batch wrapper) from s (the session),
 * for the command whose first word is cmd0. Variables a session has by design (its
 * own: GRIDGPU_SESSION_DIR...) and the shell's own (PWD, SHLVL...) are not compared;
 * a command or module that resolves under the image run's $HOME is a difference (the
 * site's home is not in the image). *out (malloc'd, *n entries) is freed with
 * gg_check_diffs_free. */
int gg_check_compare(const struct gg_check_report *s, const struct gg_check_report *j,
		     const char *cmd0, struct gg_check_diff **out, size_t *n, struct gg_err *err);
void gg_check_diffs_free(struct gg_check_diff *d, size_t n);
/* 1 when the variable is not compared. */
int gg_check_env_ignored(const char *name);

#endif
