/* lib/http/keepd.c: the connection keeper itself (gridgpu/ce.h): a Unix socket
 * in the private directory, a thread per command's connection, a pool of HTTP
 * handles whose kept-alive TLS connections outlive the commands. */
#include "core/par.h"
#include "http/keep.h"
#include "compat/compat.h"
#include "cred/cred.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX 16

struct keeper {
	const struct gg_keep_opts *o;
	const char *ca_dir;
	pthread_mutex_t mu;
	struct gg_http *pool[POOL_MAX];
	unsigned pool_gen[POOL_MAX];
	size_t npool;
	unsigned gen;        /* of the credential: bumped when its file changes */
	struct stat cred_st; /* the file as last read */
	time_t cred_end;     /* its end (the chain's earliest notAfter) */
	int clients;         /* connections open */
	int64_t last_ms;     /* the last request's end (or the start) */
	int over;            /* the credential ended or is unreadable: stop */
	struct stat sock_st; /* our socket: another one there ends us */
};

struct conn {
	struct keeper *k;
	int fd;
};

int gg_keep_path(const char *proxy_path, const char *ca_dir, char **out, struct gg_err *err)
{
	char *dir = NULL, *keep = NULL, *key = NULL, hex[GG_SHA256_HEX];
	int rc = gg_xdg_dir(GG_XDG_RUNTIME, &dir, err);
	if (rc < 0)
		return rc;
	keep = gg_strdup_printf("%s/keep", dir);
	key = gg_strdup_printf("%s\n%s", proxy_path ? proxy_path : "",
			       ca_dir ? ca_dir : gg_http_default_ca_dir());
	free(dir);
	if (!keep || !key)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = gg_dir_private(keep, err);
	if (rc == 0)
		rc = gg_sha256_hex(key, strlen(key), hex, err);
	if (rc == 0 && !(*out = gg_strdup_printf("%s/k-%.16s.sock", keep, hex)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	struct sockaddr_un a;
	if (rc == 0 && strlen(*out) >= sizeof a.sun_path) {
		rc = gg_err_set(err, GG_EUSAGE,
				"'%s' is too long for a socket: set XDG_RUNTIME_DIR to a short "
				"private directory",
				*out);
		free(*out);
		*out = NULL;
	}
	free(keep);
	free(key);
	return rc;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtime == b->st_mtime && a->st_ctime == b->st_ctime;
}

/* The credential's file as it is now: read again when it changed (a new
 * generation: older handles are not used again). Under k->mu. -1: it ended. */
static int cred_check(struct keeper *k)
{
	struct stat st;
	if (k->over || stat(k->o->proxy_path, &st) < 0) {
		k->over = 1;
		return -1;
	}
	if (k->gen == 0 || !same_file(&st, &k->cred_st)) {
		struct gg_cred *c = NULL;
		struct gg_proxy_info pi;
		memset(&pi, 0, sizeof pi);
		if (gg_cred_load_public(k->o->proxy_path, &c, NULL) < 0 ||
		    gg_proxy_info_get(c, 0, &pi, NULL) < 0) {
			gg_cred_free(c);
			k->over = 1;
			return -1;
		}
		k->cred_end = pi.end;
		gg_proxy_info_clear(&pi);
		gg_cred_free(c);
		k->cred_st = st;
		k->gen++;
	}
	if (time(NULL) >= k->cred_end)
		k->over = 1;
	return k->over ? -1 : 0;
}

/* A handle of the credential's present generation: one kept, or a new one. */
static struct gg_http *take(struct keeper *k)
{
	struct gg_http *h = NULL;
	pthread_mutex_lock(&k->mu);
	if (cred_check(k) == 0) {
		while (k->npool && !h) {
			k->npool--;
			if (k->pool_gen[k->npool] == k->gen)
				h = k->pool[k->npool];
			else
				gg_http_free(k->pool[k->npool]);
		}
		if (!h) {
			struct gg_http_opts ho = {.proxy_path = k->o->proxy_path,
						  .ca_dir = k->ca_dir};
			if (gg_http_new(&ho, &h, NULL) < 0)
				h = NULL;
			else
				gg_http_set_tag(h, k->gen);
		}
	}
	pthread_mutex_unlock(&k->mu);
	return h;
}

static void give_back(struct keeper *k, struct gg_http *h)
{
	pthread_mutex_lock(&k->mu);
	if (k->npool < POOL_MAX && gg_http_tag(h) == k->gen && !k->over) {
		k->pool_gen[k->npool] = k->gen;
		k->pool[k->npool++] = h;
		h = NULL;
	}
	k->last_ms = gg_mono_ms();
	pthread_mutex_unlock(&k->mu);
	gg_http_free(h);
}

/* The answer frame of one request sent with h. */
static char *answer(struct gg_http *h, const struct gg_keep_frame *f, size_t *len)
{
	int64_t idem = 0, tmo = 0, ret = 0, dl = 0;
	if (gg_keep_num(f->v[KQ_IDEMPOTENT], &idem) < 0 ||
	    gg_keep_num(f->v[KQ_TIMEOUT], &tmo) < 0 || gg_keep_num(f->v[KQ_RETRIES], &ret) < 0 ||
	    gg_keep_num(f->v[KQ_DEADLINE], &dl) < 0 || !f->v[KQ_METHOD] || !f->v[KQ_URL] ||
	    tmo < 0 || ret < 0 || ret > 10)
		return NULL;
	gg_http_set_limits(h, (long)tmo, (int)ret, dl > 0 ? gg_mono_ms() + dl : 0);
	long c0 = gg_http_connections(h);
	int64_t s0, r0, s1, r1;
	gg_http_bytes(h, &s0, &r0);
	struct gg_http_resp resp = {0};
	struct gg_err err = {0};
	int rc = gg_http_request(h, f->v[KQ_METHOD], f->v[KQ_URL], f->v[KQ_CTYPE],
				 f->len[KQ_BODY] ? f->v[KQ_BODY] : NULL, f->len[KQ_BODY],
				 f->v[KQ_ACCEPT], idem != 0, &resp, &err);
	gg_http_bytes(h, &s1, &r1);
	char num[7][24];
	int64_t nv[7] = {
		rc,      resp.status, resp.length, gg_http_unsent(h), gg_http_connections(h) - c0,
		s1 - s0, r1 - r0};
	for (int i = 0; i < 7; i++)
		snprintf(num[i], sizeof num[i], "%lld", (long long)nv[i]);
	const char *v[KA_N] = {"A",
			       num[0],
			       rc < 0 ? err.msg : NULL,
			       num[1],
			       resp.reason,
			       rc < 0 ? NULL : resp.body,
			       resp.content_type,
			       resp.location,
			       num[2],
			       resp.etag,
			       resp.last_modified,
			       resp.digest,
			       resp.content_range,
			       num[3],
			       num[4],
			       num[5],
			       num[6]};
	size_t l[KA_N];
	for (int i = 0; i < KA_N; i++)
		l[i] = v[i] ? strlen(v[i]) : 0;
	l[KA_BODY] = rc < 0 ? 0 : resp.len;
	char *out = gg_keep_build(KA_N, v, l, len);
	gg_http_resp_clear(&resp);
	return out;
}

/* A command's connection: each request takes a handle from the pool and gives it
 * back before its answer is written, so that the command's next request, or the
 * next command once this one has its answer, finds the kept connection there. */
static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct keeper *k = c->k;
	size_t len;
	char *greet = gg_keep_build(1, (const char *const[]){"K"}, NULL, &len);
	int ok = greet && gg_keep_write(c->fd, greet, len) == 0;
	free(greet);
	while (ok) {
		char *buf = NULL, *out = NULL;
		struct gg_keep_frame f;
		int cancelled = 0;
		if (gg_keep_read(c->fd, 0, NULL, NULL, &cancelled, &buf, &f) < 0 || f.n != KQ_N ||
		    strcmp(f.v[KQ_KIND], "Q") != 0) {
			free(buf);
			break;
		}
		struct gg_http *h = take(k); /* of the credential's present generation */
		out = h ? answer(h, &f, &len)
			: gg_keep_build(1, (const char *const[]){"N"}, NULL, &len);
		if (h)
			give_back(k, h);
		ok = out && gg_keep_write(c->fd, out, len) == 0;
		free(out);
		free(buf);
	}
	close(c->fd);
	pthread_mutex_lock(&k->mu);
	k->clients--;
	k->last_ms = gg_mono_ms();
	pthread_mutex_unlock(&k->mu);
	free(c);
	return NULL;
}

/* The lock that makes one keeper per socket: its descriptor, -1 when another
 * keeper holds it (errno EAGAIN) or it cannot be made. */
static int lock_sock(const char *sock)
{
	char *p = gg_strdup_printf("%s.lock", sock);
	if (!p)
		return -1;
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(p);
	/* flock: of this open file, so that a second keeper in one process is refused too */
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		errno = e == EWOULDBLOCK ? EAGAIN : e;
		return -1;
	}
	if (fd >= 0) { /* its pid, for whoever wants to end it (tests, the user) */
		char pid[24];
		int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
		if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
			return fd; /* the lock is what matters */
	}
	return fd;
}

