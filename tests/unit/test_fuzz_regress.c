/* The fuzz targets as regression tests, without clang or libFuzzer: every file in
 * tests/fuzz/regress/<target>/ (inputs that once crashed a target), in the seed
 * corpus tests/fuzz/corpus/<target>/ and, when tests/fuzz/make-seeds.sh has been
 * run, in tests/fuzz/corpus-gen/<target>/, goes through the same entry point the
 * fuzzer calls. Each target runs in a child process (a crash, an abort from a
 * sanitizer or a FUZZ_CHECK, or a hang past the time limit fails the test and
 * names the input). Under `make sanitize` the library is built with ASan+UBSan,
 * so memory errors in regression inputs fail here too.
 *
 * GG_FUZZ_DIR overrides where tests/fuzz is; GG_FUZZ_TIMEOUT the seconds one input
 * may take (default 30). */
#define GG_FUZZ_REGRESS 1

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "unit.h"

#include "../fuzz/fuzz_arc_info.c"
#include "../fuzz/fuzz_arc_jobs.c"
#include "../fuzz/fuzz_arc_staging.c"
#include "../fuzz/fuzz_check_report.c"
#include "../fuzz/fuzz_config.c"
#include "../fuzz/fuzz_csr.c"
#include "../fuzz/fuzz_glue2.c"
#include "../fuzz/fuzz_http_json.c"
#include "../fuzz/fuzz_http_version.c"
#include "../fuzz/fuzz_huffman.c"
#include "../fuzz/fuzz_job_exit.c"
#include "../fuzz/fuzz_keep.c"
#include "../fuzz/fuzz_launch_file.c"
#include "../fuzz/fuzz_launch_info.c"
#include "../fuzz/fuzz_node_gpus.c"
#include "../fuzz/fuzz_oci.c"
#include "../fuzz/fuzz_pem.c"
#include "../fuzz/fuzz_pkcs12.c"
#include "../fuzz/fuzz_printable.c"
#include "../fuzz/fuzz_lrms_refusal.c"
#include "../fuzz/fuzz_pubkey.c"
#include "../fuzz/fuzz_record.c"
#include "../fuzz/fuzz_sacct.c"
#include "../fuzz/fuzz_sif.c"
#include "../fuzz/fuzz_slurmq.c"
#include "../fuzz/fuzz_snap_list.c"
#include "../fuzz/fuzz_sshcfg.c"
#include "../fuzz/fuzz_tar.c"
#include "../fuzz/fuzz_token.c"
#include "../fuzz/fuzz_unfrozen.c"
#include "../fuzz/fuzz_usage.c"
#include "../fuzz/fuzz_voms.c"

#ifndef GG_FUZZ_DIR
#define GG_FUZZ_DIR "tests/fuzz"
#endif

static void no_init(void)
{
}

struct target {
	const char *name;
	void (*init)(void);
	int (*one)(const uint8_t *data, size_t size);
};

static const struct target targets[] = {
	{"arc_info", no_init, fuzz_one_arc_info},
	{"arc_jobs", no_init, fuzz_one_arc_jobs},
	{"arc_staging", no_init, fuzz_one_arc_staging},
	{"config", no_init, fuzz_one_config},
	{"csr", fuzz_init_csr, fuzz_one_csr},
	{"glue2", no_init, fuzz_one_glue2},
	{"http_json", no_init, fuzz_one_http_json},
	{"http_version", no_init, fuzz_one_http_version},
	{"huffman", no_init, fuzz_one_huffman},
	{"job_exit", no_init, fuzz_one_job_exit},
	{"usage", no_init, fuzz_one_usage},
	{"keep", no_init, fuzz_one_keep},
	{"launch_file", fuzz_init_launch_file, fuzz_one_launch_file},
	{"launch_info", no_init, fuzz_one_launch_info},
	{"lrms_refusal", no_init, fuzz_one_lrms_refusal},
	{"node_gpus", no_init, fuzz_one_node_gpus},
	{"oci", fuzz_init_oci, fuzz_one_oci},
	{"pem", fuzz_init_pem, fuzz_one_pem},
	{"pkcs12", fuzz_init_pkcs12, fuzz_one_pkcs12},
	{"printable", no_init, fuzz_one_printable},
	{"pubkey", no_init, fuzz_one_pubkey},
	{"record", no_init, fuzz_one_record},
	{"sacct", no_init, fuzz_one_sacct},
	{"sif", no_init, fuzz_one_sif},
	{"slurmq", no_init, fuzz_one_slurmq},
	{"snap_list", no_init, fuzz_one_snap_list},
	{"check_report", no_init, fuzz_one_check_report},
	{"sshcfg", no_init, fuzz_one_sshcfg},
	{"tar", fuzz_init_tar, fuzz_one_tar},
	{"token", no_init, fuzz_one_token},
	{"unfrozen", no_init, fuzz_one_unfrozen},
	{"voms", no_init, fuzz_one_voms},
};

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static const char *fuzz_dir(void)
{
	const char *d = getenv("GG_FUZZ_DIR");
	return d && *d ? d : GG_FUZZ_DIR;
}

