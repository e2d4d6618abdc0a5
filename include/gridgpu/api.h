/* The mark of libgridgpu's public functions: the library is built with
 * -fvisibility=hidden, so only what is declared GG_API in include/gridgpu/ is
 * exported from libgridgpu.so. */
#ifndef GRIDGPU_API_H
#define GRIDGPU_API_H

#if defined(__GNUC__) || defined(__clang__)
#define GG_API __attribute__((visibility("default")))
#else
#define GG_API
#endif

#endif
