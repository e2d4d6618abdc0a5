/* Talking to the user: errors, notes, JSON, the passphrase prompt. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
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

/* An integer conversion's argument, read as wide as its length modifier says
 * (len: where the modifier starts in spec; l: how many 'l'). */
static void put_signed(FILE *f, const char *spec, const char *len, int l, va_list *ap)
{
	if (*len == 'z')
		fprintf(f, spec, va_arg(*ap, ssize_t));
	else if (*len == 't')
		fprintf(f, spec, va_arg(*ap, ptrdiff_t));
	else if (*len == 'j')
		fprintf(f, spec, va_arg(*ap, intmax_t));
	else if (l == 2)
		fprintf(f, spec, va_arg(*ap, long long));
	else if (l == 1)
		fprintf(f, spec, va_arg(*ap, long));
	else
		fprintf(f, spec, va_arg(*ap, int));
}

static void put_unsigned(FILE *f, const char *spec, const char *len, int l, va_list *ap)
{
	if (*len == 'z')
		fprintf(f, spec, va_arg(*ap, size_t));
	else if (*len == 't')
		fprintf(f, spec, va_arg(*ap, ptrdiff_t));
	else if (*len == 'j')
		fprintf(f, spec, va_arg(*ap, uintmax_t));
	else if (l == 2)
		fprintf(f, spec, va_arg(*ap, unsigned long long));
	else if (l == 1)
		fprintf(f, spec, va_arg(*ap, unsigned long));
	else
		fprintf(f, spec, va_arg(*ap, unsigned));
}

/* One conversion of a printf format (spec: "%-16s", "%.*s", "%zu") with its
 * argument, onto f; a string argument is made printable first. Returns the
 * characters of fmt it used. */
static size_t format_one(FILE *f, const char *fmt, va_list *ap)
{
	char spec[64];
	size_t n = 0, i = 1;
	spec[n++] = '%';
	int prec = -1;
	while (fmt[i] && n < sizeof spec - 24 && strchr("-+ #0123456789.*hljztL'", fmt[i])) {
		if (fmt[i] == '*') {
			int v = va_arg(*ap, int);
			if (i > 0 && fmt[i - 1] == '.')
				prec = v;
			n += (size_t)snprintf(spec + n, sizeof spec - n, "%d", v);
		} else {
			if (fmt[i] == '.' && fmt[i + 1] >= '0' && fmt[i + 1] <= '9')
				prec = atoi(fmt + i + 1);
			else if (fmt[i] == '.' && fmt[i + 1] != '*')
				prec = 0;
			spec[n++] = fmt[i];
		}
		i++;
	}
	char conv = fmt[i];
	if (!conv)
		return i;
	spec[n++] = conv;
	spec[n] = '\0';
	const char *len = spec + strcspn(spec, "hljztL");
	int l = *len == 'l' ? (len[1] == 'l' ? 2 : 1) : 0;
	switch (conv) {
	case 's': {
		const char *a = va_arg(*ap, const char *);
		if (!a)
			a = "(null)";
		size_t alen = prec >= 0 ? strnlen(a, (size_t)prec) : strlen(a);
		char *safe = gg_str_printable(a, alen);
		/* the precision is spent on the raw bytes: drop it */
		char *dot = strchr(spec, '.');
		if (dot) {
			dot[0] = 's';
			dot[1] = '\0';
		}
		fprintf(f, spec, safe ? safe : "?");
		free(safe);
		break;
	}
	case 'd':
	case 'i': put_signed(f, spec, len, l, ap); break;
	case 'u':
	case 'x':
	case 'X':
	case 'o': put_unsigned(f, spec, len, l, ap); break;
	case 'c': fprintf(f, spec, va_arg(*ap, int)); break;
	case 'p': fprintf(f, spec, va_arg(*ap, void *)); break;
	case 'e':
	case 'E':
	case 'f':
	case 'F':
	case 'g':
	case 'G':
	case 'a':
	case 'A':
		if (*len == 'L')
			fprintf(f, spec, va_arg(*ap, long double));
		else
			fprintf(f, spec, va_arg(*ap, double));
		break;
	case '%': fputc('%', f); break;
	default: break; /* %n and the unknown: nothing */
	}
	return i + 1;
}

