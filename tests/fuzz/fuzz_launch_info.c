/* gridgpu-session.json, published by the session launcher on the worker node and
 * read back over the CE's REST interface: gg_launch_info_parse. What it accepts
 * must satisfy what the SSH config writer relies on. */
#include <ctype.h>
#include <string.h>

#include "fuzz.h"
#include "node/node.h"
#include "store/store.h"
#include "ssh/ssh.h"

FUZZ_TARGET(launch_info)
{
	struct gg_launch_info li;
	struct gg_err err = {0};
	int rc = gg_launch_info_parse((const char *)data, size, &li, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0], "failure without a message (rc %d)", rc);
		FUZZ_CHECK(!li.state && !li.node && !li.host_key, "failure left fields set");
		return 0;
	}
	FUZZ_CHECK(li.state, "no state");
	FUZZ_CHECK(!strcmp(li.state, "starting") || !strcmp(li.state, "ready") ||
			   !strcmp(li.state, "ended"),
		   "state '%s'", li.state);
	if (!strcmp(li.state, "ready")) {
		FUZZ_CHECK(li.node && li.user && li.host_key, "ready without connection details");
		FUZZ_CHECK(li.port >= 1 && li.port <= 65535, "port %d", li.port);
		/* they go into an ssh config line: no spaces, quotes or newlines */
		for (const char *p = li.node; *p; p++)
			FUZZ_CHECK(isgraph((unsigned char)*p) && *p != '"', "node byte 0x%02x",
				   (unsigned char)*p);
		for (const char *p = li.user; *p; p++)
			FUZZ_CHECK(isgraph((unsigned char)*p) && *p != '"', "user byte 0x%02x",
				   (unsigned char)*p);
		struct gg_err e2 = {0};
		FUZZ_CHECK(gg_ssh_pubkey_check(li.host_key, &e2) == 0, "host key: %s", e2.msg);
		char fp[128];
		FUZZ_CHECK(gg_ssh_fingerprint(li.host_key, fp, sizeof fp, &e2) == 0,
			   "fingerprint: %s", e2.msg);
		/* the known_hosts line is "<alias> <key>": no newline may hide in the key */
		FUZZ_CHECK(!strchr(li.host_key, '\n') && !strchr(li.host_key, '\r'),
			   "newline in the host key");
	}
	FUZZ_CHECK(li.started >= 0 && li.deadline_at >= 0 && li.idle_limit >= 0 &&
			   li.last_activity >= 0,
		   "negative time");
	gg_launch_info_clear(&li);
	return 0;
}
