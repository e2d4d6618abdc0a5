/* lib/ssh: the generated SSH configuration (one Host block per session target,
 * ProxyJump through the site's jump hosts, the session's host key pinned in its
 * own known_hosts), per-session keys, and public-key checks. It knows no
 * records: the session layer (node/sshview.h) says which sessions are live
 * and gives them as plain targets. What a front end calls is in
 * include/gridgpu/ssh.h; here what only the library and its tests use. */
#ifndef GG_SSH_H
#define GG_SSH_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"
#include "gridgpu/ssh.h"

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

/* A config and known_hosts for target t alone (its site's hops, its pinned
 * key), in a new private directory under p->dir: *dir (malloc'd), the config
 * *dir/config. For a bulk stream by OpenSSH, right whatever the generated
 * files say. Remove it with gg_ssh_temp_config_remove. */
int gg_ssh_temp_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
		       const struct gg_ssh_target *t, char **dir, struct gg_err *err);
void gg_ssh_temp_config_remove(const char *dir);

/* The value as written in the config (malloc'd), or NULL with err. */
char *gg_ssh_cfg_value(const char *field, const char *value, enum gg_sshv kind, struct gg_err *err);

/* Make an ed25519 key pair with ssh-keygen at path (path.pub too), 0600.
 * Removes a stale pair first. */
int gg_ssh_keygen(const char *path, const char *comment, struct gg_err *err);
/* Remove a key pair made by gg_ssh_keygen. */
void gg_ssh_key_remove(const char *path);

/* ---- second-factor hops (master.c) ---- */

/* 1 when jump host k (0 = the first) of site asks for a second factor. */
int gg_site_second_factor(const struct gg_site *site, int k);
/* The site's control_persist in seconds, or the default. */
int64_t gg_site_control_persist(const struct gg_site *site);
/* The control socket of hop k's master: "CONTROL_DIR/hop.SITE.K" (malloc'd);
 * NULL with GG_EUSAGE when too long for a socket. */
char *gg_ssh_master_path(const char *control_dir, const struct gg_site *site, int k,
			 struct gg_err *err);
/* 1 when a master answers at path (a connect to the socket: no process run). */
int gg_ssh_master_alive(const char *path);
/* GG_ENET: "LABEL asks for a second factor and no login to it is open: run 'LOGIN'". */
int gg_ssh_master_missing(const char *label, const char *login, struct gg_err *err);
/* A stream to host:port through the master at control (ssh -S control -W):
 * *fd one end of a socketpair, *pid the ssh; end with gg_ssh_master_stream_end. */
int gg_ssh_master_stream(const char *control, const char *host, int port, int *fd, pid_t *pid,
			 struct gg_err *err);
void gg_ssh_master_stream_end(int fd, pid_t pid);

/* Where the site's jump hosts h[0..njumps-1] ask for a second factor, their
 * masters (control, login), the strings kept in m. */
struct gg_ssh_masters {
	char ctl[GG_MAX_JUMPS][108];
	char login[160];
};
int gg_ssh_hops_masters(const struct gg_site *site, struct gg_ssh_hop *h, struct gg_ssh_masters *m,
			struct gg_err *err);

/* ---- bulk streams through OpenSSH (ostream.c) ---- */

/* A command's error output, its last part kept: b (n bytes) appended to buf (its
 * *len bytes, size in all), the oldest bytes dropped so that at most size - 1 are
 * kept (room for a NUL). */
void gg_ssh_keep_tail(char *buf, size_t size, size_t *len, const char *b, size_t n);

/* Run command on host (a Host of the ssh config file config) with the user's
 * ssh (BatchMode, no master of its own, no compression); its output is read
 * from *fd, as gg_ssh_stream_start's. GG_EFAIL when ssh cannot be run. */
struct gg_ssh_ostream;
int gg_ssh_ostream_start(const char *config, const char *ctl, const char *host, const char *command,
			 int *fd, struct gg_ssh_ostream **out, struct gg_err *err);
/* As gg_ssh_stream_finish: ssh's own failure (exit 255) is GG_ENET with its
 * last line. */
int gg_ssh_ostream_finish(struct gg_ssh_ostream *x, int abort, int *status, char **errtext,
			  struct gg_err *err);
uint64_t gg_ssh_ostream_bytes(struct gg_ssh_ostream *x);
/* ctl (may be NULL above): the socket of a master that host's commands ride on,
 * opened by gg_ssh_omaster_open (one login for a few commands; it stays persist
 * seconds after its last use), closed by gg_ssh_omaster_close. */
int gg_ssh_omaster_open(const char *config, const char *host, const char *ctl, int persist,
			struct gg_err *err);
