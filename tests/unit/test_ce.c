/* Unit tests of lib/ce: the xRSL writer and the A-REX answer parser. */
#include "unit.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#include "ce/arcinfo.h"
#include "ce/ce.h"

static void test_xrsl(void **state)
{
	(void)state;
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	char *x = NULL;
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), GG_EUSAGE); /* no executable */
	gg_jd_set(&jd.executable, "/bin/sh", &err);
	gg_jd_set(&jd.name, "gridgpu-abc", &err);
	gg_jd_arg(&jd, "-c", &err);
	gg_jd_arg(&jd, "echo \"hi\"", &err);
	assert_int_equal(gg_jd_input(&jd, "launcher", NULL, "/tmp/l", &err), 0);
	assert_int_equal(gg_jd_input(&jd, "data", "https://x/y", NULL, &err), 0);
	assert_int_equal(gg_jd_input(&jd, "../evil", NULL, NULL, &err), GG_EUSAGE);
	assert_int_equal(gg_jd_input(&jd, "a/b", NULL, NULL, &err), GG_EUSAGE);
	/* a name with a control character: the CE would wait for it forever */
	assert_int_equal(gg_jd_input(&jd, "a\nb", NULL, "/tmp/l", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "control character"));
	assert_int_equal(gg_jd_input(&jd, "a\x1b[0m", NULL, "/tmp/l", &err), GG_EUSAGE);
	assert_int_equal(gg_jd_output(&jd, "r\tx", &err), GG_EUSAGE);
	assert_int_equal(gg_jd_output_url(&jd, "r\x7f", "https://se/r", &err), GG_EUSAGE);
	gg_jd_output(&jd, "result.txt", &err);
	gg_jd_output(&jd, "result.txt", &err); /* once */
	gg_jd_set(&jd.stdout_name, "out.txt", &err);
	gg_jd_set(&jd.stderr_name, "out.txt", &err);
	jd.walltime = 4 * 3600 + 1; /* seconds, as an ISO 8601 duration */
	jd.cpus = 4;
	jd.memory = 16ull << 30;
	gg_jd_set(&jd.queue, "gpu", &err);
	gg_jd_rte(&jd, "ENV/GPU", &err);
	gg_jd_env(&jd, "GRIDGPU_GPUS", "2", &err);
	/* a name the job's script could not take as a variable's is refused */
	assert_int_equal(gg_jd_env(&jd, "A;rm -rf x", "v", &err), GG_EUSAGE);
	assert_int_equal(gg_jd_env(&jd, "1A", "v", &err), GG_EUSAGE);
	assert_int_equal(gg_jd_env(&jd, "", "v", &err), GG_EUSAGE);
	gg_jd_set(&jd.delegation_id, "d123", &err);
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	assert_true(x[0] == '&');
	assert_non_null(strstr(x, "(executable=\"/bin/sh\")"));
	assert_non_null(strstr(x, "(arguments=\"-c\" \"echo \"\"hi\"\"\")"));
	assert_non_null(strstr(x, "(jobname=\"gridgpu-abc\")"));
	assert_non_null(strstr(x, "(inputfiles=(\"launcher\" \"\")(\"data\" \"https://x/y\"))"));
	/* stdout/stderr become outputs (A-REX deletes the rest), once each */
	assert_non_null(strstr(x, "(outputfiles=(\"result.txt\" \"\")(\"out.txt\" \"\"))"));
	assert_non_null(strstr(x, "(walltime=\"PT14401S\")"));
	assert_non_null(strstr(x, "(count=\"4\")"));
	assert_non_null(strstr(x, "(memory=\"4096\")")); /* MB per slot */
	assert_non_null(strstr(x, "(queue=\"gpu\")"));
	assert_non_null(strstr(x, "(runtimeenvironment=\"ENV/GPU\")"));
	assert_non_null(strstr(x, "(environment=(\"GRIDGPU_GPUS\" \"2\"))"));
	assert_non_null(strstr(x, "(delegationid=\"d123\")"));
	/* balanced parentheses outside strings */
	int depth = 0, inq = 0;
	for (char *p = x; *p; p++) {
		if (*p == '"')
			inq = !inq;
		else if (!inq && *p == '(')
			depth++;
		else if (!inq && *p == ')')
			depth--;
		assert_true(depth >= 0);
	}
	assert_int_equal(depth, 0);
	assert_int_equal(inq, 0);
	free(x);
	for (int i = 0; i < GG_JD_MAX - 2; i++)
		gg_jd_arg(&jd, "a", &err);
	assert_int_equal(gg_jd_arg(&jd, "a", &err), GG_EUSAGE);
	gg_jd_clear(&jd);
	gg_jd_clear(&jd); /* twice is fine */
}

