/* gridgpu/ssh.h (lib/ssh): what a front end needs to reach a session over
 * ssh: the directories of the generated configuration, checks of the values
 * it writes (names, paths, jump hosts, keys), the Include line in
 * ~/.ssh/config, and the libssh2 client (a connection through the site's jump
 * hosts, a command's output streamed back). The generator itself and the
 * probes stay inside the library (lib/ssh/ssh.h). */
#ifndef GRIDGPU_SSH_H
#define GRIDGPU_SSH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gridgpu/core.h"

/* ---- keys ------------------------------------------------------------------ */

/* Check an OpenSSH public key line "TYPE BASE64 [comment]": a known type, valid
 * base64, and a key blob whose embedded type matches. */
GG_API int gg_ssh_pubkey_check(const char *line, struct gg_err *err);
/* SHA256 fingerprint as ssh-keygen -l prints it ("SHA256:..."); out >= 64 bytes. */
GG_API int gg_ssh_fingerprint(const char *line, char *out, size_t len, struct gg_err *err);
/* A key of the user's own (request --identity): its public key must be beside
 * it, at PATH.pub (GG_EUSAGE when it is not readable). */
GG_API int gg_ssh_identity_check(const char *path, struct gg_err *err);

/* ---- the generated configuration's files -------------------------------- */

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
GG_API int gg_ssh_paths_init(struct gg_ssh_paths *p, struct gg_err *err);
GG_API void gg_ssh_paths_clear(struct gg_ssh_paths *p);

/* Add "Include <config>" at the top of ~/.ssh/config (once). *added = 0 when
 * it was already there. A symbolic link there is kept: the file it names is
 * changed (atomically, in its own directory). A file that was not empty is
 * first copied to FILE.gridgpu-backup: *bak is that path (malloc'd), else NULL. */
GG_API int gg_ssh_install_include(const char *user_config, const char *include_path, int *added,
				  char **bak, struct gg_err *err);
/* OpenSSH takes ~ from the passwd entry, not from $HOME: when home is not that
 * directory, one line saying that ssh does not read home's ~/.ssh/config and
 * what to do (include_path: the Include line to add there); malloc'd. NULL
 * when they are the same directory (or the passwd entry cannot be read). */
GG_API char *gg_ssh_home_note(const char *home, const char *include_path);
/* What `gridgpu connect NAME -- ARGS` runs: "ssh -F config", the ssh options
 * among args (each with its value when it takes one: -L spec, -o opt), the
 * session's Host alias name, then the rest of args (the command). NULL-terminated;
 * free the array (not its strings, which are borrowed) with free(). NULL when out
 * of memory. */
GG_API char **gg_ssh_session_argv(const char *config, const char *name, char *const *args,
				  int nargs);

/* ---- values written to it ------------------------------------------------ */

/* Can a session have this name? Its Host alias in the generated config is the
 * name itself, and the Include comes first in ~/.ssh/config: a name with '.'
 * (github.com, 10.0.0.1) or localhost would take the place of that host, so
 * they are refused (GG_EUSAGE). */
GG_API int gg_ssh_session_name_ok(const char *name, struct gg_err *err);

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
GG_API int gg_ssh_cfg_check(const char *field, const char *value, enum gg_sshv kind,
			    struct gg_err *err);

/* A jump host as the site profile writes it: "[user@]host[:port]", an IPv6
 * address as "[addr]:port", "[addr]" or bare "addr" (no port then). */
struct gg_ssh_jump {
	char user[128]; /* "" when not given */
	char host[256];
	int port; /* 0 when not given */
};
/* Parse and check user and host (gg_ssh_cfg_check): GG_EUSAGE when bad. */
GG_API int gg_ssh_jump_parse(const char *j, struct gg_ssh_jump *out, struct gg_err *err);

/* Seconds ssh waits for each host of the generated config to answer. Through
 * a jump host this covers the login to the hops before it too (ssh counts the
 * wait for the banner), so doctor uses the same figure as connect. */
#define GG_SSH_CONNECT_TIMEOUT 20

/* Write the Host blocks of a site's jump hosts ("gridgpu-hop.SITE.N", each
 * through the one before, with the site's identity and known_hosts) to f.
 * extra (may be NULL) is added to every block, e.g. "  ServerAliveInterval 30\n".
 * Nothing is written when a value cannot be (GG_EUSAGE, see gg_ssh_cfg_value). */
GG_API int gg_ssh_format_hops(FILE *f, const struct gg_site *site, const char *extra,
			      struct gg_err *err);

/* ---- jump hosts that ask for a second factor ------------------------------ */

