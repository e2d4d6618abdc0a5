/* A session as lib/ssh sees it. */
#include "session/sshview.h"

char *gg_session_host_alias(const struct gg_record *r)
{
	return gg_ssh_host_alias(r);
}

int gg_session_write_ssh_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
				const struct gg_record *recs, size_t n, struct gg_err *err)
{
	return gg_ssh_write_config(p, cfg, recs, n, err);
}

char *gg_session_format_ssh_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
				   const struct gg_record *recs, size_t n, int windows)
{
	return gg_ssh_format_config(p, cfg, recs, n, windows);
}

int gg_session_route(const struct gg_site *site, const struct gg_record *r, struct gg_ssh_route *rt,
		     struct gg_err *err)
{
	return gg_ssh_session_route(site, r, rt, err);
}

int gg_session_probe(const struct gg_site *site, const struct gg_record *r, int timeout_ms,
		     int *at_session, struct gg_err *err)
{
	return gg_ssh_probe(site, r, timeout_ms, at_session, err);
}
