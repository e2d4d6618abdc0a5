/* What squeue printed on a site's login node (outside text: the login node is
 * the site's, its output anything): gg_slurmq_parse and the phrase made of each
 * job. Every field is bounded and printable; a position is never beyond the
 * lines; the phrase is printable. */
#include <string.h>

#include "ce/slurmq.h"
#include "fuzz.h"

static void slurmq_printable(const char *s, size_t max)
{
	size_t len = strnlen(s, max);
	FUZZ_CHECK(len < max, "not terminated");
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f,
			   "control byte 0x%02x at %zu", (unsigned char)s[i], i);
}

FUZZ_TARGET(slurmq)
{
	struct gg_slurm_job *j = NULL;
	size_t n = 0, lines = 1;
	struct gg_err err = {0};
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (gg_slurmq_parse((const char *)data, size, &j, &n, &err) < 0)
		return 0;
	FUZZ_CHECK(n <= lines, "%zu jobs in %zu lines", n, lines);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(gg_slurmq_id_ok(j[i].id), "a bad id kept");
		FUZZ_CHECK(j[i].position >= 0 && (size_t)j[i].position <= lines, "position %d",
			   j[i].position);
		slurmq_printable(j[i].reason, sizeof j[i].reason);
		slurmq_printable(j[i].gres, sizeof j[i].gres);
		slurmq_printable(j[i].start, sizeof j[i].start);
		char *p = gg_slurmq_phrase(&j[i]);
		if (p)
			slurmq_printable(p, strlen(p) + 1);
		free(p);
	}
	free(j);
	char *text = malloc(size + 1);
	FUZZ_CHECK(text, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	char *m = gg_lrms_message_phrase(text);
	if (m)
		slurmq_printable(m, strlen(m) + 1);
	free(m);
	free(text);
	return 0;
}
