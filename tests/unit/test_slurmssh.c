/* The slurm+ssh backend's parts that need no login node (lib/ce/slurm.c,
 * lib/ce/sacct.c): its CE URL, Slurm's states, the parser of what the login
 * node says of jobs squeue no longer shows (sacct's, scontrol's in its form),
 * Slurm's end states in the user's words, the backend chosen by URL with no
 * grid credential, and a slurm+ssh site as a GPU mapping and an ssh-only
 * credential. */
#include "unit.h"

#include "ce/ce.h"
#include "gridgpu/cred.h"
#include "gridgpu/site.h"

static void url(void **state)
{
	(void)state;
	struct gg_slurm_url u;
	struct gg_err err = {0};
	assert_int_equal(
		gg_slurm_url_parse("slurm+ssh://ann@login.example.org:2222/scratch/ann/gg/", &u,
				   &err),
		0);
	assert_string_equal(u.user, "ann");
	assert_string_equal(u.host, "login.example.org");
	assert_int_equal(u.port, 2222);
	assert_string_equal(u.dir, "/scratch/ann/gg");
	assert_int_equal(gg_slurm_url_parse("slurm+ssh://login", &u, &err), 0);
	assert_false(u.has_user);
	assert_int_equal(u.port, 0);
	assert_string_equal(u.dir, "gridgpu-jobs");
	static const char *const bad[] = {
		"https://login",      "slurm+ssh://",         "slurm+ssh://a b",
		"slurm+ssh://h:0",    "slurm+ssh://h:65536",  "slurm+ssh://h:2x",
		"slurm+ssh://u;x@h",  "slurm+ssh://h/a/../b", "slurm+ssh://h/a/..",
		"slurm+ssh://h/a\nb", "slurm+ssh://@h",       "slurm+ssh://$(id)@h",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		assert_int_equal(gg_slurm_url_parse(bad[i], &u, &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "slurm+ssh://USER@LOGIN"));
		assert_null(strchr(err.msg, '\n'));
	}
}

static void states(void **state)
{
	(void)state;
	assert_int_equal(gg_slurm_state("PENDING"), GG_CE_QUEUED);
	assert_int_equal(gg_slurm_state("RUNNING"), GG_CE_RUNNING);
	assert_int_equal(gg_slurm_state("COMPLETING"), GG_CE_FINISHING);
	assert_int_equal(gg_slurm_state("COMPLETED"), GG_CE_FINISHED);
	assert_int_equal(gg_slurm_state("CANCELLED by 1000"), GG_CE_KILLED);
	assert_int_equal(gg_slurm_state("CANCELLED+"), GG_CE_KILLED);
	assert_int_equal(gg_slurm_state("TIMEOUT"), GG_CE_FAILED);
	assert_int_equal(gg_slurm_state("OUT_OF_MEMORY"), GG_CE_FAILED);
	assert_int_equal(gg_slurm_state("RUNNINGX"), GG_CE_UNKNOWN);
	assert_int_equal(gg_slurm_state(""), GG_CE_UNKNOWN);
}

