/* lib/ssh: the generated SSH configuration (one Host block per live session,
 * ProxyJump through the site's jump hosts, the session's host key pinned in its
 * own known_hosts), per-session keys, and public-key checks. */
#ifndef GG_SSH_H
#define GG_SSH_H

#include <stddef.h>
#include <stdio.h>

#include "core/core.h"
#include "session/session.h"

/* Check an OpenSSH public key line "TYPE BASE64 [comment]": a known type, valid
 * base64, and a key blob whose embedded type matches. */
int gg_ssh_pubkey_check(const char *line, struct gg_err *err);
/* SHA256 fingerprint as ssh-keygen -l prints it ("SHA256:..."); out >= 64 bytes. */
int gg_ssh_fingerprint(const char *line, char *out, size_t len, struct gg_err *err);

struct gg_ssh_paths {
	char *dir;         /* $XDG_CONFIG_HOME/gridgpu/ssh (0700) */
	char *config;      /* dir/config */
	char *config_win;  /* dir/config.windows */
	char *known_hosts; /* dir/known_hosts */
	char *keys;        /* dir/keys (0700) */
	char *control;     /* ControlPath directory (0700): $XDG_RUNTIME_DIR/gridgpu-cm,
			      else /tmp/gridgpu-cm-<uid> (socket paths must be short) */
};
/* Resolve and create the directories (0700); refuses directories others can
 * write to or read. */
int gg_ssh_paths_init(struct gg_ssh_paths *p, struct gg_err *err);
void gg_ssh_paths_clear(struct gg_ssh_paths *p);

/* The HostKeyAlias of a session. */
char *gg_ssh_host_alias(const struct gg_record *r);

/* Regenerate config, config.windows and known_hosts from the live sessions in
 * recs (ready, or starting with a pinned key), and the sites' jump hosts.
 * Written atomically (0600). */
int gg_ssh_write_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
			const struct gg_record *recs, size_t n, struct gg_err *err);
/* The text of the config (windows = OpenSSH for Windows form). malloc'd. */
char *gg_ssh_format_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
			   const struct gg_record *recs, size_t n, int windows);

/* Write the Host blocks of a site's jump hosts ("gridgpu-hop.SITE.N", each
 * through the one before, with the site's identity and known_hosts) to f.
 * extra (may be NULL) is added to every block, e.g. "  ConnectTimeout 5\n". */
void gg_ssh_format_hops(FILE *f, const struct gg_site *site, const char *extra);

/* Make an ed25519 key pair with ssh-keygen at path (path.pub too), 0600.
 * Removes a stale pair first. */
int gg_ssh_keygen(const char *path, const char *comment, struct gg_err *err);
/* Remove a key pair made by gg_ssh_keygen. */
void gg_ssh_key_remove(const char *path);

/* Add "Include <config>" at the top of ~/.ssh/config (once; backup to
 * config.gridgpu-backup first). *added = 0 when it was already there. */
int gg_ssh_install_include(const char *user_config, const char *include_path, int *added,
			   struct gg_err *err);

#endif
