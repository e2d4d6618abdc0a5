/* The public header: include/gridgpu/engine.h. */
#ifndef GG_LIB_ENGINE_H
#define GG_LIB_ENGINE_H

#include "ce/ce.h"
#include "cred/cred.h"
#include "store/store.h"
#include "gridgpu/engine.h"

/* The enter script (gg_session_enter_script) is the node's: node/node.h. */
#include "node/node.h"

#endif