/* The site's GPU mapping: the RTE gets the count or the MIG profile; GPUs from
 * a site (or a bare CE) without a mapping are refused, not made a CPU job. */
static void test_gpu_mapping(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_site site = {.name = "s", .gpu_rte = "ENV/GPU", .gpu_queue = "gpu"};
	struct gg_jd_resources res = {.gpus = 2};
	struct gg_jobdesc jd = {0};
	char *x = NULL;
	gg_jd_set(&jd.executable, "/bin/sh", &err);
	assert_int_equal(gg_jd_resources(&jd, &res, &site, &err), 0);
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	assert_non_null(strstr(x, "(runtimeenvironment=\"ENV/GPU\" \"2\")"));
	assert_non_null(strstr(x, "(queue=\"gpu\")"));
	free(x);
	gg_jd_clear(&jd);
	res = (struct gg_jd_resources){.mig = "3g.20gb"};
	gg_jd_set(&jd.executable, "/bin/sh", &err);
	assert_int_equal(gg_jd_resources(&jd, &res, &site, &err), 0);
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	assert_non_null(strstr(x, "(runtimeenvironment=\"ENV/GPU\" \"3g.20gb\")"));
	free(x);
	gg_jd_clear(&jd);
	/* the job's minimums follow, for an RTE that asks the batch system */
	res = (struct gg_jd_resources){
		.gpus = 1, .min_capability = "8.0", .min_gpu_memory = 24ull << 30};
	gg_jd_set(&jd.executable, "/bin/sh", &err);
	assert_int_equal(gg_jd_resources(&jd, &res, &site, &err), 0);
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	assert_non_null(
		strstr(x, "(runtimeenvironment=\"ENV/GPU\" \"1\" \"cc=8.0\" \"mem=24576\")"));
	free(x);
	gg_jd_clear(&jd);
	/* a capability that is not X.Y is not passed on (the wrapper judges it) */
	res = (struct gg_jd_resources){.mig = "1g.10gb", .min_capability = "8"};
	gg_jd_set(&jd.executable, "/bin/sh", &err);
	assert_int_equal(gg_jd_resources(&jd, &res, &site, &err), 0);
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	assert_non_null(strstr(x, "(runtimeenvironment=\"ENV/GPU\" \"1g.10gb\")"));
	free(x);
	gg_jd_clear(&jd);
	/* no mapping: refused, saying what to set */
	struct gg_site bare = {.name = "plain"};
	res = (struct gg_jd_resources){.gpus = 1};
	assert_int_equal(gg_jd_gpu_check(&res, &bare, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "site 'plain' has no GPU mapping"));
	assert_non_null(strstr(err.msg, "gridgpu site set plain gpu-rte"));
	assert_int_equal(gg_jd_resources(&jd, &res, &bare, &err), GG_EUSAGE);
	assert_int_equal(jd.nrtes, 0);
	assert_int_equal(gg_jd_gpu_check(&res, NULL, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--gpus: a CE given by its URL"));
	res.gpus = 0;
	res.mig = "1g.5gb";
	assert_int_equal(gg_jd_gpu_check(&res, &bare, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--mig:"));
	/* an explicit queue, a mapping by queue alone, or no GPU: fine */
	res.queue = "gpuq";
	assert_int_equal(gg_jd_gpu_check(&res, &bare, &err), 0);
	struct gg_site byqueue = {.name = "q", .gpu_queue = "gpu"};
	res = (struct gg_jd_resources){.gpus = 1};
	assert_int_equal(gg_jd_gpu_check(&res, &byqueue, &err), 0);
	res.gpus = 0;
	assert_int_equal(gg_jd_gpu_check(&res, &bare, &err), 0);
	assert_int_equal(gg_jd_gpu_check(&res, NULL, &err), 0);
	gg_jd_clear(&jd);
}

static void test_states(void **state)
{
	(void)state;
	assert_int_equal(gg_arc_state("ACCEPTING"), GG_CE_ACCEPTED);
	assert_int_equal(gg_arc_state("PREPARING"), GG_CE_ACCEPTED);
	assert_int_equal(gg_arc_state("QUEUING"), GG_CE_QUEUED);
	assert_int_equal(gg_arc_state("RUNNING"), GG_CE_RUNNING);
	assert_int_equal(gg_arc_state("INLRMS"), GG_CE_RUNNING);
	assert_int_equal(gg_arc_state("EXECUTED"), GG_CE_FINISHING);
	assert_int_equal(gg_arc_state("FINISHED"), GG_CE_FINISHED);
	assert_int_equal(gg_arc_state("FAILED"), GG_CE_FAILED);
	assert_int_equal(gg_arc_state("KILLED"), GG_CE_KILLED);
	assert_int_equal(gg_arc_state("WIPED"), GG_CE_GONE);
	assert_int_equal(gg_arc_state("nonsense"), GG_CE_UNKNOWN);
	assert_int_equal(gg_arc_state(NULL), GG_CE_UNKNOWN);
	assert_true(gg_ce_state_terminal(GG_CE_KILLED));
	assert_false(gg_ce_state_terminal(GG_CE_RUNNING));
	assert_string_equal(gg_ce_state_name(GG_CE_QUEUED), "queued");
}

static struct gg_ce_result *parse(const char *body, size_t *n, int expect)
{
	struct gg_ce_result *r = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_arc_parse_jobs(body, strlen(body), &r, n, &err), expect);
	return r;
}

static void test_parse_jobs(void **state)
{
	(void)state;
	size_t n;
	/* one job: an object */
	struct gg_ce_result *r = parse("{\"job\":{\"status-code\":\"201\",\"reason\":\"Created\","
				       "\"id\":\"abc\",\"state\":\"ACCEPTING\"}}",
				       &n, 0);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].code, 201);
	assert_string_equal(r[0].id, "abc");
	assert_int_equal(r[0].state, GG_CE_ACCEPTED);
	gg_ce_results_free(r, n);
	/* many: an array; per-job errors */
	r = parse("{\"job\":[{\"status-code\":\"200\",\"id\":\"A\",\"state\":\"FINISHED\"},"
		  "{\"status-code\":\"404\",\"reason\":\"Job not found\",\"id\":\"B\",\"state\":"
		  "\"None\"}]}",
		  &n, 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].state, GG_CE_FINISHED);
	assert_int_equal(r[1].code, 404);
	assert_int_equal(r[1].state, GG_CE_GONE);
	assert_string_equal(r[1].reason, "Job not found");
	gg_ce_results_free(r, n);
	/* an empty list is an empty body */
	r = parse("", &n, 0);
	assert_int_equal(n, 0);
	gg_ce_results_free(r, n);
	r = parse("  \n", &n, 0);
	assert_int_equal(n, 0);
	gg_ce_results_free(r, n);
	/* a refused submission */
	r = parse("{\"job\":{\"status-code\":\"500\",\"reason\":\"nordugrid:xrsl parsing "
		  "error:\\n')' expected\"}}",
		  &n, 0);
	assert_int_equal(r[0].code, 500);
	assert_null(r[0].id);
	gg_ce_results_free(r, n);
	/* numbers instead of strings are accepted too */
	r = parse("{\"job\":{\"status-code\":202,\"id\":\"X\"}}", &n, 0);
	assert_int_equal(r[0].code, 202);
	gg_ce_results_free(r, n);
	/* garbage */
	parse("<html>", &n, GG_EPROTO);
	parse("[1,2]", &n, GG_EPROTO);
	parse("{\"job\":\"x\"}", &n, GG_EPROTO);
	parse("{\"job\":[1]}", &n, GG_EPROTO);
	parse("{\"job\":{\"id\":\"a\"},\"job\":{}}", &n, GG_EPROTO); /* duplicate keys */
}

