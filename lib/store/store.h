/* lib/store: the public part is include/gridgpu/session.h (records and the
 * store); here what only the library and the tests use. */
#ifndef GG_LIB_STORE_H
#define GG_LIB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "gridgpu/session.h"

/* A random id of 12 lowercase hex digits. */
int gg_random_uid(char out[13], struct gg_err *err);

/* The session file's parser (gg_launch_info_parse) is lib/node's. */

#endif
