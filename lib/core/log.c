/* The logging hook: the library says what it does, the caller decides where
 * it goes (-v, -vv). */
#include "core/core.h"

#include <stdarg.h>
#include <stdio.h>

void gg_logf(const struct gg_log *log, int level, const char *fmt, ...)
{
	if (!log || !log->fn || log->level < level)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log->fn(log->ud, level, msg);
}
