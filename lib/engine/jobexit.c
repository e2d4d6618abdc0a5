/* The batch wrapper's file of how the command ended (GG_JOB_EXIT_NAME): text
 * from the worker node, read by the client when it sees the job fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sync.h"
#include "gridgpu/engine.h"

#define MAGIC "gridgpu-job-exit 1\n"

void gg_job_exit_clear(struct gg_job_exit *x)
{
	free(x->tail);
	memset(x, 0, sizeof *x);
}

/* A whole number 0..max in [p, p + n); -1 when not one. */
static int64_t number(const char *p, size_t n, int64_t max)
{
	int64_t v = 0;
	if (n == 0 || n > 19)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (max - (p[i] - '0')) / 10)
			return -1; /* not a digit, or past max (never past INT64_MAX) */
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* One "KEY VALUE" line of the head; unknown keys are a later wrapper's. */
static int head_line(const char *p, size_t n, struct gg_job_exit *x, struct gg_err *err)
{
	static const struct {
		const char *key;
		int64_t max;
	} keys[] = {
		{"exit ", 255}, {"oom-kills ", INT64_MAX / 10}, {"stderr-bytes ", INT64_MAX / 10}};
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		size_t kl = strlen(keys[k].key);
		if (n < kl || memcmp(p, keys[k].key, kl))
			continue;
		int64_t v = number(p + kl, n - kl, keys[k].max);
		if (v < 0)
			return gg_err_set(err, GG_EPROTO, "its '%.*s' is not a number in range",
					  (int)kl - 1, p);
		int64_t *f[] = {&x->status, &x->oom_kills, &x->stderr_bytes};
		*f[k] = v;
		return 0;
	}
	return 0;
}

/* Append one stderr line, bounded and made printable, to out (o bytes used). */
static size_t put_line(char *out, size_t o, const char *p, size_t n)
{
	size_t keep = n > GG_JOB_EXIT_LINE ? GG_JOB_EXIT_LINE : n;
	char *safe = gg_str_printable(p, keep);
	if (!safe)
		return o;
	if (o)
		out[o++] = '\n';
	size_t sl = strlen(safe);
	memcpy(out + o, safe, sl);
	o += sl;
	free(safe);
	if (keep < n)
		o += (size_t)sprintf(out + o, " [%zu more bytes]", n - keep);
	return o;
}

/* The last GG_JOB_EXIT_LINES lines of raw stderr bytes: a first line cut by the
 * wrapper's bound dropped, blank lines at the end skipped. */
static char *tail_lines(const char *p, size_t n, int cut)
{
	if (cut) {
		const char *nl = memchr(p, '\n', n);
		if (nl && (size_t)(nl - p) + 1 < n) {
			n -= (size_t)(nl - p) + 1;
			p = nl + 1;
		}
	}
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (!n)
		return NULL;
	size_t start = n;
	for (int lines = 0; start > 0; start--)
		if (p[start - 1] == '\n' && ++lines == GG_JOB_EXIT_LINES)
			break;
	/* each line: 4 bytes an escaped byte, the "more bytes" note, a newline */
	char *out = malloc(GG_JOB_EXIT_LINES * (4 * GG_JOB_EXIT_LINE + 40) + 1);
	size_t o = 0;
	for (size_t i = start; out && i < n;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (p + i)) : n - i;
		o = put_line(out, o, p + i, len);
		i += len + 1;
	}
	if (out)
		out[o] = '\0';
	return out;
}

int gg_job_exit_parse(const char *text, size_t len, struct gg_job_exit *x, struct gg_err *err)
{
	memset(x, 0, sizeof *x);
	x->status = x->stderr_bytes = -1;
	size_t ml = strlen(MAGIC);
	if (len < ml || memcmp(text, MAGIC, ml))
		return gg_err_set(err, GG_EPROTO, "not the wrapper's file (no '%.*s' line)",
				  (int)ml - 1, MAGIC);
	const char *p = text + ml, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n == 6 && !memcmp(p, "stderr", 6)) {
			p += n + (nl != NULL);
			break;
		}
		int rc = head_line(p, n, x, err);
		if (rc < 0)
			return rc;
		p += n + (nl != NULL);
	}
	if (x->status < 0)
		return gg_err_set(err, GG_EPROTO, "it has no 'exit' line");
	size_t tn = (size_t)(end - p);
	if (tn > GG_JOB_EXIT_TAIL) { /* more than the wrapper writes: its end */
		p = end - GG_JOB_EXIT_TAIL;
		tn = GG_JOB_EXIT_TAIL;
	}
	/* the wrapper kept the end of a longer stderr: its first line is cut */
	x->tail = tail_lines(p, tn, x->stderr_bytes > 0 && (uint64_t)x->stderr_bytes > tn);
	return 0;
}

/* The signal's name for the user ("KILL"), NULL when not a common one. */
static const char *signame(int s)
{
	static const char *const names[] = {
		[1] = "HUP",   [2] = "INT",   [3] = "QUIT",  [4] = "ILL",
		[6] = "ABRT",  [7] = "BUS",   [8] = "FPE",   [9] = "KILL",
		[11] = "SEGV", [13] = "PIPE", [14] = "ALRM", [15] = "TERM"};
	return s > 0 && s < (int)(sizeof names / sizeof names[0]) ? names[s] : NULL;
}

/* The one decision of how a command ended: 'o' out of memory, 's' a signal
 * (the shell's 128 + N), 'x' an exit status. */
static char how_ended(int64_t status, int64_t oom_kills)
{
	if (oom_kills > 0 && status > 128)
		return 'o';
	return status > 128 && status < 128 + 32 ? 's' : 'x';
}

const char *gg_job_exit_brief(int64_t status, int64_t oom_kills, char *buf, size_t len)
{
	char h = how_ended(status, oom_kills);
	if (h == 'o')
		snprintf(buf, len, "out of memory");
	else if (h == 's')
		snprintf(buf, len, "signal %d", (int)status - 128);
	else
		snprintf(buf, len, "exited %lld", (long long)status);
	return buf;
}

char *gg_job_exit_summary(int64_t status, int64_t oom_kills)
{
	char h = how_ended(status, oom_kills);
	if (h == 'o')
		return gg_strdup_printf("the command ran out of its memory: the batch system "
					"killed it (%lld out-of-memory kill%s in the job)",
					(long long)oom_kills, oom_kills == 1 ? "" : "s");
	if (h == 's') {
		const char *n = signame((int)status - 128);
		return gg_strdup_printf("the command was killed by signal %d%s%s%s",
					(int)status - 128, n ? " (" : "", n ? n : "", n ? ")" : "");
	}
	return gg_strdup_printf("the command exited %lld", (long long)status);
}
