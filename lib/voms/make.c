/* gg_proxy_make: what `gridgpu proxy init` does, from the user's credential
 * to the proxy file, the VOMS ACs included. */
#include "core/par.h"
#include "voms/proxyreq.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

struct make {
	const struct gg_proxy_req *q;
	struct gg_cred_source src;
	struct gg_cred *user, *proxy;
	struct gg_keygen *kg;
	struct ossl_provider_st *legacy;
	EVP_PKEY *key;
	char *out, *ca_dir;
	unsigned char *acseq;
	size_t acseq_len;
	int clipped;
	double t_start, t_key;
};

/* Old PKCS#12 files need OpenSSL's legacy provider: loaded for this process,
 * only for PKCS#12 input; without it only such old files fail (a verbose note). */
static void load_legacy(struct make *m)
{
	struct gg_err err = {0};
	if (gg_cred_legacy_load(&m->legacy, &err) < 0)
		gg_proxy_note(m->q, GG_NOTE_VERBOSE, "%s", err.msg);
}

/* Everything that can be checked before the pass phrase is asked for. */
static int prepare(struct make *m, struct gg_err *err)
{
	const struct gg_proxy_req *q = m->q;
	if (gg_proxy_path(q->file, &m->out, err) < 0 || gg_proxy_check_target(m->out, err) < 0 ||
	    (q->verify && gg_cred_ca_dir(q->ca_dir, &m->ca_dir, err) < 0) ||
	    gg_cred_locate(q->cert, q->key, &m->src, err) < 0)
		return err->code;
	if (m->src.pkcs12)
		load_legacy(m);
	if (gg_cred_open(&m->src, &m->user, err) < 0 ||
	    (gg_cred_cert(m->user) && gg_cred_check_time(m->user, 0, err) < 0))
		return err->code;
	if (gg_cred_is_pkcs12(m->user))
		load_legacy(m);
	return 0;
}

/* The pass phrase, asked once when the key has one, and the key unlocked. */
static int unlock_user(struct make *m, struct gg_err *err)
{
	const struct gg_proxy_req *q = m->q;
	const char *path = gg_cred_key_path(m->user);
	if (!gg_cred_needs_passphrase(m->user))
		return 0;
	if (!q->pass_fn)
		return gg_err_set(err, GG_ECRED, "the key '%s' needs its pass phrase", path);
	char *buf = OPENSSL_zalloc(GG_PASSPHRASE_MAX);
	if (!buf)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int n = q->pass_fn(q->pass_ud, path, buf, GG_PASSPHRASE_MAX, err), rc;
	if (n < 0)
		rc = err->code ? err->code : gg_err_set(err, GG_ECRED, "no pass phrase given");
	else if (n > GG_PASSPHRASE_MAX)
		rc = gg_err_set(err, GG_ECRED, "the pass phrase is longer than %d bytes",
				GG_PASSPHRASE_MAX);
	else
		rc = gg_cred_unlock(m->user, buf, (size_t)n, err);
	OPENSSL_clear_free(buf, GG_PASSPHRASE_MAX);
	if (rc == 0)
		rc = gg_cred_check_time(m->user, 0, err);
	return rc < 0 ? rc : 0;
}

/* What the VOMS server said beside the AC, and an AC that ends well before
 * the lifetime asked (the server's maximum), as voms-proxy-init warns. */
static void warn_got(const struct gg_proxy_req *q, const struct gg_voms_got *g, int64_t asked)
{
	char b1[40], b2[40], b3[40];
	if (g->warning)
		gg_proxy_note(q, GG_NOTE_WARN, "VOMS server %s: %s", g->who, g->warning);
	if (!g->shortened)
		return;
	time_t now = time(NULL);
	gg_proxy_note(q, GG_NOTE_WARN,
		      "the attribute certificate of VO %s is valid until %s only (%s), not the %s "
		      "asked: VOMS server %s shortened it, and the proxy carries no VO "
		      "attributes after then",
		      g->vo, gg_time_local((int64_t)g->not_after, b1, sizeof b1),
		      gg_duration_format(g->not_after > now ? (int64_t)(g->not_after - now) : 0, b2,
					 sizeof b2),
		      gg_duration_format(asked, b3, sizeof b3), g->who);
}

/* The ACs of every VO asked for (in order, each VO once), as the proxy
 * extension's value. */
static int fetch_acs(struct make *m, int64_t proxy_life, struct gg_err *err)
{
	const struct gg_proxy_req *q = m->q;
	struct gg_voms_ask asks[GG_PROXY_VOMS_MAX];
	unsigned char *acs[GG_PROXY_VOMS_MAX] = {0};
	size_t lens[GG_PROXY_VOMS_MAX] = {0}, n = 0, na = 0;
	int64_t life =
		q->voms_lifetime && q->voms_lifetime < proxy_life ? q->voms_lifetime : proxy_life;
	int rc = gg_proxy_voms_plan(q, asks, &na, err);
	for (; rc == 0 && n < na; n++) {
		struct gg_voms_request r = {.vo = asks[n].vo,
					    .fqans = asks[n].fqans,
					    .n_fqans = asks[n].n_fqans,
					    .order = q->order,
					    .lifetime = life,
					    .log = q->log};
		struct gg_voms_got got;
		rc = gg_voms_fetch(m->user, &r, &acs[n], &lens[n], &got, err);
		if (rc == 0)
			warn_got(q, &got, life);
		gg_voms_got_clear(&got);
	}
	if (rc == 0)
		rc = gg_ac_seq_encode((const unsigned char *const *)acs, lens, n, &m->acseq,
				      &m->acseq_len, err);
	for (size_t i = 0; i < n; i++)
		free(acs[i]);
	return rc;
}

