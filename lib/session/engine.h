/* The public header: include/gridgpu/engine.h. */
#ifndef GG_LIB_ENGINE_H
#define GG_LIB_ENGINE_H

#include "ce/ce.h"
#include "cred/cred.h"
#include "session/session.h"
#include "gridgpu/engine.h"

#endif
