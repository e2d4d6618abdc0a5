/* The error type carried through libgridgpu. */
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int gg_err_set(struct gg_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

int gg_err_sys(struct gg_err *err, int code, int errnum, const char *fmt, ...)
{
	if (err) {
		char what[GG_ERR_MSG_MAX];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(what, sizeof what, fmt, ap);
		va_end(ap);
		snprintf(err->msg, sizeof err->msg, "%s: %s", what, strerror(errnum));
		err->code = code;
	}
	return code;
}

int gg_err_prefix(struct gg_err *err, const char *fmt, ...)
{
	if (!err)
		return GG_EFAIL;
	char ctx[GG_ERR_MSG_MAX], old[GG_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof ctx, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	snprintf(err->msg, sizeof err->msg, "%s: %s", ctx, old);
	return err->code;
}

void gg_err_clear(struct gg_err *err)
{
	if (err) {
		err->code = GG_OK;
		err->msg[0] = '\0';
	}
}

/* The one table of error kinds: the code the library returns, the kind --json
 * names, the exit code of the gridgpu command (gridgpu(1), EXIT STATUS). */
static const struct gg_err_kind_row kinds[] = {
	{GG_OK, "ok", 0},
	{GG_EFAIL, "failure", 1},
	{GG_EUSAGE, "usage", 2},
	{GG_ECRED, "credentials", 3},
	{GG_ENET, "network", 4},
	{GG_ENOTFOUND, "not-found", 5},
	{GG_EJOB, "job-failed", 6},
	{GG_EIO, "io", 1},
	{GG_ENOMEM, "memory", 1},
	{GG_EPROTO, "protocol", 4},
	{GG_EINTR, "interrupted", 130},
	{GG_EHOSTKEY, "host-key", 4},
	{GG_EDIFFER, "differs", 6},
};

const struct gg_err_kind_row *gg_err_kinds(size_t *n)
{
	*n = sizeof kinds / sizeof kinds[0];
	return kinds;
}

/* Unknown codes are failures. */
static const struct gg_err_kind_row *row(int code)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (kinds[i].code == code)
			return &kinds[i];
	return &kinds[1];
}

int gg_err_exit_code(int code)
{
	return row(code)->exit_code;
}

const char *gg_err_kind(int code)
{
	return row(code)->kind;
}