static int listen_on(struct keeper *k, struct gg_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *sock = k->o->sock;
	if (strlen(sock) >= sizeof a.sun_path)
		return gg_err_set(err, GG_EUSAGE, "'%s' is too long for a socket", sock);
	memcpy(a.sun_path, sock, strlen(sock) + 1);
	int fd = gg_compat_socket(AF_UNIX, SOCK_STREAM, 0, 0);
	if (fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "a socket for '%s'", sock);
	unlink(sock); /* a stale keeper's: we hold the lock */
	mode_t old = umask(077);
	int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (rc < 0 || listen(fd, 64) < 0 || lstat(sock, &k->sock_st) < 0) {
		int e = errno;
		close(fd);
		return gg_err_sys(err, GG_EIO, e, "listening on '%s'", sock);
	}
	return fd;
}

/* Whether to end: idle, the credential ended, or our socket gone or replaced. */
static int should_end(struct keeper *k)
{
	struct stat st;
	int gone = lstat(k->o->sock, &st) < 0 || st.st_ino != k->sock_st.st_ino ||
		   st.st_dev != k->sock_st.st_dev;
	/* a command's connection open: it is waited for (it ends with the command) */
	pthread_mutex_lock(&k->mu);
	int end = k->clients == 0 &&
		  (gone || gg_mono_ms() - k->last_ms >= k->o->idle_ms || cred_check(k) < 0);
	pthread_mutex_unlock(&k->mu);
	return end;
}