void gg_ssh_omaster_close(const char *host, const char *ctl);
/* A command's output captured (at most max bytes, NUL-terminated, malloc'd), as
 * gg_ssh_exec_capture's, through the master at ctl. */
int gg_ssh_ocapture(const char *config, const char *ctl, const char *host, const char *command,
		    size_t max, char **out, size_t *len, int *status, char **errtext,
		    struct gg_err *err);

/* ---- the libssh2 client (client.c) ---- */

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
/* What gg_ssh_exec_input sends: all of fd (read to its end), then the end of the
 * input; fed (may be NULL) is told each chunk's size as it goes. */
struct gg_ssh_input {
	int fd;
	void (*fed)(void *ud, uint64_t bytes);
	void *ud;
};
/* Run a command whose input is in's (its output is not read: a command that
 * writes much while it reads would stall); as gg_ssh_exec otherwise. */
int gg_ssh_exec_input(struct gg_ssh_conn *c, const char *command, const struct gg_ssh_input *in,
		      int *status, char **errtext, struct gg_err *err);
/* How long a command may stay silent (and a blocking step take) from now on, in
 * ms (gg_ssh_connect's timeout until then). */
void gg_ssh_set_timeout(struct gg_ssh_conn *c, int timeout_ms);
/* The same, output captured in *out (malloc'd, NUL-terminated, at most max
 * bytes: GG_EPROTO beyond). */
int gg_ssh_exec_capture(struct gg_ssh_conn *c, const char *command, size_t max, char **out,
			size_t *len, int *status, char **errtext, struct gg_err *err);
/* The last hop's LIBSSH2_SESSION (blocking), its timeout and cancel hook:
 * what sftp.c works on. */
void *gg_ssh_conn_session(struct gg_ssh_conn *c, int *timeout_ms, gg_ssh_cancel_fn *cancel,
			  void **cancel_ud);
/* ---- sftp on the last hop (sftp.c): paths as its sftp server takes them
 * (relative to the login's home) ---- */
/* Write all of fd into path (created 0600, or truncated); fed (may be NULL)
 * told each chunk's size. */
int gg_ssh_sftp_put(struct gg_ssh_conn *c, int fd, const char *path,
		    void (*fed)(void *ud, uint64_t bytes), void *ud, struct gg_err *err);
/* Read path to its end into sink (non-zero from sink: GG_EIO); at most max
 * bytes (GG_EPROTO beyond; 0: no bound). GG_ENOTFOUND when there is no such
 * file. */
int gg_ssh_sftp_get(struct gg_ssh_conn *c, const char *path, uint64_t max, gg_ssh_sink_fn sink,
		    void *ud, struct gg_err *err);
/* One sftp session for several files (its subsystem started once): the
 * same calls on it. End it before the connection is closed. */
struct gg_ssh_sftp;
int gg_ssh_sftp_start(struct gg_ssh_conn *c, struct gg_ssh_sftp **x, struct gg_err *err);
void gg_ssh_sftp_end(struct gg_ssh_sftp *x);
int gg_ssh_sftp_put_on(struct gg_ssh_sftp *x, int fd, const char *path,
		       void (*fed)(void *ud, uint64_t bytes), void *ud, struct gg_err *err);
int gg_ssh_sftp_get_on(struct gg_ssh_sftp *x, const char *path, uint64_t max, gg_ssh_sink_fn sink,
		       void *ud, struct gg_err *err);
/* Make directory path (mode 0700); GG_ENOTFOUND when its parent is not
 * there, GG_EIO when it is already. */
int gg_ssh_sftp_mkdir(struct gg_ssh_sftp *x, const char *path, struct gg_err *err);
/* 1 when the key blob (as a server sends it) is the key of the OpenSSH public
 * key line pinned. */
int gg_ssh_key_matches(const char *pinned, const void *blob, size_t len);

/* The way to a session (gg_session_route gives it for a record). */
int gg_ssh_session_route(const struct gg_site *site, const struct gg_ssh_target *t,
			 struct gg_ssh_route *rt, struct gg_err *err);
/* Is the session's sshd there? Connects through the hops and checks that the
 * sshd answers with the pinned host key; 0 when it does. It does not log in: a
 * login would count as the user's first connection on the node (the connect
 * deadline would no longer apply).
 * *at_session (may be NULL) is 1 when it was the session's sshd itself that
 * failed (not a jump host), e.g. GG_EHOSTKEY: its key is not the pinned one. */
int gg_ssh_probe(const struct gg_site *site, const struct gg_ssh_target *t, int timeout_ms,
		 const struct gg_log *log, int *at_session, struct gg_err *err);

#endif
