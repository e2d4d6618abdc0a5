/* Tokens obtained, not only found: a site's token source (a command run
 * without a shell, htgettoken-style, or an oidc-agent account through
 * liboidc-agent) and the refresh before a token runs out. */
#include "cred/tsource.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

extern char **environ;

#define TS_OUT_MAX            (64 * 1024)
#define TS_ERR_MAX            4096
#define TS_DEFAULT_MARGIN     300
#define TS_DEFAULT_TIMEOUT_MS 60000

static int64_t real_now(void *ud)
{
	(void)ud;
	return (int64_t)time(NULL);
}

int gg_tsource_new(const struct gg_site *site, struct gg_tsource **out, struct gg_err *err)
{
	*out = NULL;
	if (!site || (!site->token_command && !site->oidc_account))
		return 0;
	if (site->token_command && site->oidc_account)
		return gg_err_set(err, GG_EUSAGE,
				  "[site %s]: token_command and oidc_account both given: "
				  "choose one token source",
				  site->name);
	struct gg_tsource *ts = calloc(1, sizeof *ts);
	if (!ts)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	ts->refs = 1;
	ts->margin = site->token_refresh > 0 ? site->token_refresh : TS_DEFAULT_MARGIN;
	ts->timeout_ms = TS_DEFAULT_TIMEOUT_MS;
	ts->now = real_now;
	int rc = 0;
	if (site->token_command) {
		rc = gg_argv_split(site->token_command, &ts->argv, err);
		if (rc < 0)
			gg_err_prefix(err, "[site %s] token_command", site->name);
		else
			snprintf(ts->what, sizeof ts->what, "token_command '%s'", ts->argv[0]);
	} else {
		if (!(ts->account = strdup(site->oidc_account)) ||
		    (site->token_audience && !(ts->audience = strdup(site->token_audience))) ||
		    (site->token_scopes && !(ts->scopes = strdup(site->token_scopes))))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		snprintf(ts->what, sizeof ts->what, "oidc-agent account '%s'", site->oidc_account);
	}
	if (rc < 0) {
		gg_tsource_free(ts);
		return rc;
	}
	*out = ts;
	return 0;
}

struct gg_tsource *gg_tsource_ref(struct gg_tsource *ts)
{
	if (ts)
		ts->refs++;
	return ts;
}

void gg_tsource_free(struct gg_tsource *ts)
{
	if (!ts || --ts->refs > 0)
		return;
	gg_argv_free(ts->argv);
	free(ts->account);
	free(ts->audience);
	free(ts->scopes);
	gg_token_free(ts->cur);
	free(ts);
}

unsigned gg_tsource_fetches(const struct gg_tsource *ts)
{
	return ts->fetches;
}

const char *gg_tsource_describe(const struct gg_tsource *ts)
{
	return ts->what;
}

int64_t gg_tsource_margin(const struct gg_tsource *ts, int64_t lifetime)
{
	/* Short tokens (a test issuer's 40 s) are renewed when a quarter of
	 * their life is left, not 5 minutes before they were even made. */
	if (lifetime > 0 && lifetime / 4 < ts->margin)
		return lifetime / 4;
	return ts->margin;
}

/* Whether the token held does for now. A token without an expiry is kept
 * for the margin (default 5 minutes), then fetched again. */
static int fresh_enough(const struct gg_tsource *ts, int64_t now)
{
	if (!ts->cur)
		return 0;
	if (!ts->cur->exp)
		return now - ts->fetched_at < ts->margin;
	int64_t life = ts->cur->exp - ts->fetched_at;
	return ts->cur->exp - now > gg_tsource_margin(ts, life);
}

/* ---- the command ---------------------------------------------------------- */

/* Read both pipes until the child closes them or the deadline passes:
 * 0, or GG_ECRED (too much output, timeout: the caller kills). */
