/* lib/ssh: the generated SSH configuration (one Host block per session target,
 * ProxyJump through the site's jump hosts, the session's host key pinned in its
 * own known_hosts), per-session keys, and public-key checks. It knows no
 * records: the session layer (session/sshview.h) says which sessions are live
 * and gives them as plain targets. */
#ifndef GG_SSH_H
#define GG_SSH_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "core/core.h"

/* Check an OpenSSH public key line "TYPE BASE64 [comment]": a known type, valid
 * base64, and a key blob whose embedded type matches. */
int gg_ssh_pubkey_check(const char *line, struct gg_err *err);
/* SHA256 fingerprint as ssh-keygen -l prints it ("SHA256:..."); out >= 64 bytes. */
int gg_ssh_fingerprint(const char *line, char *out, size_t len, struct gg_err *err);
/* A key of the user's own (request --identity): its public key must be beside
 * it, at PATH.pub (GG_EUSAGE when it is not readable). */
int gg_ssh_identity_check(const char *path, struct gg_err *err);

struct gg_ssh_paths {
	char *dir;          /* $XDG_CONFIG_HOME/gridgpu/ssh (0700) */
	char *config;       /* dir/config */
	char *config_win;   /* dir/config.windows */
	char *known_hosts;  /* dir/known_hosts */
	char *keys;         /* dir/keys (0700) */
	char *control;      /* ControlPath directory (0700): $XDG_RUNTIME_DIR/gridgpu-cm,
			       else $TMPDIR (or /tmp)/gridgpu-cm-<uid> (socket paths
			       must be short);
			       when that is not a directory of ours (someone else made
			       it, a symbolic link): $XDG_STATE_HOME/gridgpu/cm */
	char *control_note; /* why control is not the usual one, else NULL */
};
/* Resolve and create the directories (0700); refuses directories others can
 * write to or read. */
int gg_ssh_paths_init(struct gg_ssh_paths *p, struct gg_err *err);
void gg_ssh_paths_clear(struct gg_ssh_paths *p);

/* Can a session have this name? Its Host alias in the generated config is the
 * name itself, and the Include comes first in ~/.ssh/config: a name with '.'
 * (github.com, 10.0.0.1) or localhost would take the place of that host, so
 * they are refused (GG_EUSAGE). */
int gg_ssh_session_name_ok(const char *name, struct gg_err *err);
/* A session's sshd as ssh reaches it. The strings are borrowed. */
struct gg_ssh_target {
	const char *name;     /* session name: the Host alias */
	const char *uid;      /* HostKeyAlias "gridgpu-<uid>" (the name when NULL) */
	const char *site;     /* site name: its jump hosts (none when NULL) */
	const char *node;     /* HostName */
	int port;             /* > 0 */
	const char *user;     /* NULL: ssh's default */
	const char *host_key; /* pinned "TYPE BASE64" */
	const char *key;      /* identity file; NULL: none given */
};

/* The HostKeyAlias of a session. */
char *gg_ssh_host_alias(const struct gg_ssh_target *t);

/* Regenerate config, config.windows and known_hosts: a Host block and a pinned
 * key for every target (a target without node, port or host key gets a comment
 * instead of a block), and the jump hosts of the sites they use. Written
 * atomically (0600). */
int gg_ssh_write_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
			const struct gg_ssh_target *t, size_t n, struct gg_err *err);
/* The text of the config (windows = OpenSSH for Windows form). malloc'd. */
char *gg_ssh_format_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
			   const struct gg_ssh_target *t, size_t n, int windows);

/* A value written after a keyword of the generated ssh config. Every value
 * goes through gg_ssh_cfg_value (or is checked first by gg_ssh_cfg_check, at
 * site add and request time): no value can add an option, break the file's
 * syntax or be expanded by ssh. */