/* A connection: its own thread when it is of our user, else closed. */
static void admit(struct keeper *k, int fd)
{
	uid_t uid;
	struct conn *c = NULL;
	pthread_t t;
	pthread_attr_t at;
	if (gg_compat_peer_uid(fd, &uid) < 0 || uid != geteuid() || !(c = malloc(sizeof *c))) {
		close(fd);
		return;
	}
	c->k = k;
	c->fd = fd;
	pthread_mutex_lock(&k->mu);
	k->clients++;
	pthread_mutex_unlock(&k->mu);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, conn_main, c) != 0) {
		close(fd);
		free(c);
		pthread_mutex_lock(&k->mu);
		k->clients--;
		pthread_mutex_unlock(&k->mu);
	}
	pthread_attr_destroy(&at);
}

static void serve_loop(struct keeper *k, int l)
{
	while (!should_end(k)) {
		struct pollfd pf = {.fd = l, .events = POLLIN};
		int64_t left = k->o->idle_ms - (gg_mono_ms() - k->last_ms);
		int wait = left > 1000 || left < 0 ? 1000 : (int)left + 1;
		if (poll(&pf, 1, wait) <= 0)
			continue;
		int fd = accept(l, NULL, NULL);
		if (fd >= 0) {
			int fl = fcntl(fd, F_GETFD);
			if (fl >= 0)
				fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
			admit(k, fd);
		}
	}
}

int gg_keep_serve(const struct gg_keep_opts *o, struct gg_err *err)
{
	if (!o->sock || !o->proxy_path || o->idle_ms <= 0)
		return gg_err_set(err, GG_EUSAGE, "the keeper needs a socket, a proxy and a time");
	struct keeper k = {.o = o, .ca_dir = o->ca_dir ? o->ca_dir : gg_http_default_ca_dir()};
	pthread_mutex_init(&k.mu, NULL);
	k.last_ms = gg_mono_ms();
	int lock = lock_sock(o->sock), rc = 0, l = -1;
	if (lock < 0)
		return errno == EAGAIN ? 1 : gg_err_sys(err, GG_EIO, errno, "'%s.lock'", o->sock);
	if (cred_check(&k) < 0)
		rc = gg_err_set(err, GG_ECRED, "the proxy '%s' is unreadable or has expired",
				o->proxy_path);
	else if ((rc = l = listen_on(&k, err)) >= 0) {
		rc = 0;
		serve_loop(&k, l);
		close(l);
		struct stat st; /* ours still: gone with us */
		if (lstat(o->sock, &st) == 0 && st.st_ino == k.sock_st.st_ino &&
		    st.st_dev == k.sock_st.st_dev)
			unlink(o->sock);
	}
	for (size_t i = 0; i < k.npool; i++) /* no connection left: no thread either */
		gg_http_free(k.pool[i]);
	pthread_mutex_destroy(&k.mu);
	close(lock);
	return rc;
}

/* The child's part of gg_keep_start: only async-signal-safe calls (the caller
 * may have threads running). */
static void keep_exec(const char *exe, char *const argv[], long max)
{
	if (setsid() < 0 || fork() != 0)
		_exit(0);
	int nul = open("/dev/null", O_RDWR);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
		_exit(1);
	for (int fd = 3; fd < max; fd++) /* the store's lock, above all */
		close(fd);
	execv(exe, argv);
	_exit(127);
}

int gg_keep_start(const char *exe, const struct gg_keep_opts *o, struct gg_err *err)
{
	char self[4096], ms[24];
	if (!exe && !(exe = gg_compat_self_exe(self, sizeof self)))
		return gg_err_set(err, GG_EFAIL, "cannot tell this program's path");
	if (!o->sock || !o->proxy_path || o->idle_ms <= 0)
		return gg_err_set(err, GG_EUSAGE, "the keeper needs a socket, a proxy and a time");
	snprintf(ms, sizeof ms, "%lld", (long long)o->idle_ms);
	char *const argv[] = {
		"gridgpu",         "__keep", "--idle", ms, (char *)o->sock, (char *)o->proxy_path,
		(char *)o->ca_dir, NULL};
	long max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 4096)
		max = 4096;
	pid_t pid = fork();
	if (pid == 0)
		keep_exec(exe, argv, max);
	if (pid < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "starting the connection keeper");
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}