static int drain(struct gg_tsource *ts, int fds[2], char *out, size_t *nout, char *errb,
		 size_t *nerr, struct gg_err *err)
{
	struct pollfd p[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long spent =
			(t.tv_sec - start.tv_sec) * 1000 + (t.tv_nsec - start.tv_nsec) / 1000000;
		if (spent >= ts->timeout_ms)
			return gg_err_set(err, GG_ECRED, "%s gave no token within %d s", ts->what,
					  (ts->timeout_ms + 999) / 1000);
		int r = poll(p, 2, (int)(ts->timeout_ms - spent));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gg_err_sys(err, GG_ECRED, errno, "%s", ts->what);
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			char *buf = i ? errb : out;
			size_t *n = i ? nerr : nout, cap = i ? TS_ERR_MAX : TS_OUT_MAX;
			char scratch[512];
			ssize_t k = *n < cap ? read(p[i].fd, buf + *n, cap - *n)
					     : read(p[i].fd, scratch, sizeof scratch);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				p[i].fd = -1;
			else if (*n < cap)
				*n += (size_t)k;
			else if (!i)
				return gg_err_set(err, GG_ECRED, "%s printed more than %d KiB",
						  ts->what, TS_OUT_MAX / 1024);
		}
	}
	return 0;
}

/* Start the command with stdin from /dev/null, stdout and stderr to pipes. */
static int spawn(struct gg_tsource *ts, pid_t *pid, int fds[2], struct gg_err *err)
{
	/* A path is checked first: whether a failed exec shows as an error of
	 * posix_spawnp or as the child's exit 127 depends on how it is run. */
	if (strchr(ts->argv[0], '/') && access(ts->argv[0], X_OK) < 0)
		return gg_err_set(err, GG_ECRED, "%s cannot be run: %s", ts->what, strerror(errno));
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		return gg_err_sys(err, GG_ECRED, errno, "%s", ts->what);
	if (pipe2(pe, O_CLOEXEC) < 0) {
		int e = errno;
		close(po[0]);
		close(po[1]);
		return gg_err_sys(err, GG_ECRED, e, "%s", ts->what);
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
	int e = posix_spawnp(pid, ts->argv[0], &fa, NULL, ts->argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	if (e) {
		close(po[0]);
		close(pe[0]);
		return gg_err_set(err, GG_ECRED, "%s cannot be run: %s", ts->what, strerror(e));
	}
	fds[0] = po[0];
	fds[1] = pe[0];
	return 0;
}

/* "failed (exit status 3): <stderr>" for a failed command. The text is
 * kept as it was (at most 300 bytes): whoever shows the error escapes it
 * (the CLI does, once). */
static int command_failed(struct gg_tsource *ts, int status, const char *errb, size_t nerr,
			  struct gg_err *err)
{
	char how[48];
	if (WIFEXITED(status))
		snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
	while (nerr && (errb[nerr - 1] == '\n' || errb[nerr - 1] == ' '))
		nerr--;
	int shown = nerr > 300 ? 300 : (int)nerr;
	gg_err_set(err, GG_ECRED, "%s failed (%s)%s%.*s%s", ts->what, how, nerr ? ": " : "", shown,
		   errb, nerr > 300 ? "..." : "");
	return GG_ECRED;
}

int gg_tsource_run_command(struct gg_tsource *ts, char **value, struct gg_err *err)
{
	*value = NULL;
	pid_t pid;
	int fds[2] = {-1, -1};
	int rc = spawn(ts, &pid, fds, err);
	if (rc < 0)
		return rc;
	char *out = OPENSSL_zalloc(TS_OUT_MAX + 1), errb[TS_ERR_MAX];
	size_t nout = 0, nerr = 0;
	rc = out ? drain(ts, fds, out, &nout, errb, &nerr, err)
		 : gg_err_set(err, GG_ENOMEM, "out of memory");
	close(fds[0]);
	close(fds[1]);
	if (rc < 0)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = command_failed(ts, status, errb, nerr, err);
	else if (rc == 0 && memchr(out, '\0', nout))
		rc = gg_err_set(err, GG_ECRED, "%s printed binary data, not a token", ts->what);
	if (rc < 0) {
		OPENSSL_clear_free(out, TS_OUT_MAX + 1);
		return rc;
	}
	*value = out;
	return 0;
}

/* ---- oidc-agent ------------------------------------------------------------- */

/* liboidc-agent 4's structures (api.h), declared here so that gridgpu builds
 * without its headers and runs without the library: it is loaded with
 * dlopen when an oidc_account is used. */
struct oa_token_response {
	char *token;
	char *issuer;
	time_t expires_at;
};
struct oa_error_response {
	char *error;
	char *help;
};
struct oa_agent_response {
	unsigned char type; /* 0 error, 1 token */
	union {
		struct oa_token_response token_response;
		struct oa_error_response error_response;
	};
};
typedef struct oa_agent_response (*oa_get_fn)(const char *account, time_t min_valid,
					      const char *scope, const char *hint,
					      const char *audience);
typedef void (*oa_free_fn)(struct oa_agent_response);

/* The agent's answer as an error line, escaped. */
static int agent_error(struct gg_tsource *ts, const struct oa_error_response *e, struct gg_err *err)
{
	const char *msg = e->error ? e->error : "no token and no reason given";
	gg_err_set(err, GG_ECRED, "%s: oidc-agent: %.300s%s%.200s%s", ts->what, msg,
		   e->help ? " (" : "", e->help ? e->help : "", e->help ? ")" : "");
	return GG_ECRED;
}

int gg_tsource_run_agent(struct gg_tsource *ts, int64_t min_valid, char **value, int64_t *exp,
			 struct gg_err *err)
{
	*value = NULL;
	void *lib = dlopen("liboidc-agent.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return gg_err_set(err, GG_ECRED,
				  "%s: liboidc-agent is not installed (Debian: apt install "
				  "liboidc-agent4 oidc-agent-cli)",
				  ts->what);
	oa_get_fn get = (oa_get_fn)dlsym(lib, "getAgentTokenResponse");
	oa_free_fn fr = (oa_free_fn)dlsym(lib, "secFreeAgentResponse");
	if (!get || !fr) {
		dlclose(lib);
		return gg_err_set(err, GG_ECRED,
				  "%s: liboidc-agent.so.4 has no getAgentTokenResponse (version "
				  "4.2 or later is needed)",
				  ts->what);
	}
	const char *sock = getenv("OIDC_SOCK");
	if (!sock || !*sock) {
		dlclose(lib);
		return gg_err_set(err, GG_ECRED,
				  "%s: oidc-agent is not running (OIDC_SOCK is not set): start "
				  "it with eval $(oidc-agent) and oidc-add the account",
				  ts->what);
	}
	struct oa_agent_response r =
		get(ts->account, (time_t)min_valid, ts->scopes, "gridgpu", ts->audience);
	int rc = 0;
	if (r.type != 1 || !r.token_response.token) {
		rc = agent_error(ts, &r.error_response, err);
	} else {
		size_t n = strlen(r.token_response.token);
		if (!(*value = OPENSSL_malloc(n + 1)))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		else
			memcpy(*value, r.token_response.token, n + 1);
		*exp = (int64_t)r.token_response.expires_at;
	}
	fr(r);
	dlclose(lib);
	return rc;
}

/* ---- the refresh ---------------------------------------------------------- */

static int fetch(struct gg_tsource *ts, int64_t now, struct gg_err *err)
{
	char *value = NULL;
	int64_t exp = 0;
	int64_t life = ts->cur && ts->cur->exp ? ts->cur->exp - ts->fetched_at : 0;
	int rc = ts->fetch ? ts->fetch(ts->fetch_ud, &value, &exp, err)
		 : ts->argv
			 ? gg_tsource_run_command(ts, &value, err)
			 : gg_tsource_run_agent(ts, gg_tsource_margin(ts, life), &value, &exp, err);
	if (rc < 0)
		return rc;
	struct gg_token *t = NULL;
	rc = gg_token_new(value, ts->what, &t, err);
	OPENSSL_clear_free(value, strlen(value) + 1);
	if (rc < 0) {
		if (err && strstr(err->msg, "is empty"))
			gg_err_set(err, GG_ECRED, "%s printed no token", ts->what);
		else
			gg_err_set(err, GG_ECRED,
				   "%s printed something that is not a bearer token (RFC 6750)",
				   ts->what);
		return GG_ECRED;
	}
	if (!t->exp)
		t->exp = exp;
	if (t->exp && t->exp <= now) {
		gg_token_free(t);
		return gg_err_set(err, GG_ECRED, "%s gave a token that has already expired",
				  ts->what);
	}
	gg_token_free(ts->cur);
	ts->cur = t;
	ts->fetched_at = now;
	ts->fetches++;
	return 0;
}

int gg_tsource_token(struct gg_tsource *ts, const struct gg_token **tok, struct gg_err *err)
{
	*tok = NULL;
	int64_t now = ts->now(ts->now_ud);
	if (!fresh_enough(ts, now)) {
		int rc = fetch(ts, now, err);
		if (rc < 0)
			return rc;
	}
	*tok = ts->cur;
	return 0;
}

int gg_tsource_current(void *ud, const char **token, struct gg_err *err)
{
	const struct gg_token *t = NULL;
	int rc = gg_tsource_token(ud, &t, err);
	*token = rc < 0 ? NULL : t->value;
	return rc;
}