/* jobs?action=info for two jobs of the Slurm test site: one Slurm holds
 * PENDING (the live list calls it RUNNING), one it runs (captured from A-REX
 * 6.17, trimmed), and one the CE does not know. */
static const char info_doc[] =
#include "data/arex-info-pending.inc"
	;

static void test_parse_info(void **state)
{
	(void)state;
	size_t n;
	struct gg_ce_result *r = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_arc_parse_info(info_doc, strlen(info_doc), &r, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].state, GG_CE_QUEUED);
	assert_string_equal(r[0].raw_state, "INLRMS:Q");
	assert_int_equal(r[1].state, GG_CE_RUNNING);
	assert_string_equal(r[1].raw_state, "INLRMS:R");
	gg_ce_results_free(r, n);
	/* one job: an object; only the nordugrid state; a stale document (the
	 * infoprovider's file as written at submission) */
	const char *one = "{\"job\":{\"status-code\":\"200\",\"id\":\"x\",\"info_document\":"
			  "{\"ComputingActivity\":{\"State\":\"nordugrid:INLRMS:Q\"}}}}";
	assert_int_equal(gg_arc_parse_info(one, strlen(one), &r, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].state, GG_CE_QUEUED);
	gg_ce_results_free(r, n);
	const char *old = "{\"job\":{\"id\":\"x\",\"info_document\":{\"ComputingActivity\":"
			  "{\"State\":[\"nordugrid:ACCEPTED\",\"arcrest:ACCEPTED\"]}}}}";
	assert_int_equal(gg_arc_parse_info(old, strlen(old), &r, &n, &err), 0);
	assert_int_equal(r[0].state, GG_CE_ACCEPTED);
	gg_ce_results_free(r, n);
	/* the emies state alone still says queued; no State at all: unknown */
	const char *em = "{\"job\":[{\"id\":\"a\",\"info_document\":{\"ComputingActivity\":"
			 "{\"State\":[\"emies:processing-queued\"]}}},{\"id\":\"b\","
			 "\"info_document\":{\"ComputingActivity\":{}}}]}";
	assert_int_equal(gg_arc_parse_info(em, strlen(em), &r, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].state, GG_CE_QUEUED);
	assert_string_equal(r[0].raw_state, "processing-queued");
	assert_int_equal(r[1].state, GG_CE_UNKNOWN);
	assert_null(r[1].raw_state);
	gg_ce_results_free(r, n);
	/* garbage */
	assert_int_equal(gg_arc_parse_info("<html>", 6, &r, &n, &err), GG_EPROTO);
	assert_int_equal(gg_arc_parse_info("{\"job\":3}", 9, &r, &n, &err), GG_EPROTO);
	assert_int_equal(gg_arc_parse_info("[]", 2, &r, &n, &err), GG_EPROTO);
}

