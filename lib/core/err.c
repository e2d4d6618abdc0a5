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

int gg_err_exit_code(int code)
{
	switch (code) {
	case GG_OK: return 0;
	case GG_EUSAGE: return 2;
	case GG_ECRED: return 3;
	case GG_ENET:
	case GG_EPROTO:
	case GG_EHOSTKEY: return 4;
	case GG_ENOTFOUND: return 5;
	case GG_EJOB: return 6;
	case GG_EINTR: return 130;
	default: return 1;
	}
}

const char *gg_err_kind(int code)
{
	switch (code) {
	case GG_OK: return "ok";
	case GG_EUSAGE: return "usage";
	case GG_ECRED: return "credentials";
	case GG_ENET: return "network";
	case GG_EPROTO: return "protocol";
	case GG_ENOTFOUND: return "not-found";
	case GG_EJOB: return "job-failed";
	case GG_EIO: return "io";
	case GG_ENOMEM: return "memory";
	case GG_EINTR: return "interrupted";
	case GG_EHOSTKEY: return "host-key";
	default: return "failure";
	}
}
