/* Helpers shared by the commands that talk to sites and sessions. */
#ifndef GG_CLI_CTX_H
#define GG_CLI_CTX_H

#include "ce/ce.h"
#include "cli.h"
#include "cred/cred.h"
#include "interrupt.h"
#include "session/session.h"

/* The site from --site or the default one; NULL (error printed when required,
 * or when --site names no site; cli->cfg_exit set) when none. */
const struct gg_site *cli_site(struct gg_cli *cli, int required);

struct cli_auth {
	const char *kind; /* "proxy" or "token" */
	char *proxy_path;
	struct gg_token *token;
	char *ca_dir;
};
/* Find the credential for a site (its auth, or want_auth) and check it lasts
 * need_left seconds; the error says how to get one (GG_ECRED). */
int cli_auth(struct gg_cli *cli, const struct gg_site *site, const char *want_auth,
	     int64_t need_left, struct cli_auth *a, struct gg_err *err);
void cli_auth_clear(struct cli_auth *a);
int cli_open_ce(const char *endpoint, const struct cli_auth *a, struct gg_ce **ce,
		struct gg_err *err);

/* The CE of a record with the credential its site (or the record) asks for:
 * cli_auth + cli_open_ce in one. The caller frees ce and clears auth. */
int cli_open_record_ce(struct gg_cli *cli, const struct gg_record *r, struct cli_auth *auth,
		       struct gg_ce **ce, struct gg_err *err);

struct gg_store *cli_store(struct gg_cli *cli);
/* Regenerate the SSH configuration from the store. */
int cli_write_ssh_config(struct gg_cli *cli, struct gg_store *st, struct gg_err *err);
/* The session launcher script to stage (malloc'd). */
char *cli_launcher_path(void);
/* Load a record by name; prints "no such session or job (known: ...)", exit 5. */
int cli_find_record(struct gg_cli *cli, struct gg_store *st, const char *name, struct gg_record *r);

/* Save a refreshed record over the stored one (under the lock); a record that
 * was meanwhile ended elsewhere wins. */
int cli_save_refreshed(struct gg_store *st, struct gg_record *r, struct gg_err *err);
/* A local file named on the command line (an image, an input): a readable
 * regular file, else GG_EUSAGE (missing, not a regular file: exit 2) or GG_EIO
 * (unreadable), with why in err. */
int cli_local_file(const char *path, struct gg_err *err);
/* A session whose sshd is published but not yet seen to answer: probe it
 * through the hops with libssh2 (gg_ssh_probe). It becomes "ready" when the
 * sshd answers with the pinned key; "failed" when it answers with another key;
 * else it stays "starting" and the reason is left in cli->probe_why. When a
 * jump host on the way failed (down, or not its known key), that error is
 * returned (and put in *way): waiting will not mend it. */
int cli_probe_published(struct gg_cli *cli, struct gg_record *r, int timeout_ms,
			struct gg_err *way);
/* Refresh from the CE until the session is ready or ended, showing progress on
 * stderr; GG_EINTR on Ctrl-C, GG_ENET after timeout seconds (0 = none). */
int cli_wait_ready(struct gg_cli *cli, struct gg_store *st, struct gg_ce *ce, struct gg_record *r,
		   int64_t timeout, struct gg_err *err);

/* Refresh records from their CEs (one bulk call per CE and credential), save
 * them, rewrite the SSH configuration. only_live skips ended records. Returns
 * 0 or the exit code of the first CE that could not be asked (records kept). */
int cli_sync_records(struct gg_cli *cli, struct gg_store *st, struct gg_record *recs, size_t n,
		     int only_live);

#endif