static void test_failed_walltime(void **state)
{
	(void)state;
	/* what A-REX 6.17 wrote for a Slurm job at its TimeLimit (captured) */
	assert_true(gg_arc_failed_walltime("LRMS error: (271) Job timeout\n"));
	assert_true(gg_arc_failed_walltime("LRMS error: (271) job killed: wall"));
	assert_true(gg_arc_failed_walltime("LRMS error: (-1) Job exceeded time limit."));
	assert_false(gg_arc_failed_walltime("LRMS error: (1) Job failed"));
	assert_false(gg_arc_failed_walltime("LRMS error: (-1) Job was cancelled"));
	assert_false(gg_arc_failed_walltime("Job timeout")); /* not the LRMS's word */
	assert_false(gg_arc_failed_walltime("LRMS error: (1) Job failed\nJob timeout"));
	assert_false(gg_arc_failed_walltime("Failed in files upload"));
	assert_false(gg_arc_failed_walltime(""));
	assert_false(gg_arc_failed_walltime(NULL));
}

static void test_lrms_refusal(void **state)
{
	(void)state;
	char out[320];
	/* the tail of A-REX 6.17's errors log for a job Slurm refused (captured:
	 * --gres=gpu:7g.80gb:1 on a node without that MIG profile) */
	const char *log = "exit $RESULT\n"
			  "-------------------------------------------------------------------\n"
			  "\n"
			  "job *NOT* submitted successfully!\n"
			  "got error code from sbatch: 1 !\n"
			  "Output is:\n"
			  "sbatch: error: Batch job submission failed: Requested node "
			  "configuration is not available\n"
			  "----- exiting submit_slurm_job -----\n"
			  "\n"
			  "2026-11-26T12:16:22Z Job state change SUBMIT -> FINISHING   Reason: "
			  "Job failure detected\n";
	assert_true(gg_arc_lrms_refusal(log, out, sizeof out));
	assert_string_equal(out, "sbatch: error: Batch job submission failed: Requested node "
				 "configuration is not available");
	/* the last of several, trailing blanks and CRs trimmed */
	assert_true(gg_arc_lrms_refusal("sbatch: error: first\r\nqsub: Unknown queue  \r\n", out,
					sizeof out));
	assert_string_equal(out, "qsub: Unknown queue");
	/* a long line is cut, the buffer never overrun */
	char big[1000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big, "sbatch: error: ", 15);
	assert_true(gg_arc_lrms_refusal(big, out, sizeof out));
	assert_int_equal(strlen(out), 300);
	char small[8];
	assert_true(gg_arc_lrms_refusal(log, small, sizeof small));
	assert_string_equal(small, "sbatch:");
	/* no batch-system line: nothing */
	assert_false(gg_arc_lrms_refusal("job *NOT* submitted successfully!\n", out, sizeof out));
	assert_string_equal(out, "");
	assert_false(gg_arc_lrms_refusal("sbatch: error: ", out, sizeof out)); /* empty */
	assert_false(gg_arc_lrms_refusal("", out, sizeof out));
	assert_false(gg_arc_lrms_refusal(NULL, out, sizeof out));
	assert_false(gg_arc_lrms_refusal(log, out, 0));
	/* a GPU RTE that refuses the job at stage 0: the line before A-REX's */
	const char *rte =
		"----- starting submit_slurm_job -----\n"
		"ENV/GPU: no GPU of this site has 204800 MiB or more: it has a100 "
		"(cc 8.0, 40960 MiB)\n"
		"ERROR: Runtime script ENV/GPU stage 0 execution failed with exit code 1\n"
		"2026-12-02T13:01:18Z Job state change SUBMIT -> FINISHING\n";
	assert_true(gg_arc_lrms_refusal(rte, out, sizeof out));
	assert_string_equal(out, "ENV/GPU: no GPU of this site has 204800 MiB or more: it has a100 "
				 "(cc 8.0, 40960 MiB)");
	/* the ERROR line first, nothing before it: nothing */
	assert_false(gg_arc_lrms_refusal("ERROR: Runtime script X stage 0 execution failed\n", out,
					 sizeof out));
}