enum gg_sshv {
	GG_SSHV_PATH,    /* a file (IdentityFile, UserKnownHostsFile, ControlPath):
			    no control character, '"', '\\' or "${"; written in double
			    quotes with '%' as "%%" (these keywords expand %-tokens) */
	GG_SSHV_HOST,    /* HostName: a host name (letters, digits, '.', '-', '_') or an
			    IPv6 address, with a zone ("%eth0" written "%%eth0") or not */
	GG_SSHV_USER,    /* User: letters, digits, '.', '_', '-' (not '-' or '.' first) */
	GG_SSHV_ALIAS,   /* a Host alias gridgpu makes (session, hop): like a user name */
	GG_SSHV_INCLUDE, /* the Include line's file: as PATH, absolute, and no '%' or glob
			    characters (Include expands globs, not %-tokens) */
};
/* 0, or GG_EUSAGE with a one-line message naming field and what to do. */
int gg_ssh_cfg_check(const char *field, const char *value, enum gg_sshv kind, struct gg_err *err);
/* The value as written in the config (malloc'd), or NULL with err. */
char *gg_ssh_cfg_value(const char *field, const char *value, enum gg_sshv kind, struct gg_err *err);

/* A jump host as the site profile writes it: "[user@]host[:port]", an IPv6
 * address as "[addr]:port", "[addr]" or bare "addr" (no port then). */
struct gg_ssh_jump {
	char user[128]; /* "" when not given */
	char host[256];
	int port; /* 0 when not given */
};
/* Parse and check user and host (gg_ssh_cfg_check): GG_EUSAGE when bad. */
int gg_ssh_jump_parse(const char *j, struct gg_ssh_jump *out, struct gg_err *err);

/* Seconds ssh waits for each host of the generated config to answer. Through
 * a jump host this covers the login to the hops before it too (ssh counts the
 * wait for the banner), so doctor uses the same figure as connect. */
#define GG_SSH_CONNECT_TIMEOUT 20

/* Write the Host blocks of a site's jump hosts ("gridgpu-hop.SITE.N", each
 * through the one before, with the site's identity and known_hosts) to f.
 * extra (may be NULL) is added to every block, e.g. "  ServerAliveInterval 30\n".
 * Nothing is written when a value cannot be (GG_EUSAGE, see gg_ssh_cfg_value). */
int gg_ssh_format_hops(FILE *f, const struct gg_site *site, const char *extra, struct gg_err *err);

/* Make an ed25519 key pair with ssh-keygen at path (path.pub too), 0600.
 * Removes a stale pair first. */
int gg_ssh_keygen(const char *path, const char *comment, struct gg_err *err);
/* Remove a key pair made by gg_ssh_keygen. */
void gg_ssh_key_remove(const char *path);

/* Add "Include <config>" at the top of ~/.ssh/config (once). *added = 0 when
 * it was already there. A symbolic link there is kept: the file it names is
 * changed (atomically, in its own directory). A file that was not empty is
 * first copied to FILE.gridgpu-backup: *bak is that path (malloc'd), else NULL. */
int gg_ssh_install_include(const char *user_config, const char *include_path, int *added,
			   char **bak, struct gg_err *err);

/* ---- the libssh2 client (client.c) ---- */

/* One host on the way to a session's sshd. */
struct gg_ssh_hop {
	const char *host;
	int port;                 /* 0 = 22 */
	const char *user;         /* NULL = the local user name */
	const char *name;         /* for messages ("jump host 1"), may be NULL */
	const char *identity;     /* private key file; NULL = ssh-agent, then ~/.ssh/id_* */
	const char *known_hosts;  /* the host's key is looked up here (OpenSSH format);
				     NULL = ~/.ssh/known_hosts */
	const char *pinned_key;   /* "TYPE BASE64": the only key accepted (known_hosts
				     is then not read) */
	int no_login;             /* last hop only: check the host key, do not log in
				     (nothing to run then) */
	const struct gg_log *log; /* first hop's: each hop reached or not (-v); or NULL */
};
struct gg_ssh_conn;
/* Connect to hops[n-1] through hops[0..n-2] (a direct-tcpip channel on each
 * hop carries the next hop's connection), checking every host key and
 * authenticating with each hop's key. timeout_ms bounds each step (0 = 20 s).
 * Errors: GG_ENET (unreachable, no answer), GG_EHOSTKEY (a host key that does not
 * match: possible man-in-the-middle), GG_ECRED (key refused, host not known).
 * *failed (may be NULL) is the index of the hop that failed (n on success). */
