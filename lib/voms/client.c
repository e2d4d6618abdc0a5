/* Asking a VOMS server for an attribute certificate: TLS (libcurl, connect
 * only) with the user's certificate, the server's certificate checked against
 * the CA directory and the VO's .lsc file before anything is sent, then the
 * REST request (GET /generate-ac) and, when the server does not speak REST, the
 * legacy XML request on a new connection, as voms-proxy-init does. */
#include "voms/voms.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#define ANSWER_MAX (64 * 1024)

struct conn {
	CURL *curl;
	const struct gg_cred *user;
	X509 *peer; /* the server's certificate, once connected */
	long timeout_ms;
	struct timespec deadline;
};

static CURLcode on_ssl_ctx(CURL *c, void *sslctx, void *arg)
{
	(void)c;
	const struct gg_cred *u = arg;
	SSL_CTX *ctx = sslctx;
	if (SSL_CTX_use_certificate(ctx, gg_cred_cert(u)) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, gg_cred_key(u)) != 1)
		return CURLE_SSL_CERTPROBLEM;
	STACK_OF(X509) *chain = gg_cred_chain(u);
	for (int i = 0; i < sk_X509_num(chain); i++)
		if (SSL_CTX_add1_chain_cert(ctx, sk_X509_value(chain, i)) != 1)
			return CURLE_SSL_CERTPROBLEM;
	return CURLE_OK;
}

