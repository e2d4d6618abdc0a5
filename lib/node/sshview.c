/* A session as lib/ssh sees it: which records are live, and their targets. */
#include "node/sshview.h"

#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "node/node.h"

int gg_session_live(const struct gg_record *r)
{
	return r->kind == GG_REC_SESSION && r->host_key && r->node && r->port > 0 &&
	       !gg_sess_state_ended(r->state);
}

void gg_record_ssh_target(const struct gg_record *r, struct gg_ssh_target *t)
{
	*t = (struct gg_ssh_target){
		.name = r->name,
		.uid = r->uid,
		.site = r->site,
		.node = r->node,
		.port = r->port,
		.user = r->user,
		.host_key = r->host_key,
		.key = r->key,
	};
}

char *gg_session_host_alias(const struct gg_record *r)
{
	struct gg_ssh_target t;
	gg_record_ssh_target(r, &t);
	return gg_ssh_host_alias(&t);
}

/* The targets of the live sessions in recs (malloc'd, *nt of them), or NULL
 * when out of memory. */
static struct gg_ssh_target *live_targets(const struct gg_record *recs, size_t n, size_t *nt)
{
	struct gg_ssh_target *t = calloc(n ? n : 1, sizeof *t);
	*nt = 0;
	for (size_t i = 0; t && i < n; i++)
		if (gg_session_live(&recs[i]))
			gg_record_ssh_target(&recs[i], &t[(*nt)++]);
	return t;
}

int gg_session_write_ssh_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
				const struct gg_record *recs, size_t n, struct gg_err *err)
{
	size_t nt;
	struct gg_ssh_target *t = live_targets(recs, n, &nt);
	if (!t)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_ssh_write_config(p, cfg, t, nt, err);
	free(t);
	return rc;
}

char *gg_session_format_ssh_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
				   const struct gg_record *recs, size_t n, int windows)
{
	size_t nt;
	struct gg_ssh_target *t = live_targets(recs, n, &nt);
	char *text = t ? gg_ssh_format_config(p, cfg, t, nt, windows) : NULL;
	free(t);
	return text;
}

int gg_session_route(const struct gg_site *site, const struct gg_record *r, struct gg_ssh_route *rt,
		     struct gg_err *err)
{
	struct gg_ssh_target t;
	gg_record_ssh_target(r, &t);
	return gg_ssh_session_route(site, &t, rt, err);
}

int gg_session_probe(const struct gg_site *site, const struct gg_record *r, int timeout_ms,
		     const struct gg_log *log, int *at_session, struct gg_err *err)
{
	struct gg_ssh_target t;
	gg_record_ssh_target(r, &t);
	return gg_ssh_probe(site, &t, timeout_ms, log, at_session, err);
}

int gg_session_node_gpus(struct gg_ssh_conn *c, char **json, struct gg_err *err)
{
	char *out = NULL, *errtext = NULL;
	size_t len;
	int status;
	*json = NULL;
	char *cmd = gg_node_gpus_command();
	int rc = cmd ? gg_ssh_exec_capture(c, cmd, 64 * 1024, &out, &len, &status, &errtext, err)
		     : gg_err_set(err, GG_ENOMEM, "out of memory");
	free(cmd);
	free(errtext);
	if (rc == 0 && status != 0)
		rc = gg_err_set(err, GG_EPROTO,
				"the node did not say which GPUs the session has (exit %d)",
				status);
	if (rc == 0 && strlen(out) != len)
		rc = gg_err_set(err, GG_EPROTO,
				"the node's record of the session's GPUs is "
				"not text");
	if (rc == 0)
		rc = gg_gpu_smi_provenance(out, json, err);
	free(out);
	return rc;
}