/* The input files of a target, sorted; NULL-terminated, malloc'd. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **input_files(const char *name, size_t *count)
{
	static const char *const kinds[] = {"regress", "corpus", "corpus-gen"};
	char **files = NULL;
	size_t n = 0;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s/%s", fuzz_dir(), kinds[k], name);
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char *p = gg_strdup_printf("%s/%s", dir, e->d_name);
			struct stat st;
			if (!p || stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
				free(p);
				continue;
			}
			char **nf = realloc(files, (n + 2) * sizeof *nf);
			assert_non_null(nf);
			files = nf;
			files[n++] = p;
		}
		closedir(d);
	}
	if (files) {
		qsort(files, n, sizeof *files, cmp_str);
		files[n] = NULL;
	}
	*count = n;
	return files;
}

static int read_input(const char *path, uint8_t **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	*data = buf;
	*size = n;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* What a child tells its parent through shared memory: the input it is on. */
struct progress {
	size_t index; /* n when all were done */
};

/* Run inputs [from, n) of target t in one child, which stops at the first
 * failure; returns the index of the input that failed, or n. */
static size_t run_child(const struct target *t, char **files, size_t n, size_t from,
			struct progress *pr, unsigned timeout, const char *tmp, int *failed)
{
	pr->index = from;
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("TMPDIR", tmp, 1);
#ifndef UNDER_ASAN
		/* a runaway allocation fails fast instead of eating the machine (not under
		 * ASan, whose shadow memory needs the address space, nor valgrind) */
		const char *pre = getenv("LD_PRELOAD");
		if (!pre || !strstr(pre, "vgpreload")) {
			struct rlimit rl = {(rlim_t)4 << 30, (rlim_t)4 << 30};
			setrlimit(RLIMIT_AS, &rl);
		}
#endif
		t->init();
		for (size_t i = from; i < n; i++) {
			pr->index = i;
			uint8_t *data = NULL;
			size_t size = 0;
			if (read_input(files[i], &data, &size) < 0) {
				fprintf(stderr, "fuzz-regress: cannot read %s\n", files[i]);
				_exit(3);
			}
			alarm(timeout);
			t->one(data, size);
			alarm(0);
			free(data);
		}
		pr->index = n;
		fflush(NULL);
		exit(0); /* exit, not _exit: LeakSanitizer runs at exit */
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (*failed) {
		char how[64];
		if (WIFSIGNALED(st))
			snprintf(how, sizeof how, "%s%s", strsignal(WTERMSIG(st)),
				 WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
		else
			snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(st));
		fprintf(stderr, "fuzz-regress: %s: FAILED (%s) on %s\n", t->name, how,
			pr->index < n ? files[pr->index]
				      : "no input (after the last one: a leak at exit?)");
	}
	return pr->index;
}

/* Run every input of target t, in as few children as failures allow; the number
 * of inputs that failed. */
static size_t run_target(const struct target *t, char **files, size_t n)
{
	struct progress *pr =
		mmap(NULL, sizeof *pr, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(pr != MAP_FAILED);
	const char *tmo = getenv("GG_FUZZ_TIMEOUT");
	unsigned timeout = tmo && atoi(tmo) > 0 ? (unsigned)atoi(tmo) : 30;
	const char *td = getenv("TMPDIR");
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s/gg-fuzz-regress.XXXXXX", td && *td ? td : "/tmp");
	assert_non_null(mkdtemp(tmp));
	size_t bad = 0, from = 0;
	while (from < n) {
		int failed = 0;
		size_t at = run_child(t, files, n, from, pr, timeout, tmp, &failed);
		if (failed)
			bad++;
		if (at >= n)
			break;
		from = at + 1;
	}
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	munmap(pr, sizeof *pr);
	if (!bad)
		fprintf(stderr, "fuzz-regress: %s: %zu inputs ok\n", t->name, n);
	return bad;
}

static void test_target(void **state)
{
	const struct target *t = *state;
	size_t n = 0;
	char **files = input_files(t->name, &n);
	if (n == 0) {
		fprintf(stderr, "fuzz-regress: %s: no inputs under %s\n", t->name, fuzz_dir());
		free(files);
		skip();
		return;
	}
	size_t bad = run_target(t, files, n);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	if (bad)
		fail_msg("%s: %zu of %zu inputs failed (see above)", t->name, bad, n);
}

int main(void)
{
	struct CMUnitTest tests[sizeof targets / sizeof targets[0]];
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		struct CMUnitTest c = {targets[i].name, test_target, NULL, NULL,
				       (void *)&targets[i]};
		tests[i] = c;
	}
	return cmocka_run_group_tests_name("fuzz_regress", tests, NULL, NULL);
}
