/* Talking to the user: errors, notes, JSON, the passphrase prompt. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli.h"

int ui_fail(struct gg_cli *cli, const struct gg_err *err, const char *what, ...)
{
	char ctx[512];
	va_list ap;
	va_start(ap, what);
	vsnprintf(ctx, sizeof ctx, what, ap);
	va_end(ap);
	int code = err->code ? err->code : GG_EFAIL;
	if (cli && cli->json) {
		json_t *o = json_pack("{s:{s:s,s:s,s:s,s:i}}", "error", "what", ctx, "message",
				      err->msg, "kind", gg_err_kind(code), "exit",
				      gg_err_exit_code(code));
		if (o)
			ui_json(o);
	}
	fprintf(stderr, "gridgpu: %s: %s\n", ctx, err->msg[0] ? err->msg : "failed");
	return gg_err_exit_code(code);
}

int ui_usage(struct gg_cli *cli, const char *fmt, ...)
{
	va_list ap;
	fputs("gridgpu: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cli && cli->cmd && cli->cmd->name[0])
		fprintf(stderr, "Try 'gridgpu help %s'.\n", cli->cmd->name);
	else
		fprintf(stderr, "Try 'gridgpu --help'.\n");
	return EXIT_USAGE;
}

void ui_info(struct gg_cli *cli, const char *fmt, ...)
{
	if (cli && cli->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ui_warn(struct gg_cli *cli, const char *fmt, ...)
{
	(void)cli;
	va_list ap;
	fputs("gridgpu: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ui_json(json_t *v)
{
	size_t flags = JSON_SORT_KEYS | (isatty(STDOUT_FILENO) ? JSON_INDENT(2) : JSON_COMPACT);
	int rc = json_dumpf(v, stdout, flags);
	fputc('\n', stdout);
	json_decref(v);
	return rc;
}

int ui_color(void)
{
	const char *nc = getenv("NO_COLOR");
	return isatty(STDOUT_FILENO) && !(nc && *nc);
}

void ui_secret_free(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

/* Read one line from fd into a growing buffer; cleanses what it drops. */
static char *read_line_fd(int fd, struct gg_err *err)
{
	size_t cap = 128, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		return NULL;
	}
	for (;;) {
		char ch;
		ssize_t r = read(fd, &ch, 1);
		if (r < 0 && errno == EINTR) {
			OPENSSL_cleanse(buf, cap);
			free(buf);
			gg_err_set(err, GG_EINTR, "interrupted");
			return NULL;
		}
		if (r <= 0) {
			if (n == 0) {
				free(buf);
				gg_err_set(err, GG_ECRED, "no passphrase given (end of input)");
				return NULL;
			}
			break;
		}
		if (ch == '\n')
			break;
		if (n + 1 == cap) {
			char *nb = malloc(cap * 2);
			if (!nb) {
				OPENSSL_cleanse(buf, cap);
				free(buf);
				gg_err_set(err, GG_ENOMEM, "out of memory");
				return NULL;
			}
			memcpy(nb, buf, n);
			OPENSSL_cleanse(buf, cap);
			free(buf);
			buf = nb;
			cap *= 2;
		}
		buf[n++] = ch;
	}
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	return buf;
}

static volatile sig_atomic_t got_sigint;
static void on_sigint(int sig)
{
	(void)sig;
	got_sigint = 1;
}

char *ui_read_passphrase(const char *prompt, int from_stdin, struct gg_err *err)
{
	if (from_stdin)
		return read_line_fd(STDIN_FILENO, err);
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		gg_err_set(err, GG_ECRED,
			   "no terminal to ask for the passphrase: use --pass-stdin in scripts");
		return NULL;
	}
	struct termios old, noecho;
	int have_tty = tcgetattr(fd, &old) == 0;
	/* Ctrl-C while echo is off must restore the terminal: catch it, without
	 * SA_RESTART, so read() returns EINTR. */
	struct sigaction sa = {0}, oldsa;
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	got_sigint = 0;
	sigaction(SIGINT, &sa, &oldsa);
	if (have_tty) {
		noecho = old;
		noecho.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
		noecho.c_lflag |= ICANON;
		tcsetattr(fd, TCSAFLUSH, &noecho);
	}
	if (write(fd, prompt, strlen(prompt)) < 0) {
		/* nothing useful to do: the read below still works */
	}
	char *line = read_line_fd(fd, err);
	if (have_tty)
		tcsetattr(fd, TCSAFLUSH, &old);
	if (write(fd, "\n", 1) < 0) {
	}
	sigaction(SIGINT, &oldsa, NULL);
	close(fd);
	if (got_sigint && line) {
		ui_secret_free(line);
		gg_err_set(err, GG_EINTR, "interrupted");
		return NULL;
	}
	return line;
}

/* A progress line on stderr, redrawn at most 10 times a second. */
struct ui_progress {
	struct gg_cli *cli;
	const char *label;
	struct timespec start, last;
	int shown;
};

int ui_progress_cb(void *ud, uint64_t done, uint64_t total)
{
	struct ui_progress *p = ud;
	if (p->cli->quiet || !isatty(STDERR_FILENO))
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!p->start.tv_sec && !p->start.tv_nsec)
		p->start = now;
	double since = (double)(now.tv_sec - p->last.tv_sec) +
		       (double)(now.tv_nsec - p->last.tv_nsec) / 1e9;
	if (p->shown && since < 0.1 && done < total)
		return 0;
	p->last = now;
	p->shown = 1;
	double el = (double)(now.tv_sec - p->start.tv_sec) +
		    (double)(now.tv_nsec - p->start.tv_nsec) / 1e9;
	char d[32], t[32], r[32], eta[32] = "";
	gg_size_format(done, d, sizeof d);
	gg_size_format(total, t, sizeof t);
	double rate = el > 0 ? (double)done / el : 0;
	gg_size_format((uint64_t)rate, r, sizeof r);
	if (rate > 0 && total > done) {
		char e[24];
		snprintf(eta, sizeof eta, " ETA %s",
			 gg_duration_format((int64_t)((double)(total - done) / rate), e, sizeof e));
	}
	int pct = total ? (int)(100.0 * (double)done / (double)total) : 0;
	fprintf(stderr, "\r\033[K  %s %3d%% %s / %s, %s/s%s", p->label, pct, d, t, r, eta);
	return 0;
}

struct ui_progress *ui_progress_new(struct gg_cli *cli, const char *label)
{
	struct ui_progress *p = calloc(1, sizeof *p);
	if (p) {
		p->cli = cli;
		p->label = label;
	}
	return p;
}

void ui_progress_end(struct ui_progress *p)
{
	if (p && p->shown)
		fputc('\n', stderr);
	free(p);
}