/* The ACs fetched, the proxy signed with the new key, verified when asked,
 * written. */
static int make_proxy(struct make *m, struct gg_err *err)
{
	const struct gg_proxy_req *q = m->q;
	struct gg_proxy_opts po;
	gg_proxy_opts_init(&po);
	if (q->lifetime)
		po.lifetime = q->lifetime;
	po.bits = q->bits;
	po.policy = q->policy;
	po.path_length = q->path_length;
	if (q->n_voms && fetch_acs(m, po.lifetime, err) < 0)
		return err->code;
	po.acseq = m->acseq;
	po.acseq_len = m->acseq_len;
	int rc = gg_keygen_finish(m->kg, &m->key, err);
	m->kg = NULL;
	if (rc < 0)
		return rc;
	m->t_key = gg_mono_msf();
	po.key = m->key;
	if (gg_proxy_create(m->user, &po, &m->proxy, &m->clipped, err) < 0 ||
	    (q->verify && gg_cred_verify(m->proxy, m->ca_dir, 0, err) < 0) ||
	    gg_proxy_write(m->proxy, m->out, err) < 0)
		return err->code;
	return 0;
}

/* What the proxy written says, for the caller to show. */
static int report(struct make *m, struct gg_proxy_report **out, struct gg_err *err)
{
	char b[40];
	struct gg_proxy_report *r = calloc(1, sizeof *r);
	if (!r)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (gg_proxy_info_get(m->proxy, 0, &r->info, err) < 0) {
		free(r);
		return err->code;
	}
	free(r->info.path);
	r->info.path = m->out;
	m->out = NULL;
	if (m->clipped)
		gg_proxy_note(m->q, GG_NOTE_WARN,
			      "the proxy is valid until %s only: its signing certificate ends then",
			      gg_time_local((int64_t)r->info.end, b, sizeof b));
	struct gg_err e2 = {0};
	gg_cred_acs(m->proxy, 0, &r->acs, &r->n_acs, &e2);
	r->verified = m->q->verify ? 1 : -1;
	r->ca_dir = m->ca_dir;
	m->ca_dir = NULL;
	gg_proxy_report_find_token(m->q, r);
	r->now = time(NULL);
	*out = r;
	return 0;
}

static void make_clear(struct make *m)
{
	gg_keygen_free(m->kg);
	free(m->acseq);
	EVP_PKEY_free(m->key);
	gg_cred_free(m->proxy);
	gg_cred_free(m->user);
	gg_cred_source_clear(&m->src);
	free(m->out);
	free(m->ca_dir);
	gg_cred_legacy_unload(m->legacy);
}

int gg_proxy_make(const struct gg_proxy_req *q, struct gg_proxy_report **out, struct gg_err *err)
{
	struct make m = {.q = q};
	*out = NULL;
	/* The new key is made first, in the background: everything else (reading
	 * the certificate, the pass phrase, the VOMS servers) happens meanwhile.
	 * The key is a secret too, so no core dumps from here on. */
	gg_proxy_no_core_dumps(q);
	m.t_start = gg_mono_msf();
	int rc = gg_keygen_start(q->bits, q->threads, &m.kg, err);
	if (rc == 0)
		rc = prepare(&m, err);
	if (rc == 0)
		rc = unlock_user(&m, err);
	if (rc == 0)
		rc = make_proxy(&m, err);
	if (rc == 0) {
		gg_proxy_note(q, GG_NOTE_VERBOSE,
			      "timing: key ready after %.1f ms, the rest took %.1f ms",
			      m.t_key - m.t_start, gg_mono_msf() - m.t_key);
		rc = report(&m, out, err);
	}
	make_clear(&m);
	return rc;
}

/* ---- the VOMS requests of the --voms words ---- */

/* The VO a word's VO part names: the vomses' VO name of its first server,
 * else the word itself. */
static void vo_of(const char *word, size_t len, char *out, size_t size)
{
	struct gg_voms_server *sv = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	snprintf(out, size, "%.*s", (int)len, word);
	if (gg_voms_servers_find(out, &sv, &n, &err) == 0 && n && sv[0].vo)
		snprintf(out, size, "%s", sv[0].vo);
	gg_voms_servers_free(sv, n);
}

int gg_proxy_voms_plan(const struct gg_proxy_req *q, struct gg_voms_ask *asks, size_t *n,
		       struct gg_err *err)
{
	char vos[GG_PROXY_VOMS_MAX][256];
	*n = 0;
	for (size_t i = 0; i < q->n_voms; i++) {
		const char *w = q->voms[i], *c = strchr(w, ':');
		size_t vl = c ? (size_t)(c - w) : strlen(w), j;
		if (vl == 0 || vl >= sizeof asks[0].vo)
			return gg_err_set(err, GG_EUSAGE, "--voms '%s': expected VO[:FQAN]", w);
		char vo[256];
		vo_of(w, vl, vo, sizeof vo);
		for (j = 0; j < *n && strcmp(vos[j], vo) != 0; j++)
			;
		if (j == *n) { /* a VO not asked yet: asked by the name it is given first */
			memcpy(vos[j], vo, sizeof vo);
			memset(&asks[j], 0, sizeof asks[j]);
			snprintf(asks[j].vo, sizeof asks[j].vo, "%.*s", (int)vl, w);
			(*n)++;
		}
		if (c && c[1])
			asks[j].fqans[asks[j].n_fqans++] = c + 1;
	}
	return 0;
}
