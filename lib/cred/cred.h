/* The public header: include/gridgpu/cred.h. */
#ifndef GG_LIB_CRED_H
#define GG_LIB_CRED_H

#include "core/core.h"
#include "gridgpu/cred.h"

#endif
