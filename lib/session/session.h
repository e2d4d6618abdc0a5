/* lib/session: the public part is include/gridgpu/session.h (records and the
 * store); here what only the library and the tests use. */
#ifndef GG_LIB_SESSION_H
#define GG_LIB_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "gridgpu/session.h"

/* A random id of 12 lowercase hex digits. */
int gg_random_uid(char out[13], struct gg_err *err);

/* The session file the launcher publishes (gridgpu-session.json), parsed and
 * checked. Returns GG_EPROTO with the reason when it is malformed. */
struct gg_launch_info {
	char *state;  /* "starting", "ready", "ended" */
	char *reason; /* why it ended */
	char *node;
	int port;
	char *user;
	char *host_key; /* validated "ssh-ed25519 AAAA..." */
	char *sessiondir;
	int64_t started, deadline_at, idle_limit, last_activity;
	/* the activity: first login (0: none yet), logins so far, open
	 * connections, when the launcher wrote the file */
	int64_t first_login, logins, connections, updated;
	/* what it last saw: idle since (0: active now), or why active (printable
	 * ASCII, at most 63 characters; else left out) */
	int64_t idle_since;
	char *active_reason;
	char *launcher_version;
	char *container;
};
int gg_launch_info_parse(const char *text, size_t len, struct gg_launch_info *out,
			 struct gg_err *err);
void gg_launch_info_clear(struct gg_launch_info *li);

#endif