static void test_open(void **state)
{
	(void)state;
	struct gg_ce *ce = NULL;
	struct gg_err err = {0};
	struct gg_ce_auth none = {0};
	struct gg_ce_auth tok = {.token = "abc", .ca_dir = "/nonexistent"};
	assert_int_equal(gg_ce_open("http://ce/arex", &tok, &ce, &err), GG_EUSAGE);
	assert_int_equal(gg_ce_open("https://ce/arex", &none, &ce, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "proxy init"));
	assert_int_equal(gg_ce_open("https://ce.example.org:443/arex/", &tok, &ce, &err), 0);
	assert_string_equal(gg_ce_endpoint(ce), "https://ce.example.org:443/arex");
	/* a job id that would leave the REST tree is refused before any request; job
	 * ids come from the CE, so a malformed one is the CE's error (exit 4) */
	char *data;
	size_t len;
	assert_int_equal(gg_ce_get(ce, "../../x", "f", 10, &data, &len, &err), GG_EPROTO);
	assert_non_null(strstr(err.msg, "malformed"));
	assert_int_equal(gg_ce_diagnose(ce, "a/b", "errors", &data, &err), GG_EPROTO);
	gg_ce_free(ce);
	gg_ce_free(NULL);
}

/* ---- the info documents remembered (arcinfo.c) ---- */
UNIT_TMPDIR("gg-unit-ce")

/* A fake A-REX: jobs a-d have documents of the infoprovider's run `run`
 * (NULL: as written at submission, without a time), e has none. Counts the
 * requests, the time checks and the ids asked (the last request's in last). */
struct fake_ce {
	const char *run;
	enum gg_ce_state st[4];
	int requests, checks, asked;
	char last[256], checked[8];
	int fail;
};
static struct fake_ce fake;

static int fake_run(void *ud, const char *id, char **time, struct gg_err *err)
{
	(void)ud;
	(void)err;
	fake.checks++;
	snprintf(fake.checked, sizeof fake.checked, "%s", id);
	*time = fake.run && id[0] >= 'a' && id[0] <= 'd' ? strdup(fake.run) : NULL;
	return 0;
}

