/* A command's output streamed by the user's OpenSSH (bulk streams: freeze
 * --session): ssh runs with a config gridgpu wrote (the site's hops, their
 * masters, the session's pinned host key), its output goes through a thread
 * that counts it (splice: the bytes are not copied) into the pipe the caller
 * reads, and the last 4 KiB of its error output are kept. libssh2 1.10 moves
 * a single stream through three hops at about 0.6 of OpenSSH's rate; OpenSSH
 * is used where the user has it. */
#include "ssh/ssh.h"
#include "compat/compat.h"
#include "core/run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct gg_ssh_ostream {
	pid_t pid;
	int out, errfd; /* ssh's stdout and stderr */
	int wfd;        /* the caller's pipe */
	int stop[2];
	pthread_t th;
	atomic_ullong bytes;
	char ebuf[4096];
	size_t elen;
	int broken; /* the reader went away */
};

uint64_t gg_ssh_ostream_bytes(struct gg_ssh_ostream *x)
{
	return x ? (uint64_t)atomic_load(&x->bytes) : 0;
}

/* Some of stdout into the caller's pipe: 1 moved, 0 end of file, -1 reader gone. */
static int move_out(struct gg_ssh_ostream *x)
{
	ssize_t n = gg_compat_splice(x->out, x->wfd, 1 << 20);
	if (n < 0 && errno == EINVAL) { /* no splice here: copy */
		char buf[65536];
		n = read(x->out, buf, sizeof buf);
		for (ssize_t off = 0; n > 0 && off < n;) {
			ssize_t w = write(x->wfd, buf + off, (size_t)(n - off));
			if (w <= 0)
				return -1;
			off += w;
		}
	}
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -1;
	atomic_fetch_add(&x->bytes, (unsigned long long)n);
	return n > 0;
}

void gg_ssh_keep_tail(char *buf, size_t size, size_t *len, const char *b, size_t n)
{
	size_t cap = size - 1;
	if (n > cap) {
		b += n - cap;
		n = cap;
	}
	if (*len + n > cap) {
		size_t drop = *len + n - cap;
		memmove(buf, buf + drop, *len - drop);
		*len -= drop;
	}
	memcpy(buf + *len, b, n);
	*len += n;
}

