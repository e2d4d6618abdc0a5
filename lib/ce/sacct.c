/* The slurm+ssh backend's parser of what it asks about jobs squeue no longer
 * shows (outside text): sacct's "ID|STATE|EXITCODE" lines and the job
 * directories' "dir|ID|EXIT[|STAGE|STAGING'S FAILURE]" lines; and Slurm's end states in the user's
 * words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"

/* A field of at most n bytes, printable ASCII, into out (size len). */
static void field(const char *p, size_t n, char *out, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < len; i++) {
		unsigned char c = (unsigned char)p[i];
		out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[k] = '\0';
}

/* 0-255 from the digits of s, -1 when s is not one. */
static int exit_code(const char *s)
{
	size_t n = strspn(s, "0123456789");
	if (n == 0 || n > 3 || (s[n] && s[n] != ':' && s[n] != '\n'))
		return -1;
	int v = atoi(s);
	return v <= 255 ? v : -1;
}

static struct gg_ce_result *find(const char *id, const char *const *ids, size_t n,
				 struct gg_ce_result *res)
{
	for (size_t i = 0; i < n; i++)
		if (!res[i].code && !strcmp(ids[i], id))
			return &res[i];
	return NULL;
}

static void set(struct gg_ce_result *r, enum gg_ce_state st, const char *raw, char *reason)
{
	r->code = 200;
	r->state = st;
	free(r->raw_state);
	r->raw_state = raw ? strdup(raw) : NULL;
	free(r->reason);
	r->reason = reason;
}

#define WALLTIME_WORD "Slurm: TIMEOUT"

/* The end states Slurm gives a job it stopped, in the user's words. */
static const struct {
	const char *state, *words;
} ends[] = {
	{"OUT_OF_MEMORY", "out of memory: Slurm stopped the job at its memory limit; ask for "
			  "more with --memory"},
	{"NODE_FAIL", "the node running the job failed; submit it again"},
	{"BOOT_FAIL", "the node for the job failed to start; submit it again"},
	{"PREEMPTED", "preempted: Slurm gave its resources to a job of higher priority"},
	{"DEADLINE", "its deadline passed before it could end"},
};

char *gg_slurm_end_phrase(const char *state, const char *exit)
{
	size_t n = strcspn(state, " +");
	if (gg_slurm_state(state) != GG_CE_FAILED)
		return NULL;
	if (n == 7 && !strncmp(state, "TIMEOUT", 7))
		return strdup(WALLTIME_WORD);
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
		if (strlen(ends[i].state) == n && !strncmp(state, ends[i].state, n))
			return gg_strdup_printf("%s (Slurm: %s)", ends[i].words, ends[i].state);
	int code = exit ? exit_code(exit) : -1;
	if (code > 0)
		return gg_strdup_printf("the job ended with exit %d (Slurm: %.*s)", code, (int)n,
					state);
	return gg_strdup_printf("Slurm: %.*s", (int)n, state);
}

int gg_slurm_failed_walltime(const char *failed)
{
	size_t n = strlen(WALLTIME_WORD);
	return failed && !strncmp(failed, WALLTIME_WORD, n) && (!failed[n] || failed[n] == '\n');
}

/* sacct's line: the state Slurm accounted, its exit code. */
static void sacct_line(const char *f[3], const char *const *ids, size_t n, struct gg_ce_result *res)
{
	struct gg_ce_result *r = find(f[0], ids, n, res);
	enum gg_ce_state st = gg_slurm_state(f[1]);
	if (!r || st == GG_CE_UNKNOWN)
		return;
	set(r, st, f[1], gg_slurm_end_phrase(f[1], f[2]));
}

/* A job directory's line: the exit status the job script left, or none;
 * its staging's failure (why, the line the staging left) is the job's, and
 * outputs the login node is still putting (stage "out") make it finishing,
 * whatever Slurm says of it. */
static void dir_line(const char *f[3], const char *stage, const char *why, const char *const *ids,
		     size_t n, const unsigned char *asked, struct gg_ce_result *res)
{
	int out = stage && !strcmp(stage, "out");
	for (size_t i = 0; asked && ((why && why[0]) || out) && i < n; i++)
		if (asked[i] && !strcmp(ids[i], f[1])) {
			if (why && why[0])
				set(&res[i], GG_CE_FAILED, "FAILED", strdup(why));
			else
				set(&res[i], GG_CE_FINISHING, "STAGE_OUT",
				    strdup("its outputs are being put to storage from the login "
					   "node"));
			return;
		}
	struct gg_ce_result *r = find(f[1], ids, n, res);
	if (!r)
		return;
	int code = exit_code(f[2]);
	if (code == 0)
		set(r, GG_CE_FINISHED, "COMPLETED", NULL);
	else if (code > 0)
		set(r, GG_CE_FAILED, "FAILED",
		    gg_strdup_printf("the job ended with exit %d", code));
	else
		set(r, GG_CE_FAILED, "UNKNOWN",
		    strdup("Slurm no longer knows the job and it left no exit status"));
}

void gg_slurm_parse_sacct(const char *text, size_t len, const char *const *ids, size_t n,
			  struct gg_ce_result *res)
{
	/* the results this text answers (a line of its may replace another's);
	 * out of memory: a staging's word is not taken over sacct's */
	unsigned char *asked = calloc(n ? n : 1, 1);
	for (size_t i = 0; asked && i < n; i++)
		asked[i] = !res[i].code;
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[512], *f[3] = {line, NULL, NULL};
		field(p, ln, line, sizeof line);
		p += ln + 1;
		for (int k = 1; k < 3; k++) {
			char *bar = f[k - 1] ? strchr(f[k - 1], '|') : NULL;
			if (bar) {
				*bar = '\0';
				f[k] = bar + 1;
			}
		}
		if (!f[2])
			continue;
		char *more = strchr(f[2], '|'), *why = NULL;
		if (more)
			*more++ = '\0';
		if (more && (why = strchr(more, '|')))
			*why++ = '\0';
		if (!strcmp(f[0], "dir"))
			dir_line((const char **)f, more, why, ids, n, asked, res);
		else
			sacct_line((const char **)f, ids, n, res);
	}
	free(asked);
}
