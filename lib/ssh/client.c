/* An SSH client on libssh2 for what the library itself must do over SSH: reach
 * a session's sshd through the site's jump hosts (a direct-tcpip channel on
 * each hop carries the next hop's SSH connection), check every host key (the
 * jump hosts' against their known_hosts, the session's against the key pinned
 * from the CE), and run a command with its output captured or streamed.
 *
 * Each intermediate hop's channel is joined to a socketpair by a pump thread
 * that alone owns that hop's libssh2 session; the next hop's session runs over
 * the other end of the pair as if it were a TCP socket. The last session is
 * used by the caller's thread only. */
#include "core/par.h"
#include "ssh/ssh.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libssh2.h>
#include <openssl/evp.h>

#define PUMP_BUF 32768

struct pump {
	LIBSSH2_SESSION *s; /* the hop's session (non-blocking once pumping) */
	LIBSSH2_CHANNEL *ch;
	int sock;    /* what s runs over */
	int local;   /* our end of the socketpair */
	int stop[2]; /* a byte here ends the pump */
	pthread_t th;
	int running;
	char up[PUMP_BUF]; /* local → channel, not yet written */
	size_t up_len, up_off;
	char down[PUMP_BUF]; /* channel → local, not yet written */
	size_t down_len, down_off;
};