char *ui_vformat(const char *fmt, va_list ap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	va_list aq;
	va_copy(aq, ap);
	while (*fmt) {
		size_t lit = strcspn(fmt, "%");
		fwrite(fmt, 1, lit, f);
		fmt += lit;
		if (*fmt == '%')
			fmt += format_one(f, fmt, &aq);
	}
	va_end(aq);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *ui_format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = ui_vformat(fmt, ap);
	va_end(ap);
	return s;
}

/* fmt with its arguments onto f, then an optional line end. */
static void vprint(FILE *f, const char *prefix, const char *fmt, va_list ap, const char *end)
{
	char *s = ui_vformat(fmt, ap);
	fprintf(f, "%s%s%s", prefix, s ? s : "(out of memory)", end);
	free(s);
}

void ui_out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint(stdout, "", fmt, ap, "");
	va_end(ap);
}

void ui_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint(stderr, "", fmt, ap, "");
	va_end(ap);
}

/* The --json error object; a fixed one when even that cannot be made. */
void ui_json_error(const char *what, const char *msg, int code)
{
	size_t lost = gg_json_losses();
	json_t *o = gg_json_object("error",
				   gg_json_object("what", gg_json_text(what ? what : ""), "message",
						  gg_json_text(msg ? msg : ""), "kind",
						  gg_json_text(gg_err_kind(code)), "exit",
						  json_integer(gg_err_exit_code(code)), NULL),
				   "schema", gg_json_text("gridgpu.error/1"), NULL);
	if (gg_json_losses() == lost)
		ui_json(o);
	else {
		json_decref(o);
		printf("{\"error\":{\"exit\":%d,\"kind\":\"%s\",\"message\":\"\",\"what\":\"\"},"
		       "\"schema\":\"gridgpu.error/1\"}\n",
		       gg_err_exit_code(code), gg_err_kind(code));
	}
	fflush(stdout);
}

/* fmt without the quotes around its conversions ("'%s'" becomes "%s"): the
 * --json error's what names the thing bare, as a script compares it; the quotes
 * inside a value are kept. malloc'd, NULL when out of memory. */