static void sacct(void **state)
{
	(void)state;
	const char *ids[] = {"7", "8", "9", "10", "11", "12"};
	struct gg_ce_result r[6];
	memset(r, 0, sizeof r);
	r[5].code = 200; /* squeue answered it: kept */
	r[5].state = GG_CE_RUNNING;
	const char out[] = "7|COMPLETED|0:0\n"
			   "8|FAILED|3:0\n"
			   "9|CANCELLED by 1000|0:15\n"
			   "garbage without bars\n"
			   "dir|10|0\n"
			   "dir|11|\n"
			   "dir|12|1\n"
			   "12|FAILED|1:0\n"
			   "99|COMPLETED|0:0\n";
	gg_slurm_parse_sacct(out, sizeof out - 1, ids, 6, r);
	assert_int_equal(r[0].state, GG_CE_FINISHED);
	assert_null(r[0].reason);
	assert_int_equal(r[1].state, GG_CE_FAILED);
	assert_string_equal(r[1].reason, "the job ended with exit 3 (Slurm: FAILED)");
	assert_int_equal(r[2].state, GG_CE_KILLED);
	assert_string_equal(r[2].raw_state, "CANCELLED by 1000");
	assert_int_equal(r[3].state, GG_CE_FINISHED); /* the exit status the script left */
	assert_int_equal(r[4].state, GG_CE_FAILED);   /* a directory, no status, no Slurm */
	assert_non_null(strstr(r[4].reason, "no exit status"));
	assert_int_equal(r[5].state, GG_CE_RUNNING);
	assert_null(r[5].reason);
	for (int i = 0; i < 5; i++)
		assert_int_equal(r[i].code, 200);
	for (int i = 0; i < 6; i++) {
		free(r[i].reason);
		free(r[i].raw_state);
	}
	/* control bytes from the login node are not kept */
	struct gg_ce_result h = {0};
	const char *one[] = {"7"};
	const char bad[] = "7|FAILED\x1b[31m|0:0\n";
	gg_slurm_parse_sacct(bad, sizeof bad - 1, one, 1, &h);
	assert_null(h.raw_state); /* not a state */
	const char odd[] = "7|TIMEOUT|0:0|\x01more\n";
	gg_slurm_parse_sacct(odd, sizeof odd - 1, one, 1, &h);
	assert_int_equal(h.state, GG_CE_FAILED);
	assert_false(gg_str_has_control(h.reason));
	free(h.reason);
	free(h.raw_state);
}

/* No proxy, no token: the backend is chosen by the URL and opens. */
static void open_without_credential(void **state)
{
	(void)state;
	struct gg_ce_auth a = {0};
	struct gg_ce *ce = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_ce_open("slurm+ssh://u@login:2222/d", &a, &ce, &err), 0);
	assert_string_equal(gg_ce_backend(ce), "slurm-ssh");
	assert_true(gg_ce_status_lrms(ce));
	gg_ce_free(ce);
	assert_int_equal(gg_ce_open("https://ce.example/arex", &a, &ce, &err), GG_ECRED);
	assert_int_equal(gg_ce_open("slurm+ssh://u@bad host", &a, &ce, &err), GG_EUSAGE);
	assert_null(ce);
}

static void site_profile(void **state)
{
	(void)state;
	struct gg_site s = {0};
	struct gg_err err = {0};
	assert_int_equal(gg_site_set_key(&s, "ce", "slurm+ssh://u@login/scratch/u", &err), 0);
	assert_string_equal(gg_site_auth_kind(&s), "ssh");
	assert_int_equal(gg_site_set_key(&s, "slurm-gpu", "gpus", &err), 0);
	assert_int_equal(gg_site_set_key(&s, "slurm-gpu", "gres", &err), 0);
	assert_int_equal(gg_site_set_key(&s, "slurm-gpu", "mig", &err), GG_EUSAGE);
	assert_int_equal(gg_site_set_key(&s, "slurm-gpu-type", "a100", &err), 0);
	assert_int_equal(gg_site_set_key(&s, "slurm-gpu-type", "a1 00", &err), GG_EUSAGE);
	assert_int_equal(gg_site_set_key(&s, "slurm-gpu-type", "$(x)", &err), GG_EUSAGE);
	assert_int_equal(gg_site_set_key(&s, "slurm-stage", "login", &err), 0);
	assert_string_equal(s.slurm_stage, "login");
	assert_int_equal(gg_site_set_key(&s, "slurm-stage", "node", &err), 0);
	assert_int_equal(gg_site_set_key(&s, "slurm-stage", "frontend", &err), GG_EUSAGE);
	assert_int_equal(gg_site_set_key(&s, "ce", "slurm+ssh://u@login/a/../b", &err), GG_EUSAGE);
	/* sbatch asks the GPUs: no gpu_queue or gpu_rte needed */
	struct gg_jd_resources res = {.gpus = 1};
	s.name = strdup("hpc");
	assert_int_equal(gg_jd_gpu_check(&res, &s, &err), 0);
	/* the user's ssh key is the credential */
	struct gg_auth a;
	assert_int_equal(gg_auth_find(&s, "proxy", 3600, &a, &err), 0);
	assert_string_equal(a.kind, "ssh");
	assert_null(a.proxy_path);
	gg_auth_clear(&a);
	gg_site_clear(&s);
}