struct gg_ssh_conn {
	size_t n;               /* hops */
	LIBSSH2_SESSION **sess; /* one per hop */
	int *socks;             /* the socket each session runs over */
	struct pump *pumps;     /* n - 1 */
	int timeout_ms;
	pid_t mpid; /* the ssh that carries hop first's connection through a master */
	gg_ssh_cancel_fn cancel;
	void *cancel_ud;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;
static void do_init(void)
{
	init_rc = libssh2_init(0);
}

static const char *hop_label(const struct gg_ssh_hop *h, char *buf, size_t len)
{
	if (h->name)
		snprintf(buf, len, "%s (%s:%d)", h->name, h->host, h->port ? h->port : 22);
	else
		snprintf(buf, len, "%s:%d", h->host, h->port ? h->port : 22);
	return buf;
}

static const char *ssh_msg(LIBSSH2_SESSION *s)
{
	char *m = NULL;
	if (s)
		libssh2_session_last_error(s, &m, NULL, 0);
	return m && m[0] ? m : "unknown error";
}

static long ms_left(const struct timespec *end)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (long)(end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/* TCP connect to host:port within timeout_ms. */
static int tcp_connect(const struct gg_ssh_hop *h, int timeout_ms, int *out, struct gg_err *err)
{
	char label[300], port[16];
	hop_label(h, label, sizeof label);
	snprintf(port, sizeof port, "%d", h->port ? h->port : 22);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
	struct addrinfo *ai = NULL;
	int g = getaddrinfo(h->host, port, &hints, &ai);
	if (g)
		return gg_err_set(err, GG_ENET, "cannot resolve %s: %s", label, gai_strerror(g));
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	int last = ECONNREFUSED, fd = -1;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		fd = gg_compat_socket(a->ai_family, a->ai_socktype, a->ai_protocol, 1);
		if (fd < 0) {
			last = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			struct pollfd p = {fd, POLLOUT, 0};
			int pr;
			while ((pr = poll(&p, 1, (int)ms_left(&end))) < 0 && errno == EINTR)
				;
			int soerr = 0;
			socklen_t sl = sizeof soerr;
			if (pr == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
			    !soerr)
				break;
			last = pr == 0 ? ETIMEDOUT : soerr ? soerr : errno;
		} else {
			last = errno;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		if (last == ETIMEDOUT)
			return gg_err_set(err, GG_ENET, "cannot connect to %s: no answer in %d s",
					  label, timeout_ms / 1000);
		return gg_err_sys(err, GG_ENET, last, "cannot connect to %s", label);
	}
	/* libssh2 wants a blocking socket in blocking mode */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*out = fd;
	return 0;
}

/* ---- host keys -------------------------------------------------------------------------- */

static int kh_type(int hostkey_type)
{
	switch (hostkey_type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
	case LIBSSH2_HOSTKEY_TYPE_DSS: return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
	case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
#endif
	default: return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
	}
}

/* Decode the base64 blob of "TYPE BASE64 [comment]"; malloc'd. */
static unsigned char *pubkey_blob(const char *line, size_t *len)
{
	const char *b = strchr(line, ' ');
	if (!b)
		return NULL;
	b++;
	size_t n = strcspn(b, " \t\r\n");
	if (n == 0 || n % 4)
		return NULL;
	unsigned char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	int d = EVP_DecodeBlock(out, (const unsigned char *)b, (int)n);
	if (d < 0) {
		free(out);
		return NULL;
	}
	size_t l = (size_t)d;
	if (b[n - 1] == '=')
		l--;
	if (n > 1 && b[n - 2] == '=')
		l--;
	*len = l;
	return out;
}

int gg_ssh_key_matches(const char *pinned, const void *blob, size_t len)
{
	size_t plen = 0;
	unsigned char *p = pinned ? pubkey_blob(pinned, &plen) : NULL;
	int same = p && plen == len && memcmp(p, blob, len) == 0;
	free(p);
	return same;
}

/* Does the "@revoked HOSTS TYPE BASE64" line name key? Any host: a revoked
 * key is never accepted. */
static int revoked(const char *line, const void *key, size_t len)
{
	const char *p = line + strlen("@revoked");
	p += strspn(p, " \t");
	p += strcspn(p, " \t"); /* the hosts */
	p += strspn(p, " \t");
	return *p && gg_ssh_key_matches(p, key, len);
}

/* Read a known_hosts file into kh, lines of any length (getline). Lines
 * libssh2 cannot read (a key type it does not know) must not hide the others,
 * as they would with libssh2_knownhost_readfile. 1 when key is @revoked;
 * *ca = 1 when there are @cert-authority lines (which libssh2 cannot use). */
static int read_known_hosts(LIBSSH2_KNOWNHOSTS *kh, FILE *f, const void *key, size_t len, int *ca)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t l;
	int rc = 0;
	while (rc == 0 && (l = getline(&line, &cap, f)) > 0) {
		const char *t = line + strspn(line, " \t");
		if (strncmp(t, "@revoked", 8) == 0 && (t[8] == ' ' || t[8] == '\t'))
			rc = revoked(t, key, len);
		else if (strncmp(t, "@cert-authority", 15) == 0)
			*ca = 1;
		else if (*t != '#' && *t != '@' && *t != '\n' && *t != '\0')
			libssh2_knownhost_readline(kh, t, strlen(t),
						   LIBSSH2_KNOWNHOST_FILE_OPENSSH);
	}
	free(line);
	return rc;
}

/* Check the host key of hop h against its pinned key or its known_hosts. */
static int check_host_key(LIBSSH2_SESSION *s, const struct gg_ssh_hop *h, struct gg_err *err)
{
	char label[300];
	hop_label(h, label, sizeof label);
	size_t len = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(s, &len, &type);
	if (!key)
		return gg_err_set(err, GG_EPROTO, "%s sent no host key", label);
	if (h->pinned_key) {
		if (gg_ssh_key_matches(h->pinned_key, key, len))
			return 0;
		return gg_err_set(err, GG_EHOSTKEY,
				  "%s answered with a host key that is not the one pinned from the "
				  "CE: refusing it (possible man-in-the-middle)",
				  label);
	}
	char *deflt = NULL;
	const char *file = h->known_hosts;
	if (!file) {
		const char *home = getenv("HOME");
		deflt = home ? gg_strdup_printf("%s/.ssh/known_hosts", home) : NULL;
		file = deflt;
	}
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(s);
	FILE *f = file ? fopen(file, "re") : NULL;
	if (!kh || !f) {
		int e = errno;
		if (kh)
			libssh2_knownhost_free(kh);
		int rc =
			gg_err_set(err, GG_ECRED,
				   "cannot check the host key of %s: no known_hosts '%s' (%s); add "
				   "the host's key with 'gridgpu site add --known-hosts FILE'",
				   label, file ? file : "~/.ssh/known_hosts",
				   f ? "out of memory" : strerror(e));
		if (f)
			fclose(f);
		free(deflt);
		return rc;
	}
	int ca = 0, rc = read_known_hosts(kh, f, key, len, &ca);
	fclose(f);
	if (rc == 1) {
		libssh2_knownhost_free(kh);
		rc = gg_err_set(err, GG_EHOSTKEY,
				"the host key of %s is marked @revoked in '%s': refusing it", label,
				file);
		free(deflt);
		return rc;
	}
	struct libssh2_knownhost *found = NULL;
	int r = libssh2_knownhost_checkp(kh, h->host, h->port ? h->port : 22, key, len,
					 LIBSSH2_KNOWNHOST_TYPE_PLAIN |
						 LIBSSH2_KNOWNHOST_KEYENC_RAW | kh_type(type),
					 &found);
	libssh2_knownhost_free(kh);
	if (r == LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
		rc = gg_err_set(err, GG_EHOSTKEY,
				"the host key of %s does not match the one in '%s': refusing it "
				"(possible man-in-the-middle; if the site changed its key, update "
				"that file)",
				label, file);
	else if (r != LIBSSH2_KNOWNHOST_CHECK_MATCH && ca)
		rc = gg_err_set(err, GG_ECRED,
				"the host key of %s is not in '%s', which trusts hosts through "
				"@cert-authority lines: host certificates are not supported by "
				"gridgpu's client; add the host's own key to that file",
				label, file);
	else if (r != LIBSSH2_KNOWNHOST_CHECK_MATCH)
		rc = gg_err_set(err, GG_ECRED,
				"the host key of %s is not in '%s': refusing it (no trust on first "
				"use; add the site's published key to that file)",
				label, file);
	free(deflt);
	return rc;
}

/* ---- authentication --------------------------------------------------------------------- */

static int auth_file(LIBSSH2_SESSION *s, const char *user, const char *path, int explicit,
		     const char *label, struct gg_err *err)
{
	if (access(path, R_OK) < 0) {
		if (!explicit)
			return 1; /* not there: try the next */
		return gg_err_sys(err, GG_ECRED, errno, "the key '%s' for %s", path, label);
	}
	int rc = gg_file_check_private(path, "SSH key", err);
	if (rc < 0)
		return rc;
	if (libssh2_userauth_publickey_fromfile_ex(s, user, (unsigned)strlen(user), NULL, path,
						   NULL) == 0)
		return 0;
	int e = libssh2_session_last_errno(s);
	if (e == LIBSSH2_ERROR_FILE || e == LIBSSH2_ERROR_METHOD_NOT_SUPPORTED)
		return gg_err_set(err, GG_ECRED,
				  "cannot use the key '%s' for %s (%s): a key protected by a "
				  "passphrase must be loaded into ssh-agent",
				  path, label, ssh_msg(s));
	if (e == LIBSSH2_ERROR_TIMEOUT || e == LIBSSH2_ERROR_SOCKET_RECV ||
	    e == LIBSSH2_ERROR_SOCKET_DISCONNECT)
		return gg_err_set(err, GG_ENET, "%s: %s", label, ssh_msg(s));
	return 1; /* refused: the caller says so */
}

static int auth_agent(LIBSSH2_SESSION *s, const char *user)
{
	if (!getenv("SSH_AUTH_SOCK"))
		return 1;
	LIBSSH2_AGENT *a = libssh2_agent_init(s);
	if (!a)
		return 1;
	int rc = 1;
	if (libssh2_agent_connect(a) == 0 && libssh2_agent_list_identities(a) == 0) {
		struct libssh2_agent_publickey *id = NULL, *prev = NULL;
		while (rc && libssh2_agent_get_identity(a, &id, prev) == 0) {
			if (libssh2_agent_userauth(a, user, id) == 0)
				rc = 0;
			prev = id;
		}
		libssh2_agent_disconnect(a);
	}
	libssh2_agent_free(a);
	return rc;
}

static int authenticate(LIBSSH2_SESSION *s, const struct gg_ssh_hop *h, struct gg_err *err)
{
	char label[300];
	hop_label(h, label, sizeof label);
	char pwname[256] = "";
	const char *user = h->user;
	if (!user || !user[0]) {
		struct passwd pw, *res = NULL;
		char buf[4096];
		if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res)
			snprintf(pwname, sizeof pwname, "%s", pw.pw_name);
		user = pwname;
	}
	if (!user[0])
		return gg_err_set(err, GG_EUSAGE, "no user name for %s", label);
	int rc;
	if (h->identity) {
		rc = auth_file(s, user, h->identity, 1, label, err);
	} else {
		rc = auth_agent(s, user);
		const char *home = getenv("HOME");
		const char *names[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
		for (size_t i = 0; rc == 1 && home && i < sizeof names / sizeof *names; i++) {
			char *p = gg_strdup_printf("%s/.ssh/%s", home, names[i]);
			rc = p ? auth_file(s, user, p, 0, label, err) : 1;
			free(p);
		}
	}
	if (rc == 1)
		return gg_err_set(err, GG_ECRED, "%s refused the key%s%s for user '%s'", label,
				  h->identity ? " " : "s of ssh-agent and ~/.ssh",
				  h->identity ? h->identity : "", user);
	return rc;
}

/* ---- the pump: one intermediate hop's channel <-> a socketpair --------------------------- */

static void *pump_run(void *arg)
{
	struct pump *p = arg;
	libssh2_session_set_blocking(p->s, 0);
	int chan_eof = 0, local_eof = 0;
	for (;;) {
		int progress = 0;
		/* channel → local */
		if (p->down_len == 0 && !chan_eof) {
			ssize_t r = libssh2_channel_read(p->ch, p->down, sizeof p->down);
			if (r > 0) {
				p->down_len = (size_t)r;
				p->down_off = 0;
				progress = 1;
			} else if (r == 0 || (r < 0 && r != LIBSSH2_ERROR_EAGAIN)) {
				if (r < 0 || libssh2_channel_eof(p->ch)) {
					chan_eof = 1;
					shutdown(p->local, SHUT_WR);
					progress = 1;
				}
			}
		}
		if (p->down_len) {
			ssize_t w = gg_compat_send(p->local, p->down + p->down_off, p->down_len);
			if (w > 0) {
				p->down_off += (size_t)w;
				p->down_len -= (size_t)w;
				progress = 1;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				break; /* the next hop's side is gone */
			}
		}
		/* local → channel */
		if (p->up_len == 0 && !local_eof) {
			ssize_t r = recv(p->local, p->up, sizeof p->up, 0);
			if (r > 0) {
				p->up_len = (size_t)r;
				p->up_off = 0;
				progress = 1;
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				local_eof = 1;
				libssh2_channel_send_eof(p->ch);
				progress = 1;
			}
		}
		if (p->up_len) {
			ssize_t w = libssh2_channel_write(p->ch, p->up + p->up_off, p->up_len);
			if (w > 0) {
				p->up_off += (size_t)w;
				p->up_len -= (size_t)w;
				progress = 1;
			} else if (w < 0 && w != LIBSSH2_ERROR_EAGAIN) {
				break;
			}
		}
		if (local_eof && chan_eof && !p->down_len)
			break;
		if (progress)
			continue;
		int dir = libssh2_session_block_directions(p->s);
		struct pollfd fds[3] = {
			{p->sock,
			 (short)(POLLIN | (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0)), 0},
			{p->local,
			 (short)((p->up_len || local_eof ? 0 : POLLIN) |
				 (p->down_len ? POLLOUT : 0)),
			 0},
			{p->stop[0], POLLIN, 0},
		};
		/* The timeout only bounds the cost of data libssh2 queued internally
		 * while writing (it shows up on the next read, not on the socket). */
		int pr = poll(fds, 3, 50);
		if (pr < 0 && errno != EINTR)
			break;
		if (fds[2].revents)
			break;
	}
	/* The next hop reads end of file. */
	shutdown(p->local, SHUT_RDWR);
	return NULL;
}

/* ---- connect and close ------------------------------------------------------------------ */

void gg_ssh_disconnect(struct gg_ssh_conn *c)
{
	if (!c)
		return;
	/* Last hop first: each session says goodbye through the hops before it. */
	for (size_t i = c->n; i-- > 0;) {
		if (c->sess && c->sess[i]) {
			if (i + 1 == c->n) {
				libssh2_session_set_timeout(c->sess[i], 2000);
				libssh2_session_disconnect(c->sess[i], "gridgpu done");
			}
		}
		if (i + 1 == c->n || !c->pumps)
			goto free_sess;
		struct pump *p = &c->pumps[i];
		if (p->running) {
			if (write(p->stop[1], "x", 1) < 0) {
				/* the pipe cannot be full: one byte, once */
			}
			pthread_join(p->th, NULL);
			p->running = 0;
		}
		if (p->ch) {
			libssh2_session_set_blocking(p->s, 1);
			libssh2_session_set_timeout(p->s, 2000);
			libssh2_channel_free(p->ch);
		}
		if (p->stop[0] >= 0)
			close(p->stop[0]);
		if (p->stop[1] >= 0)
			close(p->stop[1]);
		if (p->local >= 0)
			close(p->local);
		if (c->sess[i])
			libssh2_session_disconnect(c->sess[i], "gridgpu done");
	free_sess:
		if (c->sess && c->sess[i])
			libssh2_session_free(c->sess[i]);
		if (c->socks && c->socks[i] >= 0)
			close(c->socks[i]);
	}
	gg_ssh_master_stream_end(-1, c->mpid);
	free(c->sess);
	free(c->socks);
	free(c->pumps);
	free(c);
}

void gg_ssh_set_cancel(struct gg_ssh_conn *c, gg_ssh_cancel_fn fn, void *ud)
{
	c->cancel = fn;
	c->cancel_ud = ud;
}

/* Handshake, host key, authentication of hop i over c->socks[i]. */
static int open_session(struct gg_ssh_conn *c, const struct gg_ssh_hop *h, size_t i,
			struct gg_err *err)
{
	char label[300];
	hop_label(h, label, sizeof label);
	LIBSSH2_SESSION *s = libssh2_session_init();
	if (!s)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	c->sess[i] = s;
	libssh2_session_set_blocking(s, 1);
	libssh2_session_set_timeout(s, c->timeout_ms);
	if (libssh2_session_handshake(s, c->socks[i]) != 0) {
		int e = libssh2_session_last_errno(s);
		return gg_err_set(err, e == LIBSSH2_ERROR_TIMEOUT ? GG_ENET : GG_EPROTO,
				  "SSH handshake with %s failed: %s%s", label, ssh_msg(s),
				  e == LIBSSH2_ERROR_TIMEOUT ? " (no answer)" : "");
	}
	int rc = check_host_key(s, h, err);
	if (rc == 0 && !h->no_login)
		rc = authenticate(s, h, err);
	return rc;
}

/* -v: hop i reached (its host key checked, logged in or not), or why not. */
static void log_hop(const struct gg_ssh_hop *hops, size_t i, size_t n, const char *why, double ms)
{
	char label[300];
	hop_label(&hops[i], label, sizeof label);
	if (why)
		gg_logf(hops[0].log, 1, "ssh hop %zu/%zu: %s: %s (%.0f ms)", i + 1, n, label, why,
			ms);
	else
		gg_logf(hops[0].log, 1, "ssh hop %zu/%zu: %s: host key checked, %s (%.0f ms)",
			i + 1, n, label, hops[i].no_login ? "not logged in (a probe)" : "logged in",
			ms);
}

/* A connection of n hops, nothing opened yet. */
static struct gg_ssh_conn *conn_new(size_t n, int timeout_ms)
{
	struct gg_ssh_conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->n = n;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 20000;
	c->sess = calloc(n, sizeof *c->sess);
	c->socks = malloc(n * sizeof *c->socks);
	c->pumps = n > 1 ? calloc(n - 1, sizeof *c->pumps) : NULL;
	if (!c->sess || !c->socks || (n > 1 && !c->pumps)) {
		c->n = 0; /* nothing opened yet: nothing to close */
		gg_ssh_disconnect(c);
		return NULL;
	}
	c->mpid = -1;
	for (size_t i = 0; i < n; i++)
		c->socks[i] = -1;
	for (size_t i = 0; i + 1 < n; i++)
		c->pumps[i].local = c->pumps[i].stop[0] = c->pumps[i].stop[1] = -1;
	return c;
}

/* A channel from hop i to hop i+1, pumped by a thread into a socketpair whose other
 * end is hop i+1's socket. *at: the hop that failed. */
static int open_tunnel(struct gg_ssh_conn *c, const struct gg_ssh_hop *hops, size_t i, size_t *at,
		       double t0, struct gg_err *err)
{
	const struct gg_ssh_hop *next = &hops[i + 1];
	char label[300], nlabel[300];
	hop_label(&hops[i], label, sizeof label);
	hop_label(next, nlabel, sizeof nlabel);
	struct pump *p = &c->pumps[i];
	p->s = c->sess[i];
	p->sock = c->socks[i];
	p->ch = libssh2_channel_direct_tcpip_ex(c->sess[i], next->host,
						next->port ? next->port : 22, "127.0.0.1", 22);
	if (!p->ch) {
		*at = i + 1;
		int rc = gg_err_set(err, GG_ENET, "%s could not open a connection to %s: %s", label,
				    nlabel, ssh_msg(c->sess[i]));
		log_hop(hops, i + 1, c->n, err ? err->msg : "failed", gg_mono_msf() - t0);
		return rc;
	}
	int sv[2];
	if (gg_compat_socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || gg_compat_pipe(p->stop, 1) < 0)
		return gg_err_sys(err, GG_EIO, errno, "socketpair");
	p->local = sv[0];
	c->socks[i + 1] = sv[1];
	fcntl(p->local, F_SETFL, fcntl(p->local, F_GETFL) | O_NONBLOCK);
	/* The pump must not take the caller's signals (SIGINT/SIGTERM handlers belong
	 * to the main thread). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = pthread_create(&p->th, NULL, pump_run, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return gg_err_sys(err, GG_EFAIL, e, "starting a thread");
	p->running = 1;
	return 0;
}

/* The last hop that asks for a second factor is OpenSSH's: its master (opened by
 * gridgpu login) carries the next hop's connection (ssh -W). *first: the first
 * hop libssh2 logs in to (0 when no hop asks for one). No master up: GG_ENET at
 * once, naming the command that opens it. */
static int through_master(struct gg_ssh_conn *c, const struct gg_ssh_hop *hops, size_t *first,
			  size_t *at, struct gg_err *err)
{
	size_t m = c->n;
	for (size_t i = 0; i < c->n; i++)
		if (hops[i].control)
			m = i;
	if (m == c->n)
		return 0;
	char label[300];
	hop_label(&hops[m], label, sizeof label);
	*at = m;
	if (m + 1 == c->n)
		return gg_err_set(err, GG_EUSAGE,
				  "%s asks for a second factor: gridgpu's own client cannot log "
				  "in to it, only through it",
				  label);
	for (size_t i = 0; i <= m; i++)
		if (hops[i].control && !gg_ssh_master_alive(hops[i].control)) {
			hop_label(&hops[i], label, sizeof label);
			*at = i;
			return gg_ssh_master_missing(label, hops[i].login, err);
		}
	const struct gg_ssh_hop *next = &hops[m + 1];
	int rc = gg_ssh_master_stream(hops[m].control, next->host, next->port, &c->socks[m + 1],
				      &c->mpid, err);
	*first = m + 1;
	*at = m + 1;
	return rc;
}

int gg_ssh_connect(const struct gg_ssh_hop *hops, size_t n, int timeout_ms,
		   struct gg_ssh_conn **out, size_t *failed, struct gg_err *err)
{
	*out = NULL;
	size_t at = 0;
	if (failed)
		*failed = 0;
	if (n == 0)
		return gg_err_set(err, GG_EUSAGE, "no host to connect to");
	pthread_once(&init_once, do_init);
	if (init_rc != 0)
		return gg_err_set(err, GG_EFAIL, "libssh2 could not be initialised");
	struct gg_ssh_conn *c = conn_new(n, timeout_ms);
	if (!c)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	double t0 = gg_mono_msf();
	size_t first = 0;
	int rc = through_master(c, hops, &first, &at, err);
	if (rc == 0 && first == 0)
		rc = tcp_connect(&hops[0], c->timeout_ms, &c->socks[0], err);
	if (rc < 0)
		log_hop(hops, at, n, err ? err->msg : "failed", gg_mono_msf() - t0);
	for (size_t i = first; rc == 0 && i < n; i++) {
		at = i;
		rc = open_session(c, &hops[i], i, err);
		log_hop(hops, i, n, rc < 0 ? (err ? err->msg : "failed") : NULL,
			gg_mono_msf() - t0);
		if (rc == 0 && i + 1 < n)
			rc = open_tunnel(c, hops, i, &at, t0, err);
	}
	if (rc < 0) {
		if (failed)
			*failed = at;
		gg_ssh_disconnect(c);
		return rc;
	}
	*out = c;
	if (failed)
		*failed = n;
	return 0;
}

/* ---- exec -------------------------------------------------------------------------------- */

static int signal_number(const char *name)
{
	static const struct {
		const char *n;
		int v;
	} t[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ABRT", SIGABRT},
		 {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE}, {"TERM", SIGTERM}};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		if (strcmp(name, t[i].n) == 0)
			return t[i].v;
	return 127;
}

/* One command's channel while it runs: its output to the sink, the last part
 * of its standard error kept. */
struct exec_run {
	struct gg_ssh_conn *c;
	LIBSSH2_SESSION *s;
	LIBSSH2_CHANNEL *ch;
	gg_ssh_sink_fn sink;
	void *ud;
	char ebuf[4096];
	size_t elen;
	int out_eof, err_eof;
	struct timespec idle_end;
};

static void exec_idle_restart(struct exec_run *x)
{
	clock_gettime(CLOCK_MONOTONIC, &x->idle_end);
	x->idle_end.tv_sec += x->c->timeout_ms / 1000;
}

/* Standard output to the sink: 1 when something came, 0 when nothing, <0. */
static int exec_read_out(struct exec_run *x, struct gg_err *err)
{
	char buf[32768];
	ssize_t r = x->out_eof ? 0 : libssh2_channel_read(x->ch, buf, sizeof buf);
	if (r > 0) {
		if (x->sink && x->sink(x->ud, buf, (size_t)r) != 0)
			return gg_err_set(err, GG_EFAIL, "the command's output was refused");
		return 1;
	}
	if (r == 0 && !x->out_eof && libssh2_channel_eof(x->ch))
		x->out_eof = 1;
	else if (r < 0 && r != LIBSSH2_ERROR_EAGAIN)
		return gg_err_set(err, GG_ENET, "reading over SSH: %s", ssh_msg(x->s));
	return 0;
}

/* Standard error, its last part kept: as exec_read_out. */
static int exec_read_err(struct exec_run *x, struct gg_err *err)
{
	char tmp[1024];
	ssize_t q = x->err_eof ? 0 : libssh2_channel_read_stderr(x->ch, tmp, sizeof tmp);
	if (q > 0) {
		gg_ssh_keep_tail(x->ebuf, sizeof x->ebuf, &x->elen, tmp, (size_t)q);
		return 1;
	}
	if (q == 0 && !x->err_eof && libssh2_channel_eof(x->ch))
		x->err_eof = 1;
	else if (q < 0 && q != LIBSSH2_ERROR_EAGAIN)
		return gg_err_set(err, GG_ENET, "reading over SSH: %s", ssh_msg(x->s));
	return 0;
}

/* Read until both streams end, the command stays silent too long or a cancel. */
static int exec_pump(struct exec_run *x, struct gg_err *err)
{
	struct gg_ssh_conn *c = x->c;
	exec_idle_restart(x);
	while (!(x->out_eof && x->err_eof)) {
		if (c->cancel && c->cancel(c->cancel_ud))
			return gg_err_set(err, GG_EINTR, "interrupted");
		int o = exec_read_out(x, err), e = o < 0 ? 0 : exec_read_err(x, err);
		if (o < 0 || e < 0)
			return err->code;
		if (o || e) {
			exec_idle_restart(x);
			continue;
		}
		if (x->out_eof && x->err_eof)
			break;
		long left = ms_left(&x->idle_end);
		if (left == 0)
			return gg_err_set(err, GG_ENET,
					  "the command sent nothing for %d s over SSH",
					  c->timeout_ms / 1000);
		int dir = libssh2_session_block_directions(x->s);
		struct pollfd p = {
			c->socks[c->n - 1],
			(short)(POLLIN | (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0)), 0};
		poll(&p, 1, left < 200 ? (int)left : 200);
	}
	return 0;
}

/* The command's exit status (128 + N for a signal). */
static int exec_status(struct exec_run *x)
{
	libssh2_channel_close(x->ch);
	libssh2_channel_wait_closed(x->ch);
	char *sig = NULL;
	libssh2_channel_get_exit_signal(x->ch, &sig, NULL, NULL, NULL, NULL, NULL);
	int st = libssh2_channel_get_exit_status(x->ch);
	if (sig)
		st = 128 + signal_number(sig);
	libssh2_free(x->s, sig);
	return st;
}

/* All of in_fd into the channel (blocking, so bounded by the session's timeout),
 * the cancel polled between chunks; fed is told each chunk's size. */
static int exec_feed(struct exec_run *x, const struct gg_ssh_input *in, struct gg_err *err)
{
	char buf[1 << 15];
	for (;;) {
		if (x->c->cancel && x->c->cancel(x->c->cancel_ud))
			return gg_err_set(err, GG_EINTR, "interrupted");
		ssize_t r = read(in->fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gg_err_sys(err, GG_EIO, errno, "reading what is sent over SSH");
		if (r == 0)
			return 0;
		for (ssize_t off = 0; off < r;) {
			ssize_t w = libssh2_channel_write(x->ch, buf + off, (size_t)(r - off));
			if (w < 0)
				return gg_err_set(err, GG_ENET, "writing over SSH: %s",
						  ssh_msg(x->s));
			off += w;
		}
		if (in->fed)
			in->fed(in->ud, (uint64_t)r);
	}
}

static int exec_with(struct gg_ssh_conn *c, const char *command, const struct gg_ssh_input *in,
		     gg_ssh_sink_fn sink, void *ud, int *status, char **errtext, struct gg_err *err)
{
	if (status)
		*status = -1;
	if (errtext)
		*errtext = NULL;
	struct exec_run x = {.c = c, .s = c->sess[c->n - 1], .sink = sink, .ud = ud};
	if (!libssh2_userauth_authenticated(x.s))
		return gg_err_set(err, GG_EUSAGE, "not logged in: nothing can be run");
	libssh2_session_set_blocking(x.s, 1);
	if (!(x.ch = libssh2_channel_open_session(x.s)))
		return gg_err_set(err, GG_ENET, "opening an SSH channel: %s", ssh_msg(x.s));
	if (libssh2_channel_exec(x.ch, command) != 0) {
		int rc = gg_err_set(err, GG_ENET, "running a command over SSH: %s", ssh_msg(x.s));
		libssh2_channel_free(x.ch);
		return rc;
	}
	int rc = in ? exec_feed(&x, in, err) : 0;
	libssh2_channel_send_eof(x.ch); /* the end of the input, or no input */
	libssh2_session_set_blocking(x.s, 0);
	if (rc == 0)
		rc = exec_pump(&x, err);
	libssh2_session_set_blocking(x.s, 1);
	if (rc == 0) {
		int st = exec_status(&x);
		if (status)
			*status = st;
	}
	libssh2_channel_free(x.ch);
	if (rc == 0 && errtext && x.elen) {
		x.ebuf[x.elen] = '\0';
		*errtext = strdup(x.ebuf);
	}
	return rc;
}

int gg_ssh_exec(struct gg_ssh_conn *c, const char *command, gg_ssh_sink_fn sink, void *ud,
		int *status, char **errtext, struct gg_err *err)
{
	return exec_with(c, command, NULL, sink, ud, status, errtext, err);
}

int gg_ssh_exec_input(struct gg_ssh_conn *c, const char *command, const struct gg_ssh_input *in,
		      int *status, char **errtext, struct gg_err *err)
{
	return exec_with(c, command, in, NULL, NULL, status, errtext, err);
}

void gg_ssh_set_timeout(struct gg_ssh_conn *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
	libssh2_session_set_timeout(c->sess[c->n - 1], timeout_ms);
}

struct capture {
	char *buf;
	size_t len, cap, max;
	int over;
};

static int capture_sink(void *ud, const void *data, size_t len)
{
	struct capture *c = ud;
	if (c->len + len > c->max) {
		c->over = 1;
		return -1;
	}
	if (c->len + len + 1 > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 4096;
		while (ncap < c->len + len + 1)
			ncap *= 2;
		char *n = realloc(c->buf, ncap);
		if (!n)
			return -1;
		c->buf = n;
		c->cap = ncap;
	}
	memcpy(c->buf + c->len, data, len);
	c->len += len;
	c->buf[c->len] = '\0';
	return 0;
}

int gg_ssh_exec_capture(struct gg_ssh_conn *c, const char *command, size_t max, char **out,
			size_t *len, int *status, char **errtext, struct gg_err *err)
{
	struct capture cap = {.max = max};
	*out = NULL;
	*len = 0;
	int rc = gg_ssh_exec(c, command, capture_sink, &cap, status, errtext, err);
	if (rc < 0 && cap.over)
		rc = gg_err_set(err, GG_EPROTO, "the command's output is larger than %zu bytes",
				max);
	if (rc < 0) {
		free(cap.buf);
		return rc;
	}
	*out = cap.buf ? cap.buf : strdup("");
	*len = cap.len;
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* ---- a command's output as a file descriptor --------------------------------------------- */

struct gg_ssh_stream {
	struct gg_ssh_conn *c;
	char *command;
	int wfd;
	pthread_t th;
	atomic_int stop;
	atomic_ullong bytes;
	int rc, status;
	char *errtext;
	struct gg_err err;
};

uint64_t gg_ssh_stream_bytes(struct gg_ssh_stream *x)
{
	return x ? (uint64_t)atomic_load(&x->bytes) : 0;
}

static int stream_sink(void *ud, const void *buf, size_t len)
{
	struct gg_ssh_stream *x = ud;
	const char *p = buf;
	atomic_fetch_add(&x->bytes, (unsigned long long)len);
	while (len) {
		ssize_t w = write(x->wfd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1; /* the reader is gone */
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int stream_cancel(void *ud)
{
	struct gg_ssh_stream *x = ud;
	return atomic_load(&x->stop);
}

static void *stream_run(void *arg)
{
	struct gg_ssh_stream *x = arg;
	gg_ssh_set_cancel(x->c, stream_cancel, x);
	x->rc = gg_ssh_exec(x->c, x->command, stream_sink, x, &x->status, &x->errtext, &x->err);
	close(x->wfd); /* end of file for the reader */
	x->wfd = -1;
	return NULL;
}

int gg_ssh_stream_start(struct gg_ssh_conn *c, const char *command, int *fd,
			struct gg_ssh_stream **out, struct gg_err *err)
{
	*out = NULL;
	*fd = -1;
	struct gg_ssh_stream *x = calloc(1, sizeof *x);
	int p[2];
	if (!x || !(x->command = strdup(command))) {
		free(x);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (gg_compat_pipe(p, 0) < 0) {
		int rc = gg_err_sys(err, GG_EIO, errno, "pipe");
		free(x->command);
		free(x);
		return rc;
	}
	x->c = c;
	x->wfd = p[1];
	x->status = -1;
	/* The thread takes no signal: SIGPIPE becomes EPIPE when the reader
	 * closes its end, and the caller's handlers stay the caller's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = pthread_create(&x->th, NULL, stream_run, x);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		close(p[0]);
		close(p[1]);
		free(x->command);
		free(x);
		return gg_err_sys(err, GG_EFAIL, e, "starting a thread");
	}
	*fd = p[0];
	*out = x;
	return 0;
}

int gg_ssh_stream_finish(struct gg_ssh_stream *x, int abort, int *status, char **errtext,
			 struct gg_err *err)
{
	if (abort)
		atomic_store(&x->stop, 1);
	pthread_join(x->th, NULL);
	int rc = x->rc;
	if (rc < 0 && err)
		*err = x->err;
	if (status)
		*status = x->status;
	if (errtext)
		*errtext = x->errtext;
	else
		free(x->errtext);
	free(x->command);
	free(x);
	return rc;
}

/* ---- a session's route ------------------------------------------------------------------ */

void gg_ssh_route_clear(struct gg_ssh_route *rt)
{
	for (size_t i = 0; i < rt->n; i++) {
		free(rt->bufs[i].control);
		free(rt->bufs[i].login);
		free(rt->bufs[i].user);
		free(rt->bufs[i].host);
		free(rt->bufs[i].name);
	}
	memset(rt, 0, sizeof *rt);
}

static int add_hop(struct gg_ssh_route *rt, const char *user, const char *host, int port,
		   const char *name, const char *identity, const char *known_hosts,
		   const char *pinned, struct gg_err *err)
{
	size_t i = rt->n;
	rt->bufs[i].user = user && user[0] ? strdup(user) : NULL;
	rt->bufs[i].host = strdup(host);
	rt->bufs[i].name = name ? strdup(name) : NULL;
	rt->n++;
	if (!rt->bufs[i].host || (name && !rt->bufs[i].name) ||
	    (user && user[0] && !rt->bufs[i].user))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	rt->hops[i] = (struct gg_ssh_hop){
		.host = rt->bufs[i].host,
		.port = port,
		.user = rt->bufs[i].user,
		.name = rt->bufs[i].name,
		.identity = identity,
		.known_hosts = known_hosts,
		.pinned_key = pinned,
	};
	return 0;
}

/* Hop k of the route asks for a second factor: its master's socket. */
static int master_hop(struct gg_ssh_route *rt, const struct gg_site *site, int k,
		      struct gg_err *err)
{
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	if (rc < 0)
		return rc;
	size_t i = rt->n - 1;
	rt->bufs[i].control = gg_ssh_master_path(p.control, site, k, err);
	gg_ssh_paths_clear(&p);
	if (!rt->bufs[i].control)
		return err->code;
	if (!(rt->bufs[i].login = gg_strdup_printf("gridgpu login %s", site->name)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	rt->hops[i].control = rt->bufs[i].control;
	rt->hops[i].login = rt->bufs[i].login;
	return 0;
}

int gg_ssh_session_route(const struct gg_site *site, const struct gg_ssh_target *t,
			 struct gg_ssh_route *rt, struct gg_err *err)
{
	memset(rt, 0, sizeof *rt);
	if (!t->node || t->port <= 0 || !t->host_key)
		return gg_err_set(err, GG_EUSAGE, "session %s has not published its sshd yet",
				  t->name);
	int rc = 0;
	for (int k = 0; site && rc == 0 && k < site->njumps; k++) {
		struct gg_ssh_jump jp;
		char name[64];
		snprintf(name, sizeof name, "jump host %d", k + 1);
		if ((rc = gg_ssh_jump_parse(site->jumps[k], &jp, err)) < 0) {
			gg_err_prefix(err, "%s of site %s", name, site->name);
			break;
		}
		rc = add_hop(rt, jp.user, jp.host, jp.port, name, site->identity, site->known_hosts,
			     NULL, err);
		if (rc == 0 && gg_site_second_factor(site, k))
			rc = master_hop(rt, site, k, err);
	}
	if (rc == 0) {
		char name[128];
		snprintf(name, sizeof name, "the sshd of session %s", t->name);
		rc = add_hop(rt, t->user, t->node, t->port, name, t->key, NULL, t->host_key, err);
	}
	if (rc < 0)
		gg_ssh_route_clear(rt);
	return rc;
}

int gg_ssh_probe(const struct gg_site *site, const struct gg_ssh_target *t, int timeout_ms,
		 const struct gg_log *log, int *at_session, struct gg_err *err)
{
	size_t failed = 0;
	struct gg_ssh_route rt;
	int rc = gg_ssh_session_route(site, t, &rt, err);
	if (rc < 0)
		return rc;
	struct gg_ssh_conn *c = NULL;
	rt.hops[rt.n - 1].no_login = 1;
	rt.hops[0].log = log;
	rc = gg_ssh_connect(rt.hops, rt.n, timeout_ms, &c, &failed, err);
	if (at_session)
		*at_session = rc < 0 && failed + 1 == rt.n;
	gg_ssh_disconnect(c);
	gg_ssh_route_clear(&rt);
	return rc;
}

/* ---- the last hop's session (sftp.c) ------------------------------------------------------ */

void *gg_ssh_conn_session(struct gg_ssh_conn *c, int *timeout_ms, gg_ssh_cancel_fn *cancel,
			  void **cancel_ud)
{
	*timeout_ms = c->timeout_ms;
	*cancel = c->cancel;
	*cancel_ud = c->cancel_ud;
	return c->sess[c->n - 1];
}