static int fake_ask(void *ud, const char *const *ids, size_t n, struct gg_ce_result **res,
		    struct gg_err *err)
{
	(void)ud;
	fake.requests++;
	fake.asked += (int)n;
	fake.last[0] = '\0';
	if (fake.fail)
		return gg_err_set(err, GG_ENET, "the CE did not answer");
	*res = calloc(n, sizeof **res);
	for (size_t i = 0; i < n; i++) {
		strcat(fake.last, ids[i]);
		(*res)[i].id = strdup(ids[i]);
		if (ids[i][0] < 'a' || ids[i][0] > 'd')
			continue; /* no document: unknown */
		enum gg_ce_state st = fake.st[ids[i][0] - 'a'];
		(*res)[i].state = st;
		(*res)[i].raw_state = strdup(st == GG_CE_QUEUED ? "INLRMS:Q" : "INLRMS:R");
		(*res)[i].reason = gg_strdup_printf("%c1\nLRMS: waits", ids[i][0]);
	}
	return 0;
}

static const struct gg_arc_info_ops fake_ops = {.run = fake_run, .ask = fake_ask};

static void info_check(const char *mem, const char *const *ids, size_t n, const char *expect)
{
	struct gg_ce_result *r = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_arc_info_asked(mem, ids, n, &fake_ops, &r, &err), 0);
	char got[64] = "";
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(r[i].id, ids[i]);
		strcat(got, r[i].state == GG_CE_QUEUED    ? "Q"
			    : r[i].state == GG_CE_RUNNING ? "R"
							  : "?");
		if (r[i].state == GG_CE_QUEUED) {
			assert_string_equal(r[i].raw_state, "INLRMS:Q");
			assert_int_equal(r[i].reason[0], ids[i][0]);
			assert_string_equal(r[i].reason + 1, "1\nLRMS: waits");
		}
	}
	assert_string_equal(got, expect);
	gg_ce_results_free(r, n);
}

static void test_info_remembered(void **state)
{
	(void)state;
	char mem[128];
	snprintf(mem, sizeof mem, "%s/ce-info-x.json", tmpdir);
	const char *ids[] = {"a", "b", "c", "e"};
	fake = (struct fake_ce){.run = "2026-12-03T05:33:14Z",
				.st = {GG_CE_QUEUED, GG_CE_QUEUED, GG_CE_RUNNING, GG_CE_QUEUED}};
	/* nothing remembered: the run checked (by the first job), all asked,
	 * remembered */
	info_check(mem, ids, 4, "QQR?");
	assert_int_equal(fake.requests, 1);
	assert_string_equal(fake.last, "abce");
	/* the same run: the check of a remembered job (a) stands for all; only
	 * e (no document) is asked again; nothing written */
	struct stat st0, st1;
	assert_int_equal(stat(mem, &st0), 0);
	fake.requests = fake.checks = 0;
	info_check(mem, ids, 4, "QQR?");
	assert_int_equal(fake.checks, 1);
	assert_string_equal(fake.checked, "a");
	assert_int_equal(fake.requests, 1);
	assert_string_equal(fake.last, "e");
	assert_int_equal(stat(mem, &st1), 0);
	assert_true(st0.st_ino == st1.st_ino && st0.st_mtim.tv_nsec == st1.st_mtim.tv_nsec);
	const char *known[] = {"c", "a"};
	fake.requests = 0;
	info_check(mem, known, 2, "RQ");
	assert_int_equal(fake.requests, 0);
	/* the infoprovider ran again (b now runs): all asked, the new run kept */
	fake.run = "2026-12-03T05:33:26Z";
	fake.st[1] = GG_CE_RUNNING;
	fake.requests = 0;
	info_check(mem, ids, 4, "QRR?");
	assert_int_equal(fake.requests, 1);
	assert_string_equal(fake.last, "abce");
	fake.requests = 0;
	info_check(mem, known, 2, "RQ");
	assert_int_equal(fake.requests, 0);
	/* a job not remembered (d, new) is asked, and remembered */
	const char *more[] = {"a", "b", "d"};
	fake.requests = 0;
	info_check(mem, more, 3, "QRQ");
	assert_string_equal(fake.last, "d");
	info_check(mem, more, 3, "QRQ");
	assert_int_equal(fake.requests, 1);
	/* the CE does not answer: an error, nothing made up from the file */
	struct gg_ce_result *r = NULL;
	struct gg_err err = {0};
	fake.fail = 1;
	fake.run = "2026-12-03T05:34:00Z";
	assert_int_equal(gg_arc_info_asked(mem, ids, 4, &fake_ops, &r, &err), GG_ENET);
	assert_null(r);
	fake.fail = 0;
	/* no time to check by (a CE whose documents carry none): all asked, each
	 * time, nothing remembered, and not checked again for a while */
	unlink(mem);
	fake.run = NULL;
	fake.requests = fake.checks = 0;
	info_check(mem, ids, 4, "QRR?");
	fake.run = "2026-12-03T05:35:00Z";
	info_check(mem, ids, 4, "QRR?");
	assert_int_equal(fake.requests, 2);
	assert_int_equal(fake.checks, 1);
	/* ... until then (the mark made older): checked, and remembered again */
	const char *old = "{\"v\":1,\"untimed\":1000,\"jobs\":{}}";
	assert_int_equal(gg_file_write_atomic(mem, old, strlen(old), 0600, &err), 0);
	info_check(mem, ids, 4, "QRR?");
	assert_int_equal(fake.checks, 2);
	fake.requests = 0;
	info_check(mem, ids, 4, "QRR?");
	assert_int_equal(fake.requests, 1);
	assert_string_equal(fake.last, "e");
	/* a damaged file remembers nothing; no file (path NULL): nothing checked */
	const char *damaged = "{\"v\":1,\"time\":\"x\",\"jobs\":{\"a\":7}}";
	assert_int_equal(gg_file_write_atomic(mem, damaged, strlen(damaged), 0600, &err), 0);
	fake.run = "x";
	fake.asked = fake.checks = 0;
	info_check(mem, known, 2, "RQ");
	assert_int_equal(fake.asked, 2);
	info_check(NULL, known, 2, "RQ");
	assert_int_equal(fake.asked, 4);
	assert_int_equal(fake.checks, 1);
}