static void end_is(const char *state, const char *exit, const char *want)
{
	char *p = gg_slurm_end_phrase(state, exit);
	if (!want) {
		assert_null(p);
		return;
	}
	assert_non_null(p);
	assert_string_equal(p, want);
	free(p);
}

/* Slurm's end states in the user's words; TIMEOUT is the walltime's. */
static void end_phrases(void **state)
{
	(void)state;
	end_is("TIMEOUT", "0:15", "Slurm: TIMEOUT");
	end_is("OUT_OF_MEMORY", "0:125",
	       "out of memory: Slurm stopped the job at its memory limit; ask for more with "
	       "--memory (Slurm: OUT_OF_MEMORY)");
	end_is("NODE_FAIL", NULL,
	       "the node running the job failed; submit it again (Slurm: "
	       "NODE_FAIL)");
	end_is("PREEMPTED", "0:0",
	       "preempted: Slurm gave its resources to a job of higher priority (Slurm: "
	       "PREEMPTED)");
	end_is("FAILED", "3:0", "the job ended with exit 3 (Slurm: FAILED)");
	end_is("FAILED", "x", "Slurm: FAILED");
	end_is("SPECIAL_EXIT", NULL, "Slurm: SPECIAL_EXIT");
	end_is("TIMEOUT+", NULL, "Slurm: TIMEOUT"); /* sacct marks a requeued one */
	end_is("COMPLETED", "0:0", NULL);
	end_is("CANCELLED by 1000", "0:15", NULL); /* killed, not failed */
	end_is("RUNNING", NULL, NULL);
	end_is("TIMEOUTX", NULL, NULL);
	assert_true(gg_slurm_failed_walltime("Slurm: TIMEOUT"));
	assert_true(gg_slurm_failed_walltime("Slurm: TIMEOUT\nmore"));
	assert_false(gg_slurm_failed_walltime("Slurm: TIMEOUTS"));
	assert_false(gg_slurm_failed_walltime("Slurm: FAILED"));
	assert_false(gg_slurm_failed_walltime("LRMS error: (271) Job timeout"));
	assert_false(gg_slurm_failed_walltime(NULL));
}

/* The status's reasons for ended jobs: sacct's state and exit, the phrase. */
static void sacct_ends(void **state)
{
	(void)state;
	static const char out[] = "51|TIMEOUT|0:15\n"
				  "52|OUT_OF_MEMORY|0:125\n"
				  "53|NODE_FAIL|0:0\n"
				  "54|FAILED|2:0\n"
				  "55|COMPLETED|0:0\n"
				  "dir|56|\n";
	const char *ids[] = {"51", "52", "53", "54", "55", "56"};
	struct gg_ce_result r[6] = {{0}};
	gg_slurm_parse_sacct(out, strlen(out), ids, 6, r);
	assert_int_equal(r[0].state, GG_CE_FAILED);
	assert_string_equal(r[0].reason, "Slurm: TIMEOUT");
	assert_int_equal(r[1].state, GG_CE_FAILED);
	assert_non_null(strstr(r[1].reason, "(Slurm: OUT_OF_MEMORY)"));
	assert_non_null(strstr(r[2].reason, "(Slurm: NODE_FAIL)"));
	assert_string_equal(r[3].reason, "the job ended with exit 2 (Slurm: FAILED)");
	assert_int_equal(r[4].state, GG_CE_FINISHED);
	assert_null(r[4].reason);
	assert_int_equal(r[5].state, GG_CE_FAILED);
	assert_non_null(strstr(r[5].reason, "no exit status"));
	for (int i = 0; i < 6; i++) {
		free(r[i].raw_state);
		free(r[i].reason);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(url),          cmocka_unit_test(states),
		cmocka_unit_test(sacct),        cmocka_unit_test(open_without_credential),
		cmocka_unit_test(site_profile), cmocka_unit_test(end_phrases),
		cmocka_unit_test(sacct_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