static char *unquoted_fmt(const char *fmt)
{
	char *out = strdup(fmt);
	if (!out)
		return NULL;
	char *o = out;
	for (const char *p = fmt; *p;) {
		/* '%s': the quote, % and flags up to the conversion's letter, the quote */
		size_t n = p[0] == '\'' && p[1] == '%' ? strcspn(p + 2, "sdiux") : 0;
		if (p[0] == '\'' && p[1] == '%' && p[2 + n] && p[3 + n] == '\'') {
			memcpy(o, p + 1, n + 2);
			o += n + 2;
			p += n + 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

int ui_fail(struct gg_cli *cli, const struct gg_err *err, const char *what, ...)
{
	va_list ap;
	va_start(ap, what);
	char *ctx = ui_vformat(what, ap);
	va_end(ap);
	int code = err->code ? err->code : GG_EFAIL;
	char *msg = gg_str_printable(err->msg, strlen(err->msg));
	if (cli && cli->json) {
		char *bare_fmt = unquoted_fmt(what), *bare = NULL;
		if (bare_fmt) {
			va_start(ap, what);
			bare = ui_vformat(bare_fmt, ap);
			va_end(ap);
		}
		ui_json_error(bare ? bare : ctx, msg, code);
		free(bare_fmt);
		free(bare);
	}
	fprintf(stderr, "gridgpu: %s: %s\n", ctx ? ctx : "?", msg && *msg ? msg : "failed");
	free(ctx);
	free(msg);
	return gg_err_exit_code(code);
}

int ui_usage(struct gg_cli *cli, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = ui_vformat(fmt, ap);
	va_end(ap);
	if (cli && cli->json)
		ui_json_error(cli->cmd && cli->cmd->name[0] ? cli->cmd->name : "gridgpu", msg,
			      GG_EUSAGE);
	fprintf(stderr, "gridgpu: %s\n", msg ? msg : "usage error");
	free(msg);
	if (cli && cli->cmd && cli->cmd->name[0] && cli->sub)
		fprintf(stderr, "Try 'gridgpu help %s %s'.\n", cli->cmd->name, cli->sub->name);
	else if (cli && cli->cmd && cli->cmd->name[0])
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
	vprint(stderr, "", fmt, ap, "\n");
	va_end(ap);
}

/* One line of ui_out_lines: as it is when gg_str_printable changes nothing in
 * it but its backslashes and tabs (so a configuration snippet or a script still
 * reads back), else escaped whole. */
static void out_line(FILE *f, const char *p, size_t len)
{
	size_t kept = 0; /* each adds one character when escaped: "\\", "\t" */
	for (size_t i = 0; i < len; i++)
		kept += p[i] == '\\' || p[i] == '\t';
	char *safe = gg_str_printable(p, len);
	if (safe && strlen(safe) == len + kept)
		fwrite(p, 1, len, f);
	else
		fputs(safe ? safe : "?", f);
	fputc('\n', f);
	free(safe);
}

static void lines_to(FILE *f, const char *text)
{
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		out_line(f, p, len);
		p += len + (p[len] == '\n');
	}
}

void ui_out_lines(const char *text)
{
	lines_to(stdout, text);
}

void ui_info_lines(struct gg_cli *cli, const char *text)
{
	if (!cli || !cli->quiet)
		lines_to(stderr, text);
}

void ui_warn(struct gg_cli *cli, const char *fmt, ...)
{
	(void)cli;
	va_list ap;
	va_start(ap, fmt);
	vprint(stderr, "gridgpu: warning: ", fmt, ap, "\n");
	va_end(ap);
}

int ui_json(json_t *v)
{
	size_t flags = JSON_SORT_KEYS | (isatty(STDOUT_FILENO) ? JSON_INDENT(2) : JSON_COMPACT);
	int rc = json_dumpf(v, stdout, flags);
	fputc('\n', stdout);
	json_decref(v);
	return rc;
}

/* One --json document: {"schema": "gridgpu.<cmd>/N", ...} (a list becomes its
 * "items"). A document that lost a member while it was built (gg_json_losses)
 * is not printed: the error object is, and gridgpu exits 1 (main). */
int ui_json_doc(const char *cmd, json_t *doc)
{
	if (doc && !json_is_object(doc))
		doc = gg_json_object("items", doc, NULL);
	char *s = gg_strdup_printf("gridgpu.%s/%d", cmd, GG_JSON_VERSION);
	gg_json_set(doc, "schema", s ? gg_json_text(s) : NULL);
	free(s);
	if (!doc || gg_json_losses()) {
		json_decref(doc);
		ui_err("gridgpu: --json: a value could not be put in the document (out of "
		       "memory); nothing printed\n");
		ui_json_error("--json", "a value could not be put in the document (out of memory)",
			      GG_ENOMEM);
		return EXIT_FAIL;
	}
	return ui_json(doc);
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
	char *label; /* printable */
	struct timespec start, last;
	int shown;
};

int ui_progress_cb(void *ud, uint64_t done, uint64_t total)
{
	struct ui_progress *p = ud;
	if (!p || p->cli->quiet || !isatty(STDERR_FILENO))
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
		p->label = gg_str_printable(label, strlen(label));
		if (!p->label) {
			free(p);
			return NULL;
		}
	}
	return p;
}

void ui_progress_end(struct ui_progress *p)
{
	if (p && p->shown)
		fputc('\n', stderr);
	if (p)
		free(p->label);
	free(p);
}
