/* The public header: include/gridgpu/cred.h. */
#ifndef GG_LIB_CRED_H
#define GG_LIB_CRED_H

#include "core/core.h"
#include "gridgpu/cred.h"

/* The user's proxy into a (an "ssh" auth, a slurm+ssh site's), checked to
 * last need_left seconds, the kind kept: for the storage URLs a job names,
 * which the proxy reaches and the ssh key does not. GG_ECRED naming 'gridgpu
 * proxy init' when there is none, it has expired or is too short. */
int gg_auth_add_proxy(struct gg_auth *a, int64_t need_left, struct gg_err *err);

#endif
