/* Common includes for the cmocka unit tests. */
#ifndef GG_UNIT_H
#define GG_UNIT_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"

/* Whether this build has the compat layer's fast path name (" o_tmpfile", ...; a
 * --disable-linux-fastpaths build has none): a test of what only the fast path does. */
static inline int unit_fast(const char *name)
{
	return strstr(gg_compat_fastpaths(), name) != NULL;
}

/* Remove a test's temporary directory tree; 0 when it is gone. */
static inline int unit_rmtree(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A group's temporary directory: tmpdir, made by setup_tmp (mkdtemp under
 * /tmp/PREFIX.XXXXXX) and removed by teardown_tmp. */
#define UNIT_TMPDIR(prefix)                               \
	static char tmpdir[64];                           \
	static int setup_tmp(void **state)                \
	{                                                 \
		(void)state;                              \
		strcpy(tmpdir, "/tmp/" prefix ".XXXXXX"); \
		return mkdtemp(tmpdir) ? 0 : -1;          \
	}                                                 \
	static int teardown_tmp(void **state)             \
	{                                                 \
		(void)state;                              \
		return unit_rmtree(tmpdir);               \
	}
#endif
