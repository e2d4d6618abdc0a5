/* The session file the launcher publishes (gridgpu-session.json): parsed and
 * checked, its members as node.def names them. */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "node/node.h"
#include "ssh/ssh.h"

void gg_launch_info_clear(struct gg_launch_info *li)
{
	if (!li)
		return;
	free(li->state);
	free(li->reason);
	free(li->node);
	free(li->user);
	free(li->host_key);
	free(li->sessiondir);
	free(li->launcher_version);
	free(li->container);
	free(li->active_reason);
	free(li->snapshot_error);
	memset(li, 0, sizeof *li);
}

static int host_ok(const char *h)
{
	if (!h || !*h || strlen(h) > 253)
		return 0;
	for (const char *p = h; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(".-:_", *p))
			return 0;
	return h[0] != '-';
}

static int user_ok(const char *u)
{
	if (!u || !*u || strlen(u) > 64 || u[0] == '-')
		return 0;
	for (const char *p = u; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-$", *p))
			return 0;
	return 1;
}

/* Why the launcher says a session is active: a short phrase of printable
 * ASCII ("" when idle). */
static int reason_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (s[n] < 0x20 || s[n] > 0x7e || n >= 63)
			return 0;
	return n > 0;
}

/* The member of li a whole number of the file goes to, or NULL (read, not kept). */
static int64_t *number_member(struct gg_launch_info *li, const char *name)
{
	static const struct {
		const char *name;
		size_t off;
	} m[] = {
		{"started", offsetof(struct gg_launch_info, started)},
		{"connect_deadline", offsetof(struct gg_launch_info, deadline_at)},
		{"idle_limit", offsetof(struct gg_launch_info, idle_limit)},
		{"last_activity", offsetof(struct gg_launch_info, last_activity)},
		{"first_login", offsetof(struct gg_launch_info, first_login)},
		{"logins", offsetof(struct gg_launch_info, logins)},
		{"connections", offsetof(struct gg_launch_info, connections)},
		{"updated", offsetof(struct gg_launch_info, updated)},
		{"idle_since", offsetof(struct gg_launch_info, idle_since)},
		{"snapshot_size", offsetof(struct gg_launch_info, snapshot_size)},
		{"snapshot_at", offsetof(struct gg_launch_info, snapshot_at)},
	};
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (!strcmp(m[i].name, name))
			return (int64_t *)((char *)li + m[i].off);
	return NULL;
}

/* The whole numbers of node.def's fields (but port, checked with the connection
 * details): each, when there, a non-negative integer. */
static int read_numbers(json_t *j, struct gg_launch_info *li, struct gg_err *err)
{
	size_t n;
	const struct gg_node_field_info *f = gg_node_fields(&n);
	for (size_t i = 0; i < n; i++) {
		if (f[i].type != 'n' || !strcmp(f[i].name, "port"))
			continue;
		json_t *v = json_object_get(j, f[i].name);
		if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
			return gg_err_set(err, GG_EPROTO, "'%s' is not a non-negative integer",
					  f[i].name);
		int64_t *m = number_member(li, f[i].name);
		if (m)
			*m = v ? json_integer_value(v) : 0;
	}
	return 0;
}

int gg_launch_info_parse(const char *text, size_t len, struct gg_launch_info *li,
			 struct gg_err *err)
{
	memset(li, 0, sizeof *li);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return gg_err_set(err, GG_EPROTO, "not valid JSON (%s)", je.text);
	int rc = 0;
	const char *state = json_string_value(json_object_get(j, "state"));
	if (!json_is_object(j) || !state ||
	    (strcmp(state, "starting") && strcmp(state, "ready") && strcmp(state, "ended"))) {
		rc = gg_err_set(err, GG_EPROTO, "missing or unknown 'state'");
		goto out;
	}
	li->state = strdup(state);
	const char *s;
	if ((s = json_string_value(json_object_get(j, "reason"))))
		li->reason = strdup(s);
	if ((s = json_string_value(json_object_get(j, "launcher"))))
		li->launcher_version = strdup(s);
	if ((s = json_string_value(json_object_get(j, "container"))))
		li->container = strdup(s);
	if ((s = json_string_value(json_object_get(j, "sessiondir"))))
		li->sessiondir = strdup(s);
	if ((s = json_string_value(json_object_get(j, "active_reason"))) && reason_ok(s))
		li->active_reason = strdup(s);
	if ((s = json_string_value(json_object_get(j, "snapshot_error"))) && *s)
		li->snapshot_error = gg_str_printable(s, strlen(s) > 512 ? 512 : strlen(s));
	json_t *v;
	if ((rc = read_numbers(j, li, err)) < 0)
		goto out;
	if (strcmp(state, "ready") != 0)
		goto out; /* no connection details expected */
	const char *node = json_string_value(json_object_get(j, "node"));
	const char *user = json_string_value(json_object_get(j, "user"));
	const char *key = json_string_value(json_object_get(j, "host_key"));
	v = json_object_get(j, "port");
	if (!host_ok(node)) {
		rc = gg_err_set(err, GG_EPROTO, "missing or invalid 'node'");
		goto out;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535) {
		rc = gg_err_set(err, GG_EPROTO, "missing or invalid 'port'");
		goto out;
	}
	if (!user_ok(user)) {
		rc = gg_err_set(err, GG_EPROTO, "missing or invalid 'user'");
		goto out;
	}
	if (!key || gg_ssh_pubkey_check(key, err) < 0) {
		rc = key ? gg_err_prefix(err, "host key")
			 : gg_err_set(err, GG_EPROTO, "no 'host_key'");
		if (err)
			err->code = rc = GG_EPROTO;
		goto out;
	}
	li->node = strdup(node);
	li->port = (int)json_integer_value(v);
	li->user = strdup(user);
	li->host_key = strdup(key);
out:
	json_decref(j);
	if (rc < 0)
		gg_launch_info_clear(li);
	else if (!li->state)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	return rc;
}
