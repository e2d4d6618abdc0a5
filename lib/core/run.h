/* lib/core/run.c: the library's one way to run a program and read what it
 * says. No shell: argv is run as it is. The program gets /dev/null for stdin
 * and a process group of its own, with the usual signals back to their
 * defaults; what it and its children write to stdout and stderr is read
 * together. At the end (or at the deadline) the whole group is killed, so
 * nothing it started (ProxyJump's ssh) outlives the run. */
#ifndef GG_CORE_RUN_H
#define GG_CORE_RUN_H

#include <spawn.h>
#include <stddef.h>

#include "core/core.h"

/* status of a program ended by signal n: GG_RUN_SIGNAL + n */
#define GG_RUN_SIGNAL 256

struct gg_run {
	char *out;     /* stdout and stderr together, NUL-terminated, malloc'd */
	size_t len;    /* bytes in out: at most the cap */
	int cut;       /* it wrote more than the cap (the rest was read and dropped) */
	int status;    /* its exit status 0-255, or GG_RUN_SIGNAL + the signal */
	int timed_out; /* it (or its group) still ran at the deadline: killed */
};

/* Run argv (argv[0] a path, or a name looked up on $PATH by gg_which) for at most
 * timeout_ms (<= 0: no deadline), keeping at most cap bytes of its output.
 * 0 when it ran (r filled, free with gg_run_clear), whatever its status;
 * GG_ENOTFOUND when there is no such program, GG_EFAIL when it could not be
 * started, GG_ENOMEM. */
int gg_run_capture(char *const argv[], int timeout_ms, size_t cap, struct gg_run *r,
		   struct gg_err *err);
void gg_run_clear(struct gg_run *r);

/* The last line of r's output with text in it, leading blanks dropped, in
 * buf (len bytes; "" when none). Returns buf. */
const char *gg_run_last_line(const struct gg_run *r, char *buf, size_t len);

/* posix_spawn's attributes for a program gridgpu runs: a process group of its
 * own, no signal blocked, the usual ones back to their defaults (the caller may
 * ignore some). Also tsource.c's, which runs a token command its own way (its
 * output is a secret, its stderr kept apart). */
void gg_run_spawn_attr(posix_spawnattr_t *at);

/* The executable file name would run as: found on $PATH ("/usr/bin:/bin"
 * when unset or empty; empty entries are skipped). malloc'd;
 * NULL when there is none (or out of memory). */
char *gg_which(const char *name);

#endif