static long ms_left(const struct conn *k)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (k->deadline.tv_sec - now.tv_sec) * 1000 +
	       (k->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

/* The server's "a: b" as a one-line reason. */
static int curl_fail(struct gg_err *err, CURLcode cc, const char *eb,
		     const struct gg_voms_server *s)
{
	int code = cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CERTPROBLEM ||
				   cc == CURLE_SSL_CACERT_BADFILE
			   ? GG_ECRED
			   : GG_ENET;
	return gg_err_set(err, code, "VOMS server %s:%d: %s", s->host, s->port,
			  *eb ? eb : curl_easy_strerror(cc));
}

/* Connect and authenticate; the server's certificate is k->peer. */
static int conn_open(struct conn *k, const struct gg_voms_server *s, const char *ca_dir,
		     struct gg_err *err)
{
	char url[512], eb[CURL_ERROR_SIZE] = "";
	snprintf(url, sizeof url, "https://%s:%d/", s->host, s->port);
	if (!(k->curl = curl_easy_init()))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	CURL *c = k->curl;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, eb);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c, CURLOPT_CAINFO, NULL);
	curl_easy_setopt(c, CURLOPT_CAPATH, ca_dir);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, k->timeout_ms);
	curl_easy_setopt(c, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
	curl_easy_setopt(c, CURLOPT_SSL_CTX_DATA, (void *)k->user);
	curl_easy_setopt(c, CURLOPT_CERTINFO, 1L);
	CURLcode cc = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	if (cc != CURLE_OK)
		return curl_fail(err, cc, eb, s);
	/* the server's certificate as libcurl saw it in the handshake (the SSL
	 * pointer is not available for a connect-only handle) */
	struct curl_certinfo *ci = NULL;
	if (curl_easy_getinfo(c, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci && ci->num_of_certs > 0)
		for (struct curl_slist *l = ci->certinfo[0]; l && !k->peer; l = l->next)
			if (strncmp(l->data, "Cert:", 5) == 0) {
				BIO *b = BIO_new_mem_buf(l->data + 5, -1);
				k->peer = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
				BIO_free(b);
			}
	if (!k->peer)
		return gg_err_set(err, GG_ECRED, "VOMS server %s:%d: no certificate seen", s->host,
				  s->port);
	return 0;
}

static void conn_close(struct conn *k)
{
	curl_easy_cleanup(k->curl);
	X509_free(k->peer);
	k->curl = NULL;
	k->peer = NULL;
}

static int wait_sock(struct conn *k, int out)
{
	curl_socket_t fd;
	if (curl_easy_getinfo(k->curl, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK ||
	    fd == CURL_SOCKET_BAD)
		return -1;
	long left = ms_left(k);
	if (left <= 0)
		return -1;
	struct pollfd p = {fd, out ? POLLOUT : POLLIN, 0};
	return poll(&p, 1, (int)left) > 0 ? 0 : -1;
}

/* Send req, read the answer until the server closes (at most ANSWER_MAX). */
static int exchange(struct conn *k, const struct gg_voms_server *s, const char *req, char **ans,
		    size_t *len, struct gg_err *err)
{
	size_t off = 0, n = strlen(req), got = 0;
	while (off < n) {
		CURLcode cc = curl_easy_send(k->curl, req + off, n - off, &got);
		if (cc == CURLE_AGAIN && wait_sock(k, 1) == 0)
			continue;
		if (cc != CURLE_OK)
			return gg_err_set(err, GG_ENET, "VOMS server %s:%d: sending: %s", s->host,
					  s->port, curl_easy_strerror(cc));
		off += got;
	}
	char *buf = malloc(ANSWER_MAX + 1);
	if (!buf)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	off = 0;
	for (;;) {
		CURLcode cc = curl_easy_recv(k->curl, buf + off, ANSWER_MAX - off, &got);
		if (cc == CURLE_AGAIN && wait_sock(k, 0) == 0)
			continue;
		if (cc == CURLE_AGAIN) {
			free(buf);
			return gg_err_set(err, GG_ENET, "VOMS server %s:%d: no answer in time",
					  s->host, s->port);
		}
		if (cc != CURLE_OK || got == 0)
			break; /* closed (an unclean TLS close too: the answer decides) */
		if ((off += got) == ANSWER_MAX) {
			free(buf);
			return gg_err_set(err, GG_EPROTO, "VOMS server %s:%d: answer too large",
					  s->host, s->port);
		}
	}
	buf[off] = '\0';
	*ans = buf;
	*len = off;
	return 0;
}

/* The server's certificate is the one vomses names, and the VO's .lsc agrees:
 * vomsdir/<the VO's name>/<host>.lsc (the name, not the vomses alias). */
static int check_lsc(X509 *peer, const struct gg_voms_server *s, const char *voms_dir,
		     struct gg_err *err)
{
	const char *vo = s->vo;
	if (gg_voms_vo_check(vo, err) < 0)
		return gg_err_prefix(err, "vomses entry '%s' for %s", s->alias, s->host);
	char *subj = gg_cred_name_str(X509_get_subject_name(peer));
	char *iss = gg_cred_name_str(X509_get_issuer_name(peer));
	char *path = gg_strdup_printf("%s/%s/%s.lsc", voms_dir, vo, s->host);
	int rc = 0;
	FILE *f = path ? fopen(path, "r") : NULL;
	char l1[1024] = "", l2[1024] = "";
	if (!subj || !iss || !path) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	} else if (!f) {
		rc = gg_err_sys(err, GG_ECRED, errno, "no trust for VOMS server %s of VO %s: '%s'",
				s->host, vo, path);
	} else if (!fgets(l1, sizeof l1, f) || !fgets(l2, sizeof l2, f)) {
		rc = gg_err_set(err, GG_ECRED, "'%s': expected the server's DN and its CA's DN",
				path);
	} else {
		l1[strcspn(l1, "\r\n")] = l2[strcspn(l2, "\r\n")] = '\0';
		if (strcmp(l1, subj) != 0 || strcmp(l2, iss) != 0)
			rc = gg_err_set(err, GG_ECRED,
					"VOMS server %s:%d is '%s' (CA '%s'), not what '%s' names",
					s->host, s->port, subj, iss, path);
		else if (strcmp(s->dn, subj) != 0)
			rc = gg_err_set(err, GG_ECRED,
					"VOMS server %s:%d is '%s', not '%s' as vomses says",
					s->host, s->port, subj, s->dn);
	}
	if (f)
		fclose(f);
	free(subj);
	free(iss);
	free(path);
	return rc;
}

/* "fqans=/vo/g,/vo/Role=r&lifetime=N[&order=...]" for REST; the legacy XML. */
static char *rest_request(const struct gg_voms_request *r, const struct gg_voms_server *s)
{
	char q[2048] = "";
	size_t o = 0;
	for (size_t i = 0; i < r->n_fqans && o < sizeof q; i++)
		o += (size_t)snprintf(q + o, sizeof q - o, "%s%s", i ? "," : "", r->fqans[i]);
	if (o >= sizeof q)
		return NULL;
	return gg_strdup_printf(
		"GET /generate-ac?%s%s&lifetime=%lld%s%s HTTP/1.1\r\nHost: %s:%d\r\n"
		"Accept: */*\r\nUser-Agent: gridgpu/" GG_VERSION "\r\nConnection: close\r\n\r\n",
		o ? "fqans=" : "", q, (long long)r->lifetime, r->order ? "&order=" : "",
		r->order ? r->order : "", s->host, s->port);
}

static char *legacy_request(const struct gg_voms_request *r, const struct gg_voms_server *s)
{
	char cmd[2048] = "";
	size_t o = 0;
	for (size_t i = 0; i < r->n_fqans && o < sizeof cmd; i++) {
		char *c = gg_voms_fqan_command(s->vo, r->fqans[i]);
		if (!c)
			return NULL;
		o += (size_t)snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? "," : "", c);
		free(c);
	}
	if (o == 0)
		snprintf(cmd, sizeof cmd, "G/%s", s->vo);
	else if (o >= sizeof cmd)
		return NULL;
	return gg_strdup_printf("<?xml version=\"1.0\" encoding = \"US-ASCII\"?><voms>"
				"<command>%s</command>%s%s%s<targets></targets><lifetime>%lld"
				"</lifetime><base64>1</base64><version>4</version></voms>",
				cmd, r->order ? "<order>" : "", r->order ? r->order : "",
				r->order ? "</order>" : "", (long long)r->lifetime);
}

