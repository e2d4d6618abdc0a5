/* Running a program: its output captured and capped, a deadline, and its
 * process group killed at the end (run.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/run.h"
#include "compat/compat.h"

extern char **environ;

struct runner {
	pid_t pid;
	int fd;    /* our end of the output pipe; -1 at its end */
	int pidfd; /* the child's pidfd, or -1 (an older kernel) */
	struct timespec end;
	int deadline; /* end holds */
};

static long ms_left(const struct runner *x)
{
	if (!x->deadline)
		return -1; /* poll: no limit */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (long)(x->end.tv_sec - now.tv_sec) * 1000 +
		  (x->end.tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

void gg_run_spawn_attr(posix_spawnattr_t *at)
{
	sigset_t none, def;
	sigemptyset(&none);
	sigemptyset(&def);
	const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset(&def, sigs[i]);
	posix_spawnattr_init(at);
	posix_spawnattr_setpgroup(at, 0);
	posix_spawnattr_setsigmask(at, &none);
	posix_spawnattr_setsigdefault(at, &def);
	posix_spawnattr_setflags(at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					     POSIX_SPAWN_SETSIGDEF);
}

static int not_run(const char *prog, int e, struct gg_err *err)
{
	return gg_err_set(err, e == ENOENT ? GG_ENOTFOUND : GG_EFAIL, "%s cannot be run: %s", prog,
			  strerror(e));
}

static int spawn(char *const argv[], struct runner *x, struct gg_err *err)
{
	/* the file is found and checked first: whether a failed exec shows as an
	 * error of posix_spawn or as the child's exit 127 depends on the C
	 * library (and on valgrind) */
	char *file = strchr(argv[0], '/') ? strdup(argv[0]) : gg_which(argv[0]);
	if (!file && strchr(argv[0], '/'))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (!file)
		return not_run(argv[0], ENOENT, err);
	if (access(file, X_OK) < 0) {
		int e = errno;
		free(file);
		return not_run(argv[0], e, err);
	}
	int p[2];
	if (gg_compat_pipe(p, 0) < 0) {
		free(file);
		return gg_err_sys(err, GG_EFAIL, errno, "running %s", argv[0]);
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
	posix_spawnattr_t at;
	gg_run_spawn_attr(&at);
	int e = posix_spawn(&x->pid, file, &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	free(file);
	close(p[1]);
	if (e) {
		close(p[0]);
		return not_run(argv[0], e, err);
	}
	x->fd = p[0];
	x->pidfd = gg_compat_pidfd(x->pid);
	return 0;
}

/* Read the output until its end (every writer gone) or the deadline: 1 at
 * the deadline. Bytes past the cap are read and dropped, so that a program
 * that says much is not blocked on a full pipe. */
static int drain(struct runner *x, size_t cap, struct gg_run *r)
{
	char tmp[4096];
	for (;;) {
		long left = ms_left(x);
		if (left == 0)
			return 1;
		struct pollfd p = {.fd = x->fd, .events = POLLIN};
		int n = poll(&p, 1, (int)left);
		if (n <= 0)
			continue; /* EINTR, or the deadline: tried again above */
		ssize_t k = read(x->fd, tmp, sizeof tmp);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return 0;
		size_t take = (size_t)k < cap - r->len ? (size_t)k : cap - r->len;
		memcpy(r->out + r->len, tmp, take);
		r->len += take;
		r->cut |= take < (size_t)k;
	}
}

/* Until the program itself ends (it may have closed its output and gone
 * on), at most until the deadline: 1 at the deadline. Without a pidfd the
 * wait has no deadline. */
static int ends(struct runner *x)
{
	if (x->pidfd < 0)
		return 0;
	for (;;) {
		long left = ms_left(x);
		if (left == 0)
			return 1;
		struct pollfd p = {.fd = x->pidfd, .events = POLLIN};
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return 0;
	}
}

/* The end of every run: wait for the program (not reaping it: until then its
 * pid, the group's id, cannot be anyone else's), kill what is left of its
 * group, reap it. */
static int finish(struct runner *x)
{
	siginfo_t si;
	while (waitid(P_PID, (id_t)x->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	kill(-x->pid, SIGKILL);
	int status = 0;
	while (waitpid(x->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return GG_RUN_SIGNAL + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int gg_run_capture(char *const argv[], int timeout_ms, size_t cap, struct gg_run *r,
		   struct gg_err *err)
{
	memset(r, 0, sizeof *r);
	if (!argv || !argv[0] || !*argv[0])
		return gg_err_set(err, GG_EUSAGE, "no program to run");
	struct runner x = {.fd = -1, .pidfd = -1, .deadline = timeout_ms > 0};
	clock_gettime(CLOCK_MONOTONIC, &x.end);
	x.end.tv_sec += timeout_ms / 1000;
	x.end.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (x.end.tv_nsec >= 1000000000) {
		x.end.tv_sec++;
		x.end.tv_nsec -= 1000000000;
	}
	if (!(r->out = malloc(cap + 1)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = spawn(argv, &x, err);
	if (rc < 0) {
		gg_run_clear(r);
		return rc;
	}
	r->timed_out = drain(&x, cap, r) || ends(&x);
	close(x.fd);
	if (r->timed_out)
		kill(-x.pid, SIGKILL);
	r->status = finish(&x);
	if (x.pidfd >= 0)
		close(x.pidfd);
	r->out[r->len] = '\0';
	return 0;
}

void gg_run_clear(struct gg_run *r)
{
	free(r->out);
	memset(r, 0, sizeof *r);
}

const char *gg_run_last_line(const struct gg_run *r, char *buf, size_t len)
{
	buf[0] = '\0';
	for (const char *p = r->out ? r->out : ""; *p;) {
		size_t n = strcspn(p, "\r\n");
		const char *s = p;
		while (n && (*s == ' ' || *s == '\t')) {
			s++;
			n--;
		}
		if (n)
			snprintf(buf, len, "%.*s", (int)n, s);
		p = s + n;
		while (*p == '\r' || *p == '\n')
			p++;
	}
	return buf;
}

char *gg_which(const char *name)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/bin:/bin";
	for (const char *dir = path; *dir;) {
		size_t n = strcspn(dir, ":");
		char *p = n ? gg_strdup_printf("%.*s/%s", (int)n, dir, name) : NULL;
		struct stat sb;
		if (p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0)
			return p;
		free(p);
		dir += n + (dir[n] == ':');
	}
	return NULL;
}
