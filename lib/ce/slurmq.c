/* Why Slurm holds a job in its queue: squeue on the site's login node, its
 * output parsed (outside text: every field kept printable and bounded) and
 * put in the user's words with Slurm's own code beside them. */
#include "ce/slurmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

int gg_slurmq_id_ok(const char *id)
{
	size_t n = strspn(id, "0123456789");
	if (n == 0 || n > 12)
		return 0;
	if (id[n] == '\0')
		return 1;
	size_t m = id[n] == '_' ? strspn(id + n + 1, "0123456789") : 0;
	return m > 0 && m <= 8 && id[n + 1 + m] == '\0';
}

char *gg_slurmq_command(const char *const *ids, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++) {
		if (!gg_slurmq_id_ok(ids[i]))
			return NULL;
		len += strlen(ids[i]) + 1;
	}
	char *list = calloc(1, len);
	if (!list || !n) {
		free(list);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		strcat(list, ids[i]);
		if (i + 1 < n)
			strcat(list, ",");
	}
	/* sh -c: the login shell may be any; the reason is the last field, as
	 * it may hold the separator's neighbours (", UnavailableNodes:...") */
	char *cmd = gg_strdup_printf(
		"sh -c 'command -v squeue >/dev/null 2>&1 || exit %d; "
		"squeue -h -j %s -o \"%%i|%%T|%%P|%%Q|%%S|%%b|%%r\" 2>/dev/null; echo --; "
		"squeue -h -t PD -o \"%%P|%%Q\" 2>/dev/null | head -n 20000'",
		GG_SLURMQ_NO_SQUEUE, list);
	free(list);
	return cmd;
}

/* Copy a field of at most n bytes into out (size len), printable ASCII only. */
static void field(const char *p, size_t n, char *out, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < len; i++) {
		unsigned char c = (unsigned char)p[i];
		out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	while (k > 0 && out[k - 1] == ' ')
		k--;
	out[k] = '\0';
}

static int parse_prio(const char *p, size_t n, long long *out)
{
	char b[24];
	if (n == 0 || n >= sizeof b)
		return -1;
	for (size_t i = 0; i < n; i++) /* p is not terminated: no strspn */
		if (p[i] < '0' || p[i] > '9')
			return -1;
	memcpy(b, p, n);
	b[n] = '\0';
	*out = strtoll(b, NULL, 10);
	return 0;
}

/* One line of the first part: id|state|partition|priority|start|gres|reason. */
static int parse_job(const char *p, size_t n, struct gg_slurm_job *j)
{
	const char *f[7];
	size_t fl[7], k = 0;
	const char *end = p + n;
	memset(j, 0, sizeof *j);
	while (k < 6) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		if (!bar)
			return -1;
		f[k] = p;
		fl[k++] = (size_t)(bar - p);
		p = bar + 1;
	}
	f[6] = p;
	fl[6] = (size_t)(end - p);
	field(f[0], fl[0], j->id, sizeof j->id);
	if (fl[0] >= sizeof j->id || !gg_slurmq_id_ok(j->id) ||
	    parse_prio(f[3], fl[3], &j->priority))
		return -1;
	field(f[1], fl[1], j->state, sizeof j->state);
	field(f[2], fl[2], j->partition, sizeof j->partition);
	field(f[4], fl[4], j->start, sizeof j->start);
	field(f[5], fl[5], j->gres, sizeof j->gres);
	field(f[6], fl[6], j->reason, sizeof j->reason);
	if (!strcmp(j->start, "N/A") || !strcmp(j->start, "Unknown"))
		j->start[0] = '\0';
	if (!strcmp(j->gres, "N/A") || !strcmp(j->gres, "(null)"))
		j->gres[0] = '\0';
	return 0;
}

/* One line of the second part (partition|priority): count it against every
 * pending job of that partition with a lower priority. */
static void count_ahead(const char *p, size_t n, struct gg_slurm_job *jobs, size_t nj)
{
	const char *bar = memchr(p, '|', n);
	long long prio;
	char part[64];
	if (!bar || parse_prio(bar + 1, n - (size_t)(bar - p) - 1, &prio))
		return;
	field(p, (size_t)(bar - p), part, sizeof part);
	for (size_t i = 0; i < nj; i++)
		if (jobs[i].position && prio > jobs[i].priority && !strcmp(part, jobs[i].partition))
			jobs[i].position++;
}

