/* gridgpu-session.json as the node writes it, with values from a hostile node.
 * The input is the launcher's values, NUL-separated (a shell value holds no NUL),
 * in the order of launch_file_fields[] below (missing ones empty); the launcher's
 * own writer (json_object in libexec/gridgpu/session-launcher, run with /bin/sh
 * and the awk in PATH) makes the file, and the client reads it back
 * (gg_launch_info_parse). Whatever the values: the file is one line of valid
 * JSON; a string that is UTF-8 reads back as it was; a number is the value of
 * its digits, else 0; the client takes the file or refuses it with GG_EPROTO
 * and a message, takes it whenever the state is "starting" or "ended", and what
 * it takes is what the node wrote (the reason of activity only when it is a
 * short printable phrase). */
#include <ctype.h>
#include <jansson.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>

#include "fuzz.h"
#include "node/node.h"
#include "store/store.h"

#ifndef GG_LAUNCHER
#define GG_LAUNCHER "libexec/gridgpu/session-launcher"
#endif

/* "s" strings, "n" whole numbers, as publish() gives them */
static const char *const launch_file_fields[][2] = {
	{"s", "state"},
	{"s", "reason"},
	{"s", "node"},
	{"s", "user"},
	{"s", "host_key"},
	{"s", "sessiondir"},
	{"s", "container"},
	{"s", "active_reason"},
	{"s", "cuda_visible_devices"},
	{"s", "batch_job_id"},
	{"n", "port"},
	{"n", "started"},
	{"n", "connect_deadline"},
	{"n", "idle_limit"},
	{"n", "last_activity"},
	{"n", "first_login"},
	{"n", "logins"},
	{"n", "connections"},
	{"n", "updated"},
	{"n", "idle_since"},
};
#define LAUNCH_FILE_N (sizeof launch_file_fields / sizeof launch_file_fields[0])

static char *launch_file_writer; /* the launcher's json_object(), then a call of it */

FUZZ_INIT(launch_file)
{
	const char *path = getenv("GG_LAUNCHER");
	FILE *f = fopen(path && *path ? path : GG_LAUNCHER, "r");
	FUZZ_CHECK(f, "cannot read the launcher %s", GG_LAUNCHER);
	static char text[64 * 1024];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	char *a = strstr(text, "\njson_object() {\n"), *b = a ? strstr(a, "\n}\n") : NULL;
	FUZZ_CHECK(a && b, "no json_object() in the launcher");
	b[3] = '\0';
	size_t len = strlen(a) + 32;
	launch_file_writer = malloc(len);
	FUZZ_CHECK(launch_file_writer, "out of memory");
	snprintf(launch_file_writer, len, "%sjson_object \"$@\"\n", a + 1);
}

