/* Why queued work waits, in the user's words: the squeue command and the
 * parser of its output (lib/ce/slurmq.c), the phrases made of Slurm's
 * reason codes, the CE's "LRMS: ..." word, A-REX's LocalIDFromManager in the
 * info answer. */
#include "unit.h"

#include "ce/ce.h"
#include "ce/slurmq.h"

/* What squeue prints on the test site for a job behind a full node, and the
 * partition's pending jobs (ours and two others, one of higher priority). */
static const char out_full[] =
	"41|PENDING|gpu|4294901719|N/A|gres:gpu:a100:1|Resources\n"
	"42|PENDING|gpu|4294901718|2026-12-02T05:30:00|gres:gpu:a100:1|Priority\n"
	"43|RUNNING|gpu|4294901720|2026-12-02T04:30:00|gres:gpu:a100:3|None\n"
	"--\n"
	"gpu|4294901719\n"
	"gpu|4294901718\n"
	"gpu|4294901790\n"
	"cpu|4294909999\n";

static void parse_positions(void **state)
{
	(void)state;
	struct gg_slurm_job *j = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	assert_int_equal(gg_slurmq_parse(out_full, strlen(out_full), &j, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(j[0].id, "41");
	assert_string_equal(j[0].reason, "Resources");
	assert_string_equal(j[0].gres, "gres:gpu:a100:1");
	assert_string_equal(j[0].start, ""); /* N/A */
	/* one pending job of gpu has a higher priority; cpu's does not count */
	assert_int_equal(j[0].position, 2);
	assert_int_equal(j[1].position, 3);
	assert_string_equal(j[1].start, "2026-12-02T05:30:00");
	assert_int_equal(j[2].position, 0); /* running: not in line */
	char *p = gg_slurmq_phrase(&j[0]);
	assert_string_equal(p, "waiting for free GPUs (Slurm: Resources), 2nd in line; it asks "
			       "gres:gpu:a100:1");
	free(p);
	p = gg_slurmq_phrase(&j[1]);
	assert_string_equal(p, "behind higher-priority jobs (Slurm: Priority), 3rd in line; it "
			       "asks gres:gpu:a100:1; Slurm expects it to start at "
			       "2026-12-02T05:30:00");
	free(p);
	assert_null(gg_slurmq_phrase(&j[2]));
	free(j);
}

static void parse_hostile(void **state)
{
	(void)state;
	/* a reason with the separator's neighbours, control bytes, CRLF, a bad
	 * id, a bad priority, and no second part (positions unknown) */
	static const char text[] = "7|PENDING|gpu|10|N/A|N/A|ReqNodeNotAvail, "
				   "UnavailableNodes:n[1-2]\x1b[31m\r\n"
				   "7;rm|PENDING|gpu|10|N/A|N/A|Resources\n"
				   "8|PENDING|gpu|x1|N/A|N/A|Resources\n"
				   "9|PENDING|gpu\n";
	struct gg_slurm_job *j = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	assert_int_equal(gg_slurmq_parse(text, strlen(text), &j, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(j[0].reason, "ReqNodeNotAvail, UnavailableNodes:n[1-2]?[31m");
	assert_int_equal(j[0].position, 0);
	char *p = gg_slurmq_phrase(&j[0]);
	assert_string_equal(p, "the nodes it needs are not available (down, drained or reserved) "
			       "(Slurm: ReqNodeNotAvail, UnavailableNodes:n[1-2]?[31m)");
	free(p);
	free(j);
	assert_int_equal(gg_slurmq_parse("", 0, &j, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(j);
}

static void phrase_of(const char *reason, const char *gres, const char *want)
{
	struct gg_slurm_job j = {.state = "PENDING"};
	snprintf(j.reason, sizeof j.reason, "%s", reason);
	snprintf(j.gres, sizeof j.gres, "%s", gres);
	char *p = gg_slurmq_phrase(&j);
	assert_non_null(p);
	assert_string_equal(p, want);
	free(p);
}

static void phrases(void **state)
{
	(void)state;
	phrase_of("Resources", "", "waiting for free resources (Slurm: Resources)");
	phrase_of("QOSMaxGRESPerUser", "",
		  "over its QOS's limit of GPUs (or other generic resources) (Slurm: "
		  "QOSMaxGRESPerUser)");
	phrase_of("DependencyNeverSatisfied", "",
		  "its dependency can never be met: it will not start (Slurm: "
		  "DependencyNeverSatisfied)");
	phrase_of("Dependency", "", "waiting for the jobs it depends on (Slurm: Dependency)");
	phrase_of("AssocGrpGRES", "",
		  "your account's GPUs (or other generic resources) are all in use (Slurm: "
		  "AssocGrpGRES)");
	phrase_of("SomethingNew", "", "waiting (Slurm: SomethingNew)");
	/* a position only where it means something */
	struct gg_slurm_job j = {.state = "PENDING", .reason = "JobHeldUser", .position = 4};
	char *p = gg_slurmq_phrase(&j);
	assert_string_equal(p, "held by its owner (scontrol release) (Slurm: JobHeldUser)");
	free(p);
	struct gg_slurm_job k = {.state = "PENDING", .reason = "Priority", .position = 11};
	p = gg_slurmq_phrase(&k);
	assert_string_equal(p, "behind higher-priority jobs (Slurm: Priority), 11th in line");
	free(p);
}

static void command(void **state)
{
	(void)state;
	const char *ids[] = {"12", "13_4"};
	char *c = gg_slurmq_command(ids, 2);
	assert_non_null(c);
	assert_non_null(strstr(c, "squeue -h -j 12,13_4 -o \"%i|%T|%P|%Q|%S|%b|%r\""));
	assert_non_null(strstr(c, "exit 97"));
	free(c);
	const char *bad[] = {"12", "13;reboot"};
	assert_null(gg_slurmq_command(bad, 2));
	assert_null(gg_slurmq_command(ids, 0));
	assert_false(gg_slurmq_id_ok(""));
	assert_false(gg_slurmq_id_ok("12_"));
	assert_false(gg_slurmq_id_ok("-1"));
	assert_true(gg_slurmq_id_ok("123456"));
}

static void lrms_message(void **state)
{
	(void)state;
	char *p = gg_lrms_message_phrase("LRMS: job held by\x07 the queue policy");
	assert_string_equal(p, "the batch system says: job held by? the queue policy");
	free(p);
	assert_null(gg_lrms_message_phrase("gridgpu-abc")); /* the Slurm module's Name */
	assert_null(gg_lrms_message_phrase("LRMS:   "));
	assert_null(gg_lrms_message_phrase(NULL));
}

/* A-REX's info answer: the Slurm job id (LocalIDFromManager) and an
 * "LRMS: ..." OtherMessages entry, as the queued result's reason. */
static void info_local_id(void **state)
{
	(void)state;
	static const char doc[] =
		"{\"job\":[{\"status-code\":\"200\",\"id\":\"abc\",\"info_document\":{"
		"\"ComputingActivity\":{\"State\":[\"nordugrid:INLRMS:Q\",\"arcrest:QUEUING\"],"
		"\"LocalIDFromManager\":\"41\",\"OtherMessages\":[\"gridgpu-x\",\"LRMS: held\"]}}},"
		"{\"status-code\":\"200\",\"id\":\"def\",\"info_document\":{"
		"\"ComputingActivity\":{\"State\":\"nordugrid:INLRMS:Q\","
		"\"LocalIDFromManager\":\"42\",\"OtherMessages\":\"gridgpu-y\"}}}]}";
	struct gg_ce_result *r = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	assert_int_equal(gg_arc_parse_info(doc, strlen(doc), &r, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].reason, "41\nLRMS: held");
	assert_string_equal(r[1].reason, "42");
	gg_ce_results_free(r, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_positions), cmocka_unit_test(parse_hostile),
		cmocka_unit_test(phrases),         cmocka_unit_test(command),
		cmocka_unit_test(lrms_message),    cmocka_unit_test(info_local_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