static void test_info_time(void **state)
{
	(void)state;
	char t[GG_ARC_TIME_MAX];
	const char *ok = "<jobs><job><id>x</id><info_document>\n<ComputingActivity "
			 "xmlns=\"http://schemas.ogf.org/glue/2009/03/spec_2.0_r1\" "
			 "BaseType=\"Activity\" CreationTime=\"2026-12-03T05:50:09Z\" "
			 "Validity=\"10800\">  <ID>urn:caid:x</ID>";
	assert_int_equal(gg_arc_info_time(ok, strlen(ok), t), 1);
	assert_string_equal(t, "2026-12-03T05:50:09Z");
	const char *bad[] = {
		/* not its attribute */
		("<ComputingActivity BaseType=\"Activity\"><X CreationTime=\"2026-12-03T05:50:09Z\"/>"),
		"<ComputingActivity CreationTime=\"   \">", /* blank */
		"<ComputingActivity CreationTime=\"2026-12-03 05:50\">",
		"<ComputingActivity CreationTime=\"2026-12-03T05:50:09Z", /* cut */
		"<ComputingActivityX CreationTime=\"2026-12-03T05:50:09Z\">",
		"<ComputingActivity XCreationTime=\"2026-12-03T05:50:09Z\">",
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(gg_arc_info_time(bad[i], strlen(bad[i]), t), 0);
	const char *longer = "<ComputingActivity CreationTime=\"2026-12-03T05:50:09.123456789012345"
			     "67890123Z\">";
	assert_int_equal(gg_arc_info_time(longer, strlen(longer), t), 0);
	/* the length is the bound, not a NUL */
	assert_int_equal(gg_arc_info_time(ok, 60, t), 0);
	assert_int_equal(gg_arc_info_time(NULL, 0, t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xrsl),
		cmocka_unit_test(test_gpu_mapping),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_parse_jobs),
		cmocka_unit_test(test_parse_info),
		cmocka_unit_test(test_failed_walltime),
		cmocka_unit_test(test_lrms_refusal),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_info_remembered),
		cmocka_unit_test(test_info_time),
	};
	return cmocka_run_group_tests_name("ce", tests, setup_tmp, teardown_tmp);
}