/* The writer's output for vals (NUL-terminated, malloc'd); its exit status. */
static char *launch_file_write(char *const *vals, int *status)
{
	const char *argv[4 + 3 * LAUNCH_FILE_N + 1] = {"sh", "-c", launch_file_writer, "sh"};
	size_t k = 4;
	for (size_t i = 0; i < LAUNCH_FILE_N; i++) {
		argv[k++] = launch_file_fields[i][0];
		argv[k++] = launch_file_fields[i][1];
		argv[k++] = vals[i];
	}
	argv[k] = NULL;
	int p[2];
	FUZZ_CHECK(pipe(p) == 0, "pipe");
	/* posix_spawn (vfork): no copy of the fuzzer's (ASan's) address space */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	posix_spawn_file_actions_addclose(&fa, p[1]);
	pid_t pid;
	extern char **environ;
	FUZZ_CHECK(posix_spawn(&pid, "/bin/sh", &fa, NULL, (char *const *)argv, environ) == 0,
		   "posix_spawn");
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	size_t n = 0, cap = 4096;
	char *out = malloc(cap);
	ssize_t r;
	/* (a signal of the fuzzer's own, its timer, may cut a read short) */
	while (out && ((r = read(p[0], out + n, cap - n - 1)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0 && (n += (size_t)r) + 1 == cap)
			out = realloc(out, cap *= 2);
	FUZZ_CHECK(out, "out of memory");
	out[n] = '\0';
	close(p[0]);
	pid_t w;
	while ((w = waitpid(pid, status, 0)) < 0 && errno == EINTR)
		;
	FUZZ_CHECK(w == pid, "waitpid");
	return out;
}

/* What the writer must make of a number: its digits (18 at most), else 0. */
static long long launch_file_num(const char *v)
{
	size_t n = strlen(v);
	if (!n || n > 18 || strspn(v, "0123456789") != n)
		return 0;
	return strtoll(v, NULL, 10);
}

static void launch_file_check_json(const char *out, char *const *vals)
{
	size_t len = strlen(out);
	FUZZ_CHECK(len && out[len - 1] == '\n' && !memchr(out, '\n', len - 1), "not one line: %s",
		   out);
	json_error_t je;
	json_t *j = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	FUZZ_CHECK(json_is_object(j), "not a JSON object (%s): %s", je.text, out);
	for (size_t i = 0; i < LAUNCH_FILE_N; i++) {
		json_t *v = json_object_get(j, launch_file_fields[i][1]);
		if (launch_file_fields[i][0][0] == 'n') {
			FUZZ_CHECK(json_is_integer(v) &&
					   json_integer_value(v) == launch_file_num(vals[i]),
				   "%s: '%s' written as %s", launch_file_fields[i][1], vals[i],
				   out);
			continue;
		}
		FUZZ_CHECK(json_is_string(v), "%s is not a string", launch_file_fields[i][1]);
		/* valid UTF-8 reads back as it was */
		FUZZ_CHECK(!gg_json_text_exact(vals[i]) || !strcmp(json_string_value(v), vals[i]),
			   "%s: '%s' reads back as '%s'", launch_file_fields[i][1], vals[i],
			   json_string_value(v));
	}
	json_decref(j);
}

static void launch_file_check_parse(const char *out, char *const *vals)
{
	struct gg_launch_info li;
	struct gg_err err = {0};
	const char *state = vals[0];
	int rc = gg_launch_info_parse(out, strlen(out), &li, &err);
	if (rc < 0) {
		FUZZ_CHECK(rc == GG_EPROTO && err.msg[0], "refused with %d '%s'", rc, err.msg);
		FUZZ_CHECK(strcmp(state, "starting") && strcmp(state, "ended"),
			   "a '%s' file refused: %s", state, err.msg);
		return;
	}
	FUZZ_CHECK(!strcmp(li.state, state), "state '%s' read as '%s'", state, li.state);
	if (li.active_reason) {
		FUZZ_CHECK(!strcmp(li.active_reason, vals[7]), "active_reason changed");
		size_t n = strlen(li.active_reason);
		FUZZ_CHECK(n && n <= 63, "active_reason of %zu bytes", n);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(isprint((unsigned char)li.active_reason[i]),
				   "active_reason byte 0x%02x", (unsigned char)li.active_reason[i]);
	}
	/* the connection details read back as written, where they are text JSON
	 * carries exactly (a byte that is not UTF-8 cannot be: as in check_json) */
	if (!strcmp(state, "ready"))
		FUZZ_CHECK(
			(!gg_json_text_exact(vals[2]) || !strcmp(li.node, vals[2])) &&
				(!gg_json_text_exact(vals[3]) || !strcmp(li.user, vals[3])) &&
				(!gg_json_text_exact(vals[4]) || !strcmp(li.host_key, vals[4])) &&
				li.port == launch_file_num(vals[10]),
			"ready: the connection details changed");
	FUZZ_CHECK(li.logins == launch_file_num(vals[16]), "logins changed");
	gg_launch_info_clear(&li);
}

FUZZ_TARGET(launch_file)
{
	if (size > 8192) /* a session file is small; the writer runs once per input */
		return 0;
	char *copy = fuzz_cstr(data, size), *vals[LAUNCH_FILE_N];
	size_t at = 0;
	for (size_t i = 0; i < LAUNCH_FILE_N; i++) {
		vals[i] = at <= size ? copy + at : copy + size;
		at += strlen(vals[i]) + 1;
	}
	int status;
	char *out = launch_file_write(vals, &status);
	FUZZ_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer failed (%d)", status);
	launch_file_check_json(out, vals);
	launch_file_check_parse(out, vals);
	free(out);
	free(copy);
	return 0;
}