static void *ostream_run(void *arg)
{
	struct gg_ssh_ostream *x = arg;
	int out_open = 1, err_open = 1;
	while (out_open || err_open) {
		struct pollfd p[3] = {{out_open ? x->out : -1, POLLIN, 0},
				      {err_open ? x->errfd : -1, POLLIN, 0},
				      {x->stop[0], POLLIN, 0}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents)
			break;
		if (p[0].revents) {
			int m = move_out(x);
			if (m < 0)
				x->broken = 1;
			if (m <= 0)
				out_open = 0;
			if (m < 0)
				break;
		}
		if (p[1].revents) {
			char b[1024];
			ssize_t n = read(x->errfd, b, sizeof b);
			if (n > 0)
				gg_ssh_keep_tail(x->ebuf, sizeof x->ebuf, &x->elen, b, (size_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				err_open = 0;
		}
	}
	close(x->wfd); /* end of file for the reader */
	x->wfd = -1;
	return NULL;
}

static void ostream_free(struct gg_ssh_ostream *x)
{
	int fds[] = {x->out, x->errfd, x->wfd, x->stop[0], x->stop[1]};
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(x);
}

/* The argv of the user's ssh, for a stream and for its master: the config
 * gridgpu wrote, BatchMode (nothing may prompt), master ("ControlMaster=..."),
 * the master's socket ctl (NULL: the config's), ssh's compression off (as the
 * peer way has it), opts (NULL-ended) before "--", host and command (NULL:
 * none). Its strings are the caller's or a's. */
struct ssh_argv {
	char *v[24];
	char ctl[200];
};

static char **ssh_argv(struct ssh_argv *a, const char *config, const char *master, const char *ctl,
		       char *const opts[], const char *host, const char *command)
{
	char *head[] = {"ssh",          "-F", (char *)config,  "-o", "BatchMode=yes", "-o",
			(char *)master, "-o", "Compression=no"};
	size_t n = 0;
	for (size_t i = 0; i < sizeof head / sizeof *head; i++)
		a->v[n++] = head[i];
	if (ctl) {
		snprintf(a->ctl, sizeof a->ctl, "ControlPath=%s", ctl);
		a->v[n++] = "-o";
		a->v[n++] = a->ctl;
	}
	for (size_t i = 0; opts[i] && n < sizeof a->v / sizeof *a->v - 4; i++)
		a->v[n++] = opts[i];
	a->v[n++] = "--";
	a->v[n++] = (char *)host;
	if (command)
		a->v[n++] = (char *)command;
	a->v[n] = NULL;
	return a->v;
}

/* ssh with stdout and stderr on pipes of x; its own process group. */
static int spawn_ssh(struct gg_ssh_ostream *x, char *const argv[], struct gg_err *err)
{
	int o[2], e[2];
	if (gg_compat_pipe(o, 0) < 0)
		return gg_err_sys(err, GG_EIO, errno, "pipe");
	if (gg_compat_pipe(e, 0) < 0) {
		close(o[0]);
		close(o[1]);
		return gg_err_sys(err, GG_EIO, errno, "pipe");
	}
	gg_compat_pipe_size(o[0], 1 << 20);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, o[1], 1);
	posix_spawn_file_actions_adddup2(&fa, e[1], 2);
	gg_run_spawn_attr(&at);
	int rc = posix_spawnp(&x->pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(o[1]);
	close(e[1]);
	x->out = o[0];
	x->errfd = e[0];
	if (rc) {
		x->pid = -1;
		return gg_err_sys(err, GG_EFAIL, rc, "running ssh (install openssh-client)");
	}
	return 0;
}

int gg_ssh_ostream_start(const char *config, const char *ctl, const char *host, const char *command,
			 int *fd, struct gg_ssh_ostream **out, struct gg_err *err)
{
	*out = NULL;
	*fd = -1;
	struct gg_ssh_ostream *x = calloc(1, sizeof *x);
	if (!x)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	x->out = x->errfd = x->wfd = x->stop[0] = x->stop[1] = -1;
	x->pid = -1;
	/* no master of its own (a master that lingers would hold the pipes) */
	struct ssh_argv a;
	char *opts[] = {"-T", NULL};
	char **argv = ssh_argv(&a, config, "ControlMaster=no", ctl, opts, host, command);
	int p[2] = {-1, -1};
	int rc = gg_compat_pipe(p, 0) < 0 || gg_compat_pipe(x->stop, 0) < 0
			 ? gg_err_sys(err, GG_EIO, errno, "pipe")
			 : 0;
	x->wfd = p[1];
	if (rc == 0) {
		gg_compat_pipe_size(p[1], 1 << 20);
		rc = spawn_ssh(x, argv, err);
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = rc == 0 ? pthread_create(&x->th, NULL, ostream_run, x) : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0 && e)
		rc = gg_err_sys(err, GG_EFAIL, e, "starting a thread");
	if (rc < 0) {
		if (x->pid > 0) {
			kill(-x->pid, SIGTERM);
			waitpid(x->pid, NULL, 0);
		}
		if (p[0] >= 0)
			close(p[0]);
		ostream_free(x);
		return rc;
	}
	*fd = p[0];
	*out = x;
	return 0;
}

int gg_ssh_ostream_finish(struct gg_ssh_ostream *x, int abort, int *status, char **errtext,
			  struct gg_err *err)
{
	if (abort) {
		kill(-x->pid, SIGTERM);
		if (write(x->stop[1], "x", 1) < 0) {
			/* one byte, once: the pipe cannot be full */
		}
	}
	pthread_join(x->th, NULL);
	if (x->broken)
		kill(-x->pid, SIGTERM);
	int st = 0;
	while (waitpid(x->pid, &st, 0) < 0 && errno == EINTR)
		;
	kill(-x->pid, SIGKILL); /* what ssh started (ProxyJump's ssh) */
	x->ebuf[x->elen] = '\0';
	int rc = 0, code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (code == 255 && !abort) {
		/* ssh's own failure: its last line says why */
		char *l = x->ebuf, *nl;
		while ((nl = strchr(l, '\n')) && nl[1])
			l = nl + 1;
		l[strcspn(l, "\r\n")] = '\0';
		char *said = gg_str_printable(l, strlen(l));
		rc = gg_err_set(err, GG_ENET, "ssh failed: %s",
				said && *said ? said : "(it said nothing)");
		free(said);
	}
	if (status)
		*status = rc < 0 ? -1 : code;
	if (errtext)
		*errtext = rc == 0 && x->elen ? strdup(x->ebuf) : NULL;
	ostream_free(x);
	return rc;
}

/* ---- one master for a few commands ------------------------------------------------------ */

int gg_ssh_omaster_open(const char *config, const char *host, const char *ctl, int persist,
			struct gg_err *err)
{
	char log[220], keep[48];
	snprintf(keep, sizeof keep, "ControlPersist=%ds", persist);
	snprintf(log, sizeof log, "%s.log", ctl);
	struct ssh_argv a;
	char *opts[] = {"-o", keep, "-E", log, "-N", "-f", NULL};
	char **argv = ssh_argv(&a, config, "ControlMaster=yes", ctl, opts, host, NULL);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	gg_run_spawn_attr(&at);
	pid_t pid;
	int e = posix_spawnp(&pid, "ssh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e)
		return gg_err_sys(err, GG_EFAIL, e, "running ssh (install openssh-client)");
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && gg_ssh_master_alive(ctl)) {
		unlink(log);
		return 0;
	}
	char line[512] = "";
	FILE *f = fopen(log, "re");
	for (char b[512]; f && fgets(b, sizeof b, f);)
		if (b[strspn(b, " \t\r\n")])
			memcpy(line, b, sizeof line);
	if (f)
		fclose(f);
	unlink(log);
	line[strcspn(line, "\r\n")] = '\0';
	char *said = gg_str_printable(line, strlen(line));
	int rc = gg_err_set(err, GG_ENET, "ssh failed: %s",
			    said && *said ? said : "(it said nothing)");
	free(said);
	return rc;
}

void gg_ssh_omaster_close(const char *host, const char *ctl)
{
	char *argv[] = {"ssh", "-F", "none", "-S", (char *)ctl, "-O", "exit", (char *)host, NULL};
	struct gg_run r;
	struct gg_err e = {0};
	if (gg_run_capture(argv, 10000, 1024, &r, &e) == 0)
		gg_run_clear(&r);
	unlink(ctl);
}

int gg_ssh_ocapture(const char *config, const char *ctl, const char *host, const char *command,
		    size_t max, char **out, size_t *len, int *status, char **errtext,
		    struct gg_err *err)
{
	int fd = -1;
	struct gg_ssh_ostream *x = NULL;
	*out = NULL;
	*len = 0;
	int rc = gg_ssh_ostream_start(config, ctl, host, command, &fd, &x, err);
	if (rc < 0)
		return rc;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int over = 0;
	for (ssize_t r = 1; buf && r > 0;) {
		if (n + 1 >= cap) {
			char *nb = cap * 2 <= max + 2 ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				over = 1;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r > 0)
			n += (size_t)r;
		else if (r < 0 && errno == EINTR)
			r = 1;
	}
	close(fd);
	rc = gg_ssh_ostream_finish(x, over || !buf, status, errtext, err);
	if (rc == 0 && (!buf || over || n > max))
		rc = gg_err_set(err, buf ? GG_EPROTO : GG_ENOMEM,
				"the command's output is larger than %zu bytes", max);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
