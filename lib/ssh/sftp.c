/* sftp on the last hop of a connection (libssh2's sftp subsystem, blocking,
 * with the connection's timeout and cancel hook): whole files put from a
 * descriptor and read into a sink, directories made; one session for a call,
 * or one kept for several. No shell sees the path. */
#include <errno.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ssh/ssh.h"

struct gg_ssh_sftp {
	LIBSSH2_SESSION *s;
	LIBSSH2_SFTP *sftp;
	gg_ssh_cancel_fn cancel;
	void *cancel_ud;
};

static int sftp_open(struct gg_ssh_conn *c, struct gg_ssh_sftp *x, struct gg_err *err)
{
	int timeout_ms;
	memset(x, 0, sizeof *x);
	x->s = gg_ssh_conn_session(c, &timeout_ms, &x->cancel, &x->cancel_ud);
	libssh2_session_set_blocking(x->s, 1);
	libssh2_session_set_timeout(x->s, timeout_ms);
	x->sftp = libssh2_sftp_init(x->s);
	if (!x->sftp)
		return gg_err_set(err, GG_ENET,
				  "starting sftp failed (%d): the host may have no "
				  "sftp subsystem",
				  libssh2_session_last_errno(x->s));
	return 0;
}

static void sftp_close(struct gg_ssh_sftp *x)
{
	if (x->sftp)
		libssh2_sftp_shutdown(x->sftp);
}

static int cancelled(const struct gg_ssh_sftp *x, struct gg_err *err)
{
	if (x->cancel && x->cancel(x->cancel_ud))
		return gg_err_set(err, GG_EINTR, "interrupted");
	return 0;
}

/* An sftp failure: the server's status where it gave one. */
static int sftp_failed(struct gg_ssh_sftp *x, const char *what, struct gg_err *err)
{
	int e = libssh2_session_last_errno(x->s);
	if (e == LIBSSH2_ERROR_SFTP_PROTOCOL) {
		unsigned long st = libssh2_sftp_last_error(x->sftp);
		if (st == LIBSSH2_FX_NO_SUCH_FILE || st == LIBSSH2_FX_NO_SUCH_PATH)
			return gg_err_set(err, GG_ENOTFOUND, "%s: no such file", what);
		return gg_err_set(err, GG_EIO, "%s: sftp status %lu", what, st);
	}
	return gg_err_set(err, e == LIBSSH2_ERROR_TIMEOUT ? GG_ENET : GG_EPROTO,
			  "%s: sftp failed (%d)%s", what, e,
			  e == LIBSSH2_ERROR_TIMEOUT ? ", no answer" : "");
}

/* Chunks of a MiB: libssh2 keeps the packets of one write in flight
 * together, so a chunk costs about one round trip through the hops. */
#define SFTP_CHUNK (1 << 20)

static int put_all(struct gg_ssh_sftp *x, LIBSSH2_SFTP_HANDLE *h, int fd,
		   void (*fed)(void *ud, uint64_t bytes), void *ud, char *buf, struct gg_err *err)
{
	for (;;) {
		ssize_t r = read(fd, buf, SFTP_CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gg_err_sys(err, GG_EIO, errno, "reading the file to send");
		if (r == 0)
			return 0;
		if (cancelled(x, err) < 0)
			return err->code;
		for (ssize_t off = 0; off < r;) {
			ssize_t w = libssh2_sftp_write(h, buf + off, (size_t)(r - off));
			if (w < 0)
				return sftp_failed(x, "writing", err);
			off += w;
		}
		if (fed)
			fed(ud, (uint64_t)r);
	}
}

int gg_ssh_sftp_put_on(struct gg_ssh_sftp *x, int fd, const char *path,
		       void (*fed)(void *ud, uint64_t bytes), void *ud, struct gg_err *err)
{
	int rc = 0;
	LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(
		x->sftp, path, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC,
		LIBSSH2_SFTP_S_IRUSR | LIBSSH2_SFTP_S_IWUSR);
	if (!h)
		return sftp_failed(x, "creating the file", err);
	char *buf = malloc(SFTP_CHUNK);
	if (!buf)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = put_all(x, h, fd, fed, ud, buf, err);
	free(buf);
	if (libssh2_sftp_close(h) < 0 && rc == 0)
		rc = sftp_failed(x, "closing the file", err);
	return rc;
}

int gg_ssh_sftp_get_on(struct gg_ssh_sftp *x, const char *path, uint64_t max, gg_ssh_sink_fn sink,
		       void *ud, struct gg_err *err)
{
	uint64_t total = 0;
	int rc = 0;
	LIBSSH2_SFTP_HANDLE *h = NULL;
	char *buf = malloc(SFTP_CHUNK);
	if (!buf)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !(h = libssh2_sftp_open(x->sftp, path, LIBSSH2_FXF_READ, 0)))
		rc = sftp_failed(x, "opening the file", err);
	while (rc == 0) {
		ssize_t r = libssh2_sftp_read(h, buf, SFTP_CHUNK);
		if (r < 0) {
			rc = sftp_failed(x, "reading", err);
			break;
		}
		if (r == 0)
			break;
		total += (uint64_t)r;
		if (max && total > max)
			rc = gg_err_set(err, GG_EPROTO, "the file is larger than %llu bytes",
					(unsigned long long)max);
		else if (sink(ud, buf, (size_t)r) != 0)
			rc = gg_err_set(err, GG_EIO, "keeping what was read failed");
		else
			rc = cancelled(x, err);
	}
	if (h)
		libssh2_sftp_close(h);
	free(buf);
	return rc;
}

int gg_ssh_sftp_mkdir(struct gg_ssh_sftp *x, const char *path, struct gg_err *err)
{
	if (libssh2_sftp_mkdir(x->sftp, path, LIBSSH2_SFTP_S_IRWXU) < 0)
		return sftp_failed(x, "making the directory", err);
	return 0;
}

int gg_ssh_sftp_start(struct gg_ssh_conn *c, struct gg_ssh_sftp **out, struct gg_err *err)
{
	struct gg_ssh_sftp *x = malloc(sizeof *x);
	*out = NULL;
	if (!x)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = sftp_open(c, x, err);
	if (rc < 0) {
		free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void gg_ssh_sftp_end(struct gg_ssh_sftp *x)
{
	if (!x)
		return;
	sftp_close(x);
	free(x);
}

int gg_ssh_sftp_put(struct gg_ssh_conn *c, int fd, const char *path,
		    void (*fed)(void *ud, uint64_t bytes), void *ud, struct gg_err *err)
{
	struct gg_ssh_sftp *x = NULL;
	int rc = gg_ssh_sftp_start(c, &x, err);
	if (rc == 0)
		rc = gg_ssh_sftp_put_on(x, fd, path, fed, ud, err);
	gg_ssh_sftp_end(x);
	return rc;
}

int gg_ssh_sftp_get(struct gg_ssh_conn *c, const char *path, uint64_t max, gg_ssh_sink_fn sink,
		    void *ud, struct gg_err *err)
{
	struct gg_ssh_sftp *x = NULL;
	int rc = gg_ssh_sftp_start(c, &x, err);
	if (rc == 0)
		rc = gg_ssh_sftp_get_on(x, path, max, sink, ud, err);
	gg_ssh_sftp_end(x);
	return rc;
}