int gg_ssh_connect(const struct gg_ssh_hop *hops, size_t n, int timeout_ms,
		   struct gg_ssh_conn **out, size_t *failed, struct gg_err *err);
void gg_ssh_disconnect(struct gg_ssh_conn *c);
/* Checked while a command runs; non-zero ends it with GG_EINTR. */
typedef int (*gg_ssh_cancel_fn)(void *ud);
void gg_ssh_set_cancel(struct gg_ssh_conn *c, gg_ssh_cancel_fn fn, void *ud);
/* Run a command on the last hop, with no input. Its output goes to sink in
 * chunks (non-zero from sink ends the command with an error); the last 4 KiB of
 * its error output go to *errtext (malloc'd, NULL when it said nothing);
 * *status is its exit status (128 + signal when a signal ended it). A command
 * silent for the connection's timeout is given up (GG_ENET). */
typedef int (*gg_ssh_sink_fn)(void *ud, const void *buf, size_t len);
int gg_ssh_exec(struct gg_ssh_conn *c, const char *command, gg_ssh_sink_fn sink, void *ud,
		int *status, char **errtext, struct gg_err *err);
/* The same, output captured in *out (malloc'd, NUL-terminated, at most max
 * bytes: GG_EPROTO beyond). */
int gg_ssh_exec_capture(struct gg_ssh_conn *c, const char *command, size_t max, char **out,
			size_t *len, int *status, char **errtext, struct gg_err *err);
/* Run a command on the last hop in a thread of its own; its output is read
 * from *fd (a pipe; end of file when the command ends). The connection is the
 * thread's until gg_ssh_stream_finish, which waits for it (after closing *fd,
 * or with abort set, the command is given up) and gives the command's exit
 * status and error output as gg_ssh_exec does. */
struct gg_ssh_stream;
int gg_ssh_stream_start(struct gg_ssh_conn *c, const char *command, int *fd,
			struct gg_ssh_stream **out, struct gg_err *err);
int gg_ssh_stream_finish(struct gg_ssh_stream *x, int abort, int *status, char **errtext,
			 struct gg_err *err);
/* The bytes of output the command sent so far. */
uint64_t gg_ssh_stream_bytes(struct gg_ssh_stream *x);
/* 1 when the key blob (as a server sends it) is the key of the OpenSSH public
 * key line pinned. */
int gg_ssh_key_matches(const char *pinned, const void *blob, size_t len);

/* The way to a session: the site's jump hosts (their identity and known_hosts),
 * then the session's sshd with its own key and its host key pinned. */
struct gg_ssh_route {
	struct gg_ssh_hop hops[GG_MAX_JUMPS + 1];
	size_t n;
	struct {
		char *user, *host, *name;
	} bufs[GG_MAX_JUMPS + 1];
};
int gg_ssh_session_route(const struct gg_site *site, const struct gg_ssh_target *t,
			 struct gg_ssh_route *rt, struct gg_err *err);
void gg_ssh_route_clear(struct gg_ssh_route *rt);
/* Is the session's sshd there? Connects through the hops and checks that the
 * sshd answers with the pinned host key; 0 when it does. It does not log in: a
 * login would count as the user's first connection on the node (the connect
 * deadline would no longer apply).
 * *at_session (may be NULL) is 1 when it was the session's sshd itself that
 * failed (not a jump host), e.g. GG_EHOSTKEY: its key is not the pinned one. */
int gg_ssh_probe(const struct gg_site *site, const struct gg_ssh_target *t, int timeout_ms,
		 const struct gg_log *log, int *at_session, struct gg_err *err);

#endif
