/* A token source's insides, shared with its unit test (a fake fetch and
 * clock time the refresh); the API is in include/gridgpu/cred.h. */
#ifndef GG_CRED_TSOURCE_H
#define GG_CRED_TSOURCE_H

#include "cred/cred.h"

struct gg_tsource {
	int refs;
	char **argv;   /* token_command, split; or NULL */
	char *account; /* oidc_account; or NULL */
	char *audience, *scopes;
	int64_t margin; /* refresh when less than this is left (seconds) */
	int timeout_ms; /* the deadline of the command's whole run (tests shorten it) */
	char what[160]; /* "token_command 'x'" / "oidc-agent account 'x'" */
	struct gg_token *cur;
	int64_t fetched_at;
	unsigned fetches;
	/* Tests: another fetch (value OPENSSL_malloc'd; exp 0 when unknown) and
	 * another clock. */
	int (*fetch)(void *ud, char **value, int64_t *exp, struct gg_err *err);
	void *fetch_ud;
	int64_t (*now)(void *ud);
	void *now_ud;
};

/* The margin for a token of that lifetime (seconds; 0 unknown). */
int64_t gg_tsource_margin(const struct gg_tsource *ts, int64_t lifetime);
/* Run the command: its stdout (OPENSSL_malloc'd, NUL-terminated) or GG_ECRED. */
int gg_tsource_run_command(struct gg_tsource *ts, char **value, struct gg_err *err);
/* A command's stderr (n bytes; cut: there was more) as an error shows it, into
 * out (GG_TS_SHOWN + 5 bytes, NUL-terminated): every run of RFC 6750 token
 * characters that looks like a token - a JWT ("eyJ" and a dot), or 32 or more
 * with letters and digits - replaced by "[token hidden]", trailing blanks
 * dropped, at most GG_TS_SHOWN bytes of it, " ..." when there was more. Control
 * characters are kept: whoever shows the error escapes it. The length. */
#define GG_TS_SHOWN 300
size_t gg_tsource_shown_stderr(const char *in, size_t n, int cut, char *out);
/* Ask oidc-agent (liboidc-agent, dlopen'd) for a token valid min_valid seconds. */
int gg_tsource_run_agent(struct gg_tsource *ts, int64_t min_valid, char **value, int64_t *exp,
			 struct gg_err *err);

#endif
