/* Tokens obtained, not only found: a site's token source (a command run
 * without a shell, htgettoken-style, or an oidc-agent account through
 * liboidc-agent) and the refresh before a token runs out. */
#include "cred/tsource.h"
#include "core/run.h"
#include "compat/compat.h"

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
#define TS_GRACE_MS           500 /* from SIGTERM to SIGKILL */

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

/* One run of the command. It runs in a process group of its own (its pid),
 * stopped as a whole at the end of the run, whatever it left behind. */
struct run {
	pid_t pid;
	int fd[2];           /* its stdout, stderr (non-blocking); -1 once closed */
	int pidfd;           /* readable when it has ended; -1 without pidfd_open */
	struct timespec end; /* the deadline of the whole run */
	char *out;           /* TS_OUT_MAX + 1, OPENSSL_zalloc'd */
	size_t nout, nerr;
	int err_cut; /* more stderr than errb holds */
	char errb[TS_ERR_MAX];
};

/* now + ms on the monotonic clock */
static void deadline_in(struct timespec *end, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, end);
	end->tv_sec += ms / 1000;
	end->tv_nsec += (ms % 1000) * 1000000;
	if (end->tv_nsec >= 1000000000) {
		end->tv_sec++;
		end->tv_nsec -= 1000000000;
	}
}

static long ms_left(const struct timespec *end)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long)(end->tv_sec - t.tv_sec) * 1000 + (end->tv_nsec - t.tv_nsec) / 1000000;
}

/* Whether the command itself has ended (left unreaped: its pid stays the
 * group's id, nobody else's, until finish). */
static int ended(const struct run *r)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == r->pid;
}

/* Read what pipe i holds now (a bounded number of reads): 0, or GG_ECRED
 * when stdout is longer than a token can be. */
static int take(struct gg_tsource *ts, struct run *r, int i, struct gg_err *err)
{
	char *buf = i ? r->errb : r->out;
	size_t *n = i ? &r->nerr : &r->nout, cap = i ? TS_ERR_MAX : TS_OUT_MAX;
	for (int k = 0; r->fd[i] >= 0 && k < 64; k++) {
		char scratch[512];
		ssize_t got = *n < cap ? read(r->fd[i], buf + *n, cap - *n)
				       : read(r->fd[i], scratch, sizeof scratch);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return 0;
		if (got <= 0) {
			close(r->fd[i]);
			r->fd[i] = -1;
		} else if (*n < cap) {
			*n += (size_t)got;
		} else if (!i) {
			return gg_err_set(err, GG_ECRED, "%s printed more than %d KiB", ts->what,
					  TS_OUT_MAX / 1024);
		} else {
			r->err_cut = 1;
		}
	}
	return 0;
}

/* Whether b64token character c (RFC 6750) may be part of a token. */
static int tokchar(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("-._~+/=", c));
}

/* Whether the run [s, s+n) of token characters looks like a token: a JWT
 * ("eyJ" - a JSON object's start in base64 - and a dot), or 32 characters
 * or more with letters and digits. */
static int tokenish(const char *s, size_t n)
{
	if (n >= 4 && !strncmp(s, "eyJ", 3) && memchr(s, '.', n))
		return 1;
	int digit = 0, alpha = 0;
	for (size_t i = 0; i < n; i++) {
		digit |= s[i] >= '0' && s[i] <= '9';
		alpha |= (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z');
	}
	return n >= 32 && digit && alpha;
}

#define TS_HIDDEN "[token hidden]"

size_t gg_tsource_shown_stderr(const char *in, size_t n, int cut, char *out)
{
	size_t w = 0, i = 0;
	while (n &&
	       (in[n - 1] == '\n' || in[n - 1] == '\r' || in[n - 1] == '\t' || in[n - 1] == ' '))
		n--;
	while (i < n && w < GG_TS_SHOWN) {
		size_t j = i;
		while (j < n && tokchar(in[j]))
			j++;
		const char *src = in + i;
		size_t len = j - i;
		if (len && tokenish(src, len)) {
			src = TS_HIDDEN;
			len = sizeof TS_HIDDEN - 1;
		}
		if (len > GG_TS_SHOWN - w) {
			len = GG_TS_SHOWN - w;
			j = n; /* cut: the rest is not shown */
		}
		memcpy(out + w, src, len);
		w += len;
		if (j < n && w < GG_TS_SHOWN)
			out[w++] = in[j++];
		i = j;
	}
	/* apart from the text: "..." would lengthen its last word */
	if (i < n || cut) {
		memcpy(out + w, " ...", 4);
		w += 4;
	}
	out[w] = '\0';
	return w;
}

/* Read both pipes until the command ends or the deadline passes: 0, or
 * GG_ECRED (too much output, the deadline). A child left holding a pipe is
 * not waited for: what the command wrote is in the pipe when it ends. */
static int drain(struct gg_tsource *ts, struct run *r, struct gg_err *err)
{
	for (;;) {
		int done = ended(r), rc = take(ts, r, 0, err);
		if (rc < 0 || (rc = take(ts, r, 1, err)) < 0)
			return rc;
		if (done)
			return 0;
		long left = ms_left(&r->end);
		if (left <= 0) {
			char shown[GG_TS_SHOWN + 5];
			gg_tsource_shown_stderr(r->errb, r->nerr, r->err_cut, shown);
			return gg_err_set(err, GG_ECRED,
					  "%s gave no token within %d s: stopped%s%s", ts->what,
					  (ts->timeout_ms + 999) / 1000, *shown ? ": " : "", shown);
		}
		/* Without a pidfd (Linux < 5.3) the end is looked for every 20 ms. */
		struct pollfd p[3] = {{.fd = r->fd[0], .events = POLLIN},
				      {.fd = r->fd[1], .events = POLLIN},
				      {.fd = r->pidfd, .events = POLLIN}};
		if (poll(p, 3, (int)(r->pidfd < 0 && left > 20 ? 20 : left)) < 0 && errno != EINTR)
			return gg_err_sys(err, GG_ECRED, errno, "%s", ts->what);
	}
}

/* Until no process of group pg runs, at most ms: whether none does. */
static int group_ends(pid_t pg, long ms)
{
	struct timespec end;
	deadline_in(&end, ms);
	while (gg_compat_group_runs(pg)) {
		if (ms_left(&end) <= 0)
			return 0;
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000000}, NULL);
	}
	return 1;
}