/* What gg_ssh_login does for each such hop of a site. */
enum gg_ssh_login_op {
	GG_LOGIN_OPEN,  /* open a master where none is up: ssh asks for the code on the
			   terminal (gridgpu never sees it) */
	GG_LOGIN_CHECK, /* GG_ENET when a hop has no master up */
	GG_LOGIN_EXIT,  /* close the masters */
};
enum gg_ssh_login_state {
	GG_LOGIN_UP,     /* a master is up (it was already) */
	GG_LOGIN_DOWN,   /* none is */
	GG_LOGIN_ASKING, /* ssh is about to ask for the code */
	GG_LOGIN_OPENED, /* it opened one */
	GG_LOGIN_CLOSED, /* it closed one */
};
/* Told each hop's state (k: 0 = the first jump host). */
typedef void (*gg_ssh_login_fn)(void *ud, int k, enum gg_ssh_login_state s);
/* op on every jump host of site that asks for a second factor (its
 * second_factor key), in order; each master stays up for the site's
 * control_persist unused (default GG_SSH_PERSIST_DEFAULT s). The generated
 * config (p->config) must have been written (gg_engine_write_ssh_config): the
 * masters log in through its hop blocks. Errors: GG_ECRED (the hop refused the
 * code or the key), GG_ENET, GG_EUSAGE (no such hop). */
#define GG_SSH_PERSIST_DEFAULT (4 * 3600)
GG_API int gg_ssh_login(const struct gg_ssh_paths *p, const struct gg_site *site,
			enum gg_ssh_login_op op, gg_ssh_login_fn said, void *ud,
			struct gg_err *err);

/* 0 when every jump host of site that asks for a second factor has its master
 * up (or none asks); else GG_ENET at once, one line naming the command to run
 * ("gridgpu login SITE"). What a command that needs the hops checks first. */
GG_API int gg_ssh_logins_check(const struct gg_site *site, struct gg_err *err);

/* ---- the libssh2 client ----------------------------------------------------- */

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
	const char *control;      /* this hop asks for a second factor: the control socket
				     of its OpenSSH master ('gridgpu login'); the hops up
				     to the last such hop are then OpenSSH's, and the next
				     is reached through the master (ssh -W). NULL: none */
	const char *login;        /* with control: the command that opens the master, for
				     the error when none is up ("gridgpu login SITE") */
};
struct gg_ssh_conn;
/* Connect to hops[n-1] through hops[0..n-2] (a direct-tcpip channel on each
 * hop carries the next hop's connection), checking every host key and
 * authenticating with each hop's key. timeout_ms bounds each step (0 = 20 s).
 * Errors: GG_ENET (unreachable, no answer), GG_EHOSTKEY (a host key that does not
 * match: possible man-in-the-middle), GG_ECRED (key refused, host not known).
 * *failed (may be NULL) is the index of the hop that failed (n on success). */
GG_API int gg_ssh_connect(const struct gg_ssh_hop *hops, size_t n, int timeout_ms,
			  struct gg_ssh_conn **out, size_t *failed, struct gg_err *err);
GG_API void gg_ssh_disconnect(struct gg_ssh_conn *c);
/* Run a command on the last hop in a thread of its own; its output is read
 * from *fd (a pipe; end of file when the command ends). The connection is the
 * thread's until gg_ssh_stream_finish, which waits for it (after closing *fd,
 * or with abort set, the command is given up) and gives the command's exit
 * status and the last 4 KiB of its error output (*errtext, malloc'd, NULL when
 * it said nothing; *status is 128 + signal when a signal ended it). */
struct gg_ssh_stream;
GG_API int gg_ssh_stream_start(struct gg_ssh_conn *c, const char *command, int *fd,
			       struct gg_ssh_stream **out, struct gg_err *err);
GG_API int gg_ssh_stream_finish(struct gg_ssh_stream *x, int abort, int *status, char **errtext,
				struct gg_err *err);
/* The bytes of output the command sent so far. */
GG_API uint64_t gg_ssh_stream_bytes(struct gg_ssh_stream *x);

/* ---- the way to a session --------------------------------------------------- */

/* The site's jump hosts (their identity and known_hosts), then the session's
 * sshd with its own key and its host key pinned. */
struct gg_ssh_route {
	struct gg_ssh_hop hops[GG_MAX_JUMPS + 1];
	size_t n;
	struct {
		char *user, *host, *name, *control, *login;
	} bufs[GG_MAX_JUMPS + 1];
};
struct gg_record;
/* The way to the sshd of session r (a record of gridgpu/session.h) on site. */
GG_API int gg_session_route(const struct gg_site *site, const struct gg_record *r,
			    struct gg_ssh_route *rt, struct gg_err *err);
GG_API void gg_ssh_route_clear(struct gg_ssh_route *rt);
/* The GPUs the session's job was given, as its launcher recorded them on the node
 * (nvidia-smi's description, read over c: a connection to the session's sshd), as
 * an image's provenance records GPUs (gg_gpu_smi_provenance). *json = NULL (rc 0)
 * when the node recorded none: no GPU, a MIG device, no nvidia-smi there.
 * malloc'd. */
GG_API int gg_session_node_gpus(struct gg_ssh_conn *c, char **json, struct gg_err *err);

#endif
