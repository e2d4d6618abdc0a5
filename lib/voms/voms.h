/* The public header: include/gridgpu/voms.h. */
#ifndef GG_LIB_VOMS_H
#define GG_LIB_VOMS_H

#include "core/core.h"
#include "cred/cred.h"
#include "gridgpu/voms.h"

#endif