/* The body of an HTTP answer: NULL when it is not HTTP (a server that does not
 * speak REST closes at once or answers otherwise). */
static const char *http_body(const char *ans, size_t len, int *status)
{
	if (len < 12 || strncmp(ans, "HTTP/1.", 7) != 0)
		return NULL;
	*status = atoi(ans + 9);
	const char *b = strstr(ans, "\r\n\r\n");
	if (!b)
		return NULL;
	/* a chunked body is not what a VOMS server sends: refuse it */
	const char *te = strstr(ans, "\r\nTransfer-Encoding:");
	if (te && te < b)
		return NULL;
	return b + 4;
}

/* The FQANs are of the server's VO (vomses' VO name: --voms may name the alias). */
static int check_fqans(const struct gg_voms_request *r, const struct gg_voms_server *s,
		       struct gg_err *err)
{
	for (size_t i = 0; i < r->n_fqans; i++) {
		int rc = gg_voms_fqan_check(s->vo, r->fqans[i], err);
		if (rc < 0)
			return strcmp(s->alias, s->vo) == 0
				       ? rc
				       : gg_err_prefix(err, "vomses alias %s", s->alias);
	}
	return 0;
}

/* One protocol with one server: 0 and what the server sent in *ans. */
static int ask(struct conn *k, const struct gg_voms_server *s, const struct gg_voms_request *r,
	       const char *ca_dir, const char *voms_dir, int rest, char **ans, size_t *len,
	       struct gg_err *err)
{
	int rc = check_fqans(r, s, err);
	if (rc < 0)
		return rc;
	char *req = rest ? rest_request(r, s) : legacy_request(r, s);
	if (!req)
		return gg_err_set(err, GG_EUSAGE, "VO %s: the FQANs make too long a request",
				  s->vo);
	rc = conn_open(k, s, ca_dir, err);
	if (rc == 0)
		rc = check_lsc(k->peer, s, voms_dir, err);
	if (rc == 0)
		rc = exchange(k, s, req, ans, len, err);
	free(req);
	return rc;
}

