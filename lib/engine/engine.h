/* The public header: include/gridgpu/engine.h. */
#ifndef GG_LIB_ENGINE_H
#define GG_LIB_ENGINE_H

#include "ce/ce.h"
#include "cred/cred.h"
#include "store/store.h"
#include "gridgpu/engine.h"

/* gg_engine_open_ce of site's CE, with site's profile (jump hosts,
 * known_hosts: what a slurm+ssh:// CE is reached by) even when e has no
 * configuration. */
int gg_engine_open_site_ce(struct gg_engine *e, const struct gg_site *site, const struct gg_auth *a,
			   struct gg_ce **ce, struct gg_err *err);

/* The enter script (gg_session_enter_script) is the node's: node/node.h. */
#include "node/node.h"

#endif