int gg_slurmq_parse(const char *text, size_t len, struct gg_slurm_job **out, size_t *n,
		    struct gg_err *err)
{
	struct gg_slurm_job *jobs = NULL;
	size_t nj = 0, cap = 0;
	int second = 0;
	*out = NULL;
	*n = 0;
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p), next = ln + 1;
		if (ln && p[ln - 1] == '\r')
			ln--;
		if (ln == 2 && !memcmp(p, "--", 2)) {
			second = 1;
		} else if (second) {
			count_ahead(p, ln, jobs, nj);
		} else if (nj < 1000) {
			if (nj == cap) {
				struct gg_slurm_job *t =
					realloc(jobs, (cap = cap ? 2 * cap : 8) * sizeof *jobs);
				if (!t) {
					free(jobs);
					return gg_err_set(err, GG_ENOMEM, "out of memory");
				}
				jobs = t;
			}
			if (parse_job(p, ln, &jobs[nj]) == 0) {
				jobs[nj].position = !strcmp(jobs[nj].state, "PENDING");
				nj++;
			}
		}
		p += next;
	}
	if (!second) /* cut short: positions unknown */
		for (size_t i = 0; i < nj; i++)
			jobs[i].position = 0;
	*out = nj ? jobs : NULL;
	if (!nj)
		free(jobs);
	*n = nj;
	return 0;
}

/* Slurm's reason codes (squeue's %r; slurm/slurm.h's job_state_reason), a
 * prefix each, in the user's words; in_line: the position means something. */
static const struct {
	const char *code, *words;
	int in_line;
} reasons[] = {
	{"Resources", NULL, 1}, /* free GPUs or free resources: what it asks */
	{"Priority", "behind higher-priority jobs", 1},
	{"None", "not yet considered by the scheduler", 0},
	{"DependencyNeverSatisfied", "its dependency can never be met: it will not start", 0},
	{"Dependency", "waiting for the jobs it depends on", 0},
	{"BeginTime", "not to start before its begin time", 0},
	{"ReqNodeNotAvail", "the nodes it needs are not available (down, drained or reserved)", 0},
	{"NodeDown", "a node it needs is down", 0},
	{"PartitionDown", "its partition is down", 0},
	{"PartitionInactive", "its partition is inactive", 0},
	{"PartitionTimeLimit", "its walltime is over the partition's limit: it will not start", 0},
	{"PartitionNodeLimit", "it asks more nodes than the partition allows", 0},
	{"QOSMaxGRES", "over its QOS's limit of GPUs (or other generic resources)", 0},
	{"QOSGrpGRES", "its QOS's GPUs (or other generic resources) are all in use", 0},
	{"QOSMaxWallDuration", "its walltime is over its QOS's limit", 0},
	{"QOSMax", "over a limit of its QOS", 0},
	{"QOSGrp", "its QOS's share is in use", 0},
	{"QOS", "held by its QOS", 0},
	{"AssocGrpGRES", "your account's GPUs (or other generic resources) are all in use", 0},
	{"AssocMaxGRES", "over your account's limit of GPUs (or other generic resources)", 0},
	{"AssocGrp", "your account's share is in use", 0},
	{"AssocMax", "over a limit of your account", 0},
	{"Reservation", "waiting for its reservation", 0},
	{"Licenses", "waiting for licenses", 0},
	{"JobHeldUser", "held by its owner (scontrol release)", 0},
	{"JobHeldAdmin", "held by the site's administrators", 0},
	{"launch failed requeued held", "held after a failed launch", 0},
	{"Cleaning", "waiting for its previous run to be cleaned up", 0},
};

static const char *ordinal(int n)
{
	int t = n % 100;
	return t >= 11 && t <= 13 ? "th"
	       : n % 10 == 1      ? "st"
	       : n % 10 == 2      ? "nd"
	       : n % 10 == 3      ? "rd"
				  : "th";
}

static const char *words_of(const struct gg_slurm_job *j, int *in_line)
{
	*in_line = 0;
	for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
		size_t n = strlen(reasons[i].code);
		if (strncmp(j->reason, reasons[i].code, n))
			continue;
		*in_line = reasons[i].in_line;
		if (reasons[i].words)
			return reasons[i].words;
		return strstr(j->gres, "gpu") ? "waiting for free GPUs"
					      : "waiting for free resources";
	}
	return "waiting";
}

char *gg_slurmq_phrase(const struct gg_slurm_job *j)
{
	int in_line;
	if (strcmp(j->state, "PENDING") != 0)
		return NULL;
	const char *words = words_of(j, &in_line);
	char pos[48] = "", asks[160] = "", start[64] = "";
	if (in_line && j->position > 0)
		snprintf(pos, sizeof pos, ", %d%s in line", j->position, ordinal(j->position));
	if (j->gres[0])
		snprintf(asks, sizeof asks, "; it asks %s", j->gres);
	if (j->start[0])
		snprintf(start, sizeof start, "; Slurm expects it to start at %s", j->start);
	return gg_strdup_printf("%s (Slurm: %s)%s%s%s", words, j->reason[0] ? j->reason : "?", pos,
				asks, start);
}

char *gg_lrms_message_phrase(const char *msg)
{
	char b[240];
	if (!msg || strncmp(msg, "LRMS:", 5))
		return NULL;
	const char *p = msg + 5;
	p += strspn(p, " ");
	field(p, strnlen(p, 300), b, sizeof b);
	return b[0] ? gg_strdup_printf("the batch system says: %s", b) : NULL;
}