/* When the AC came, the time it says: the AC ends more than GG_AC_SKEW before
 * now + lifetime (what was asked): the server shortened it. */
static void note(struct gg_voms_got *got, const char *who, const struct gg_ac *info, time_t now,
		 int64_t lifetime)
{
	snprintf(got->who, sizeof got->who, "%s", who);
	snprintf(got->vo, sizeof got->vo, "%s", info->vo);
	got->not_before = info->not_before;
	got->not_after = info->not_after;
	got->shortened =
		lifetime > 0 && (int64_t)info->not_after + GG_AC_SKEW < (int64_t)now + lifetime;
}

/* The AC's validity against now: "not valid yet" (the server's clock ahead),
 * "had expired when it came" (behind). */
static int check_validity(const struct gg_ac *info, time_t now, struct gg_err *err)
{
	char b1[40], b2[40];
	if (info->not_before > now + GG_AC_SKEW)
		return gg_err_set(
			err, GG_ECRED,
			"the attribute certificate is not valid yet: it starts at %s, %s "
			"from now (is the VOMS server's clock ahead?)",
			gg_time_iso((int64_t)info->not_before, b1, sizeof b1),
			gg_duration_format((int64_t)(info->not_before - now), b2, sizeof b2));
	if (info->not_after + GG_AC_SKEW <= now)
		return gg_err_set(err, GG_ECRED,
				  "the attribute certificate had expired when it came: it ended at "
				  "%s (is the VOMS server's clock behind?)",
				  gg_time_iso((int64_t)info->not_after, b1, sizeof b1));
	return 0;
}

/* The AC as the client takes it: the server's refusal, or its signature, VO and
 * validity checked; what came with it in *got. */
static int take(const char *who, struct gg_voms_answer *a, X509 *signer, const char *vo, time_t now,
		unsigned char **ac, size_t *ac_len, int64_t lifetime, struct gg_voms_got *got,
		struct gg_err *err)
{
	if (a->code || !a->ac)
		return gg_err_set(err, GG_ECRED, "VOMS server %s: %s", who,
				  a->message ? a->message : "no attribute certificate");
	struct gg_ac info;
	int rc = gg_ac_verify(a->ac, a->ac_len, signer, err);
	if (rc == 0 && (rc = gg_ac_parse(a->ac, a->ac_len, now, &info, err)) == 0) {
		if (strcmp(info.vo, vo) != 0)
			rc = gg_err_set(err, GG_EPROTO, "sent an AC for VO %s", info.vo);
		else
			rc = check_validity(&info, now, err);
		if (rc == 0 && got)
			note(got, who, &info, now, lifetime);
		gg_ac_clear(&info);
	}
	if (rc < 0)
		return gg_err_prefix(err, "VOMS server %s", who);
	if (got) {
		got->warning = a->warning;
		a->warning = NULL;
	}
	*ac = a->ac;
	*ac_len = a->ac_len;
	a->ac = NULL;
	return 0;
}

int gg_voms_answer_take(const char *who, const char *ans, size_t len, int rest, X509 *signer,
			const char *vo, time_t now, unsigned char **ac, size_t *ac_len,
			int64_t lifetime, struct gg_voms_got *got, struct gg_err *err)
{
	*ac = NULL;
	*ac_len = 0;
	const char *body = ans;
	int status = 200;
	if (rest && !(body = http_body(ans, len, &status)))
		return 1;
	struct gg_voms_answer a;
	int rc = gg_voms_answer_parse(body, len - (size_t)(body - ans), &a, err);
	if (rc < 0 && rest && status != 200)
		return 1; /* an HTTP error that is not a VOMS answer: not REST */
	if (rc < 0)
		return gg_err_prefix(err, "VOMS server %s", who);
	rc = take(who, &a, signer, vo, now ? now : time(NULL), ac, ac_len, lifetime, got, err);
	gg_voms_answer_clear(&a);
	return rc;
}