/* The end of every run: the command's process group is stopped - SIGTERM,
 * then SIGKILL for what is left after a grace - and the command reaped (only
 * now: until then its pid, the group's id, cannot be anyone else's). 1 when
 * reaped (*status set); 0 when it could not be (stuck in the kernel). */
static int finish(struct run *r, int *status)
{
	kill(-r->pid, SIGTERM);
	kill(-r->pid, SIGCONT); /* a stopped one gets the SIGTERM too */
	if (!group_ends(r->pid, TS_GRACE_MS)) {
		kill(-r->pid, SIGKILL);
		group_ends(r->pid, TS_GRACE_MS);
	}
	pid_t w;
	while ((w = waitpid(r->pid, status, WNOHANG)) < 0 && errno == EINTR)
		;
	return w == r->pid;
}

/* Our ends of two pipes, non-blocking and close-on-exec. */
static int open_pipes(int po[2], int pe[2])
{
	if (gg_compat_pipe(po, 0) < 0)
		return -1;
	if (gg_compat_pipe(pe, 0) < 0) {
		int e = errno;
		close(po[0]);
		close(po[1]);
		errno = e;
		return -1;
	}
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	return 0;
}

/* Start the command with stdin from /dev/null, stdout and stderr to pipes. */
static int spawn(struct gg_tsource *ts, struct run *r, struct gg_err *err)
{
	/* A path is checked first: whether a failed exec shows as an error of
	 * posix_spawnp or as the child's exit 127 depends on how it is run. */
	if (strchr(ts->argv[0], '/') && access(ts->argv[0], X_OK) < 0)
		return gg_err_set(err, GG_ECRED, "%s cannot be run: %s", ts->what, strerror(errno));
	int po[2], pe[2];
	if (open_pipes(po, pe) < 0)
		return gg_err_sys(err, GG_ECRED, errno, "%s", ts->what);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
	posix_spawnattr_t at;
	gg_run_spawn_attr(&at);
	int e = posix_spawnp(&r->pid, ts->argv[0], &fa, &at, ts->argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	if (e) {
		close(po[0]);
		close(pe[0]);
		return gg_err_set(err, GG_ECRED, "%s cannot be run: %s", ts->what, strerror(e));
	}
	r->fd[0] = po[0];
	r->fd[1] = pe[0];
	r->pidfd = gg_compat_pidfd(r->pid);
	return 0;
}

/* "failed (exit status 3): <stderr>" for a failed command: its stderr with
 * anything that looks like a token masked, at most 300 bytes. */
static int command_failed(struct gg_tsource *ts, int status, const struct run *r,
			  struct gg_err *err)
{
	char how[48];
	if (WIFEXITED(status))
		snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
	char shown[GG_TS_SHOWN + 5];
	gg_tsource_shown_stderr(r->errb, r->nerr, r->err_cut, shown);
	gg_err_set(err, GG_ECRED, "%s failed (%s)%s%s", ts->what, how, *shown ? ": " : "", shown);
	OPENSSL_cleanse(shown, sizeof shown);
	return GG_ECRED;
}

int gg_tsource_run_command(struct gg_tsource *ts, char **value, struct gg_err *err)
{
	*value = NULL;
	struct run r = {.fd = {-1, -1}, .pidfd = -1};
	deadline_in(&r.end, ts->timeout_ms);
	if (!(r.out = OPENSSL_zalloc(TS_OUT_MAX + 1)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = spawn(ts, &r, err), status = 0;
	if (rc == 0) {
		rc = drain(ts, &r, err);
		for (int i = 0; i < 2; i++)
			if (r.fd[i] >= 0)
				close(r.fd[i]);
		if (r.pidfd >= 0)
			close(r.pidfd);
		if (!finish(&r, &status) && rc == 0)
			rc = gg_err_set(err, GG_ECRED, "%s could not be stopped", ts->what);
	}
	if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = command_failed(ts, status, &r, err);
	else if (rc == 0 && memchr(r.out, '\0', r.nout))
		rc = gg_err_set(err, GG_ECRED, "%s printed binary data, not a token", ts->what);
	OPENSSL_cleanse(r.errb, sizeof r.errb);
	if (rc < 0) {
		OPENSSL_clear_free(r.out, TS_OUT_MAX + 1);
		return rc;
	}
	*value = r.out;
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
