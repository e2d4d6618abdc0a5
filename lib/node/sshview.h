/* A session as lib/ssh sees it: the session layer decides which records are
 * live and turns them into plain ssh targets (lib/ssh knows no records). */
#ifndef GG_NODE_SSHVIEW_H
#define GG_NODE_SSHVIEW_H

#include <stddef.h>

#include "core/core.h"
#include "store/store.h"
#include "ssh/ssh.h"

/* Does the session get a Host block in the generated config? A session not
 * ended (ready, starting, queued or unknown) whose sshd is published: node,
 * port and host key pinned. */
int gg_session_live(const struct gg_record *r);
/* The record as lib/ssh sees it; t borrows r's strings. */
void gg_record_ssh_target(const struct gg_record *r, struct gg_ssh_target *t);

/* The HostKeyAlias of a session (gg_ssh_host_alias of its target). */
char *gg_session_host_alias(const struct gg_record *r);

/* Regenerate config, config.windows and known_hosts from the live sessions in
 * recs (the others are left out) and their sites' jump hosts
 * (gg_ssh_write_config). Written atomically (0600). */
int gg_session_write_ssh_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
				const struct gg_record *recs, size_t n, struct gg_err *err);
/* The text of the config for the live sessions in recs (gg_ssh_format_config).
 * malloc'd. */
char *gg_session_format_ssh_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
				   const struct gg_record *recs, size_t n, int windows);

/* Is the session's sshd there? (gg_ssh_probe) */
int gg_session_probe(const struct gg_site *site, const struct gg_record *r, int timeout_ms,
		     const struct gg_log *log, int *at_session, struct gg_err *err);

/* gg_session_node_gpus is gridgpu/ssh.h's; the command it runs on the node is
 * gg_node_gpus_command's (node/node.h). */

#endif