void gg_voms_got_clear(struct gg_voms_got *g)
{
	if (!g)
		return;
	free(g->warning);
	memset(g, 0, sizeof *g);
}

/* One server: REST, then legacy. */
static int fetch_one(const struct gg_cred *user, const struct gg_voms_server *s,
		     const struct gg_voms_request *r, const char *ca_dir, const char *voms_dir,
		     unsigned char **ac, size_t *ac_len, struct gg_voms_got *got,
		     struct gg_err *err)
{
	struct conn k = {.user = user, .timeout_ms = r->timeout_ms ? r->timeout_ms : 20000};
	clock_gettime(CLOCK_MONOTONIC, &k.deadline);
	k.deadline.tv_sec += k.timeout_ms / 1000;
	char who[300], *ans = NULL;
	size_t len = 0;
	snprintf(who, sizeof who, "%s:%d", s->host, s->port);
	/* the AC names the VO's real name (vomses' fifth field; --voms may give the alias) */
	const char *vo = s->vo;
	int rc = ask(&k, s, r, ca_dir, voms_dir, 1, &ans, &len, err);
	if (rc == 0)
		rc = gg_voms_answer_take(who, ans, len, 1, k.peer, vo, 0, ac, ac_len, r->lifetime,
					 got, err);
	free(ans);
	ans = NULL;
	conn_close(&k);
	if (rc == 1) {
		gg_logf(r->log, 1, "VOMS server %s: no REST answer, trying the legacy protocol",
			who);
		rc = ask(&k, s, r, ca_dir, voms_dir, 0, &ans, &len, err);
		if (rc == 0)
			rc = gg_voms_answer_take(who, ans, len, 0, k.peer, vo, 0, ac, ac_len,
						 r->lifetime, got, err);
		free(ans);
		conn_close(&k);
	}
	return rc;
}

/* The request's names before any server is looked for: the VO (or alias), the
 * FQANs and the order as FQANs (of any VO here; of the server's VO in ask). */
static int check_request(const struct gg_voms_request *r, struct gg_err *err)
{
	int rc = gg_voms_vo_check(r->vo, err);
	for (size_t i = 0; rc == 0 && i < r->n_fqans; i++)
		rc = gg_voms_fqan_check(NULL, r->fqans[i], err);
	if (rc == 0 && r->order && (rc = gg_voms_fqan_check(NULL, r->order, err)) < 0)
		rc = gg_err_prefix(err, "--order");
	return rc;
}

int gg_voms_fetch(const struct gg_cred *user, const struct gg_voms_request *r, unsigned char **ac,
		  size_t *ac_len, struct gg_voms_got *got, struct gg_err *err)
{
	*ac = NULL;
	*ac_len = 0;
	if (got)
		memset(got, 0, sizeof *got);
	struct gg_voms_server *sv = NULL;
	size_t n = 0;
	char *ca_dir = NULL;
	const char *vd = r->voms_dir ? r->voms_dir : getenv("X509_VOMS_DIR");
	if (!vd || !*vd)
		vd = "/etc/grid-security/vomsdir";
	int rc = check_request(r, err);
	if (rc == 0)
		rc = gg_voms_servers_find(r->vo, &sv, &n, err);
	if (rc == 0)
		rc = gg_cred_ca_dir(r->ca_dir, &ca_dir, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = fetch_one(user, &sv[i], r, ca_dir, vd, ac, ac_len, got, err);
		/* the next server when this one cannot be reached or answers garbage; a
		 * server's "no" is the VO's answer */
		if ((rc == GG_ENET || rc == GG_EPROTO) && i + 1 < n) {
			gg_logf(r->log, 1, "%s: trying the next server", err ? err->msg : "");
			rc = 0;
		} else {
			break;
		}
	}
	gg_voms_servers_free(sv, n);
	free(ca_dir);
	return rc;
}
