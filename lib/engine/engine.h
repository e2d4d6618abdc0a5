/* The public header: include/gridgpu/engine.h. */
#ifndef GG_LIB_ENGINE_H
#define GG_LIB_ENGINE_H

#include "ce/ce.h"
#include "cred/cred.h"
#include "store/store.h"
#include "gridgpu/engine.h"

/* What gridgpu-enter (the script that puts a session's logins in its
 * container) is made of: the runtime ("apptainer" or "bwrap"; NULL =
 * apptainer), the image (a name staged in the session dir or a path on the
 * node), the offset of a staged SIF's squashfs partition (0 = found on the
 * node), GPUs asked for (apptainer --nv), the site profile's binds, then
 * --bind's (SRC[:DST], absolute). */
struct gg_enter_opts {
	const char *runtime, *image;
	int64_t offset;
	int gpus;
	char *const *site_binds;
	int nsite_binds;
	const char *const *binds;
	int nbinds;
};
/* The script's text (malloc'd in *out); GG_EUSAGE for a bind or runtime it
 * cannot take. */
int gg_session_enter_script(const struct gg_enter_opts *o, char **out, struct gg_err *err);

#endif
