/* RSA key generation in the background: started before the passphrase prompt
 * so that the prime search overlaps with the user's typing.
 *
 * OpenSSL 3's default RSA key generation for >= 2048 bits follows SP 800-56B
 * (auxiliary primes, no sieve) and costs about three times the CPU of plain
 * probable-prime generation, which is what OpenSSL 1.1 did. So the key is
 * built here from two primes made by BN_generate_prime_ex2 (OpenSSL's sieve
 * and Miller-Rabin test, private DRBG), with the checks of FIPS 186-4 B.3.1 on
 * the result (|p - q| > 2^(nbits/2 - 100), d > 2^(nbits/2), gcd(e, p-1) = 1),
 * and handed to OpenSSL with EVP_PKEY_fromdata. Several threads search at
 * once and the first two suitable primes win; the losers are stopped through
 * the generation callback. When OpenSSL runs in FIPS mode, or for an odd key
 * size, the threads race OpenSSL's own EVP key generation instead. */
#include "cred/internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/param_build.h>

#define KEYGEN_MAX_THREADS 4
#define RSA_E              65537

struct gg_keygen {
	int bits;
	int nthreads;
	int use_evp; /* race whole EVP key generations */
	pthread_t tid[KEYGEN_MAX_THREADS];
	atomic_int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	BIGNUM *prime; /* the first suitable prime, waiting for a second */
	int building;  /* a thread is building the key from two primes */
	EVP_PKEY *key; /* the result */
	int finished;  /* threads that have returned */
	char why[160]; /* first failure */
};

static void note_failure(struct gg_keygen *kg, const char *what)
{
	/* called with mu held */
	if (!kg->why[0] && !atomic_load(&kg->stop)) {
		unsigned long e = ERR_peek_last_error();
		const char *r = e ? ERR_reason_error_string(e) : NULL;
		snprintf(kg->why, sizeof kg->why, "%s%s%s", what, r ? ": " : "", r ? r : "");
	}
	ERR_clear_error();
}

/* ---- the key from two primes ----------------------------------------------------- */

/* n, d, CRT values from p and q; NULL when d is too small (retry). */
static EVP_PKEY *rsa_from_primes(BIGNUM *p, BIGNUM *q, int bits, BN_CTX *ctx)
{
	EVP_PKEY *pkey = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	BN_CTX_start(ctx);
	BIGNUM *n = BN_CTX_get(ctx), *e = BN_CTX_get(ctx), *d = BN_CTX_get(ctx),
	       *p1 = BN_CTX_get(ctx), *q1 = BN_CTX_get(ctx), *g = BN_CTX_get(ctx),
	       *lcm = BN_CTX_get(ctx), *dmp1 = BN_CTX_get(ctx), *dmq1 = BN_CTX_get(ctx),
	       *iqmp = BN_CTX_get(ctx), *t = BN_CTX_get(ctx);
	if (!t)
		goto out;
	if (BN_cmp(p, q) < 0) /* p > q, as OpenSSL keeps them */
		BN_swap(p, q);
	BN_set_flags(p1, BN_FLG_CONSTTIME);
	BN_set_flags(q1, BN_FLG_CONSTTIME);
	BN_set_flags(lcm, BN_FLG_CONSTTIME);
	BN_set_flags(p, BN_FLG_CONSTTIME);
	BN_set_flags(q, BN_FLG_CONSTTIME);
	BN_set_flags(t, BN_FLG_CONSTTIME);
	BN_set_flags(g, BN_FLG_CONSTTIME);
	BN_set_flags(d, BN_FLG_CONSTTIME);
	if (!BN_set_word(e, RSA_E) || !BN_mul(n, p, q, ctx) || BN_num_bits(n) != bits ||
	    !BN_sub(p1, p, BN_value_one()) || !BN_sub(q1, q, BN_value_one()) ||
	    !BN_gcd(g, p1, q1, ctx) || !BN_mul(t, p1, q1, ctx) || !BN_div(lcm, NULL, t, g, ctx) ||
	    !BN_mod_inverse(d, e, lcm, ctx))
		goto out;
	/* FIPS 186-4 B.3.1: d > 2^(nbits/2); consistency: e*d = 1 mod p-1 and q-1 */
	if (BN_num_bits(d) <= bits / 2 || !BN_mod(dmp1, d, p1, ctx) || !BN_mod(dmq1, d, q1, ctx) ||
	    !BN_mod_inverse(iqmp, q, p, ctx) || !BN_mod_mul(t, e, dmp1, p1, ctx) || !BN_is_one(t) ||
	    !BN_mod_mul(t, e, dmq1, q1, ctx) || !BN_is_one(t))
		goto out;
	if (!(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, d) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR1, p) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR2, q) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT1, dmp1) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT2, dmq1) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, iqmp) ||
	    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
	    !(pctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
	    EVP_PKEY_fromdata_init(pctx) <= 0 ||
	    EVP_PKEY_fromdata(pctx, &pkey, EVP_PKEY_KEYPAIR, params) <= 0) {
		EVP_PKEY_free(pkey);
		pkey = NULL;
	}
out:
	EVP_PKEY_CTX_free(pctx);
	OSSL_PARAM_free(params); /* its secure part (copies of secure BNs) is cleared */
	OSSL_PARAM_BLD_free(bld);
	BN_CTX_end(ctx); /* the secure BN_CTX clears its numbers when freed */
	return pkey;
}

/* |p - q| > 2^(nbits/2 - 100) */
static int far_apart(const BIGNUM *p, const BIGNUM *q, int bits, BN_CTX *ctx)
{
	BN_CTX_start(ctx);
	BIGNUM *diff = BN_CTX_get(ctx);
	int ok = diff && BN_sub(diff, p, q);
	if (ok) {
		BN_set_negative(diff, 0);
		ok = BN_num_bits(diff) > bits / 2 - 100;
	}
	BN_CTX_end(ctx);
	return ok;
}

static int prime_cb(int a, int b, BN_GENCB *cb)
{
	(void)a;
	(void)b;
	struct gg_keygen *kg = BN_GENCB_get_arg(cb);
	return !atomic_load(&kg->stop); /* 0 aborts the search */
}

static void primes_thread(struct gg_keygen *kg)
{
	BN_CTX *ctx = BN_CTX_secure_new();
	BN_GENCB *cb = BN_GENCB_new();
	BIGNUM *e = BN_new(), *t = BN_new();
	if (!ctx || !cb || !e || !t || !BN_set_word(e, RSA_E)) {
		pthread_mutex_lock(&kg->mu);
		note_failure(kg, "out of memory");
		pthread_mutex_unlock(&kg->mu);
		goto out;
	}
	BN_GENCB_set(cb, prime_cb, kg);
	while (!atomic_load(&kg->stop)) {
		BIGNUM *pr = BN_secure_new();
		if (!pr || !BN_generate_prime_ex2(pr, kg->bits / 2, 0, NULL, NULL, cb, ctx)) {
			BN_clear_free(pr);
			pthread_mutex_lock(&kg->mu);
			note_failure(kg, "prime generation");
			pthread_mutex_unlock(&kg->mu);
			break;
		}
		/* gcd(e, p - 1) = 1 */
		if (!BN_sub(t, pr, BN_value_one()) || !BN_gcd(t, t, e, ctx) || !BN_is_one(t)) {
			BN_clear_free(pr);
			continue;
		}
		pthread_mutex_lock(&kg->mu);
		if (kg->key || kg->building || atomic_load(&kg->stop)) {
			pthread_mutex_unlock(&kg->mu);
			BN_clear_free(pr);
			break;
		}
		if (!kg->prime) {
			kg->prime = pr;
			pthread_mutex_unlock(&kg->mu);
			continue;
		}
		if (!far_apart(kg->prime, pr, kg->bits, ctx)) { /* practically never */
			pthread_mutex_unlock(&kg->mu);
			BN_clear_free(pr);
			continue;
		}
		BIGNUM *p = kg->prime;
		kg->prime = NULL;
		kg->building = 1;
		atomic_store(&kg->stop, 1); /* enough primes: stop the others */
		pthread_mutex_unlock(&kg->mu);

		EVP_PKEY *key = rsa_from_primes(p, pr, kg->bits, ctx);
		BN_clear_free(p);
		BN_clear_free(pr);
		pthread_mutex_lock(&kg->mu);
		kg->building = 0;
		if (key) {
			kg->key = key;
		} else {
			/* d too small (about 2^-1000 likely) or an error: start over alone */
			ERR_clear_error();
			atomic_store(&kg->stop, 0);
		}
		pthread_mutex_unlock(&kg->mu);
		if (key)
			break;
	}
out:
	BN_free(t);
	BN_free(e);
	BN_GENCB_free(cb);
	BN_CTX_free(ctx);
}

/* ---- racing OpenSSL's own key generation (FIPS mode, odd sizes) ------------------------ */

static int evp_cb(EVP_PKEY_CTX *ctx)
{
	struct gg_keygen *kg = EVP_PKEY_CTX_get_app_data(ctx);
	return !atomic_load(&kg->stop);
}

static void evp_thread(struct gg_keygen *kg)
{
	EVP_PKEY *k = NULL;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	int ok = ctx && EVP_PKEY_keygen_init(ctx) > 0 &&
		 EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, kg->bits) > 0;
	if (ok) {
		EVP_PKEY_CTX_set_app_data(ctx, kg);
		EVP_PKEY_CTX_set_cb(ctx, evp_cb);
		ok = EVP_PKEY_keygen(ctx, &k) > 0;
	}
	EVP_PKEY_CTX_free(ctx);
	pthread_mutex_lock(&kg->mu);
	if (ok && !kg->key) {
		kg->key = k;
		k = NULL;
		atomic_store(&kg->stop, 1);
	} else if (!ok) {
		note_failure(kg, "key generation");
	}
	pthread_mutex_unlock(&kg->mu);
	EVP_PKEY_free(k);
}

static void *keygen_thread(void *arg)
{
	struct gg_keygen *kg = arg;
	if (kg->use_evp)
		evp_thread(kg);
	else
		primes_thread(kg);
	ERR_clear_error();
	pthread_mutex_lock(&kg->mu);
	kg->finished++;
	pthread_cond_broadcast(&kg->cv);
	pthread_mutex_unlock(&kg->mu);
	return NULL;
}

/* ---- the API ------------------------------------------------------------------------------ */

static void keygen_join(struct gg_keygen *kg)
{
	for (int i = 0; i < kg->nthreads; i++)
		pthread_join(kg->tid[i], NULL);
	kg->nthreads = 0;
}

void gg_keygen_free(struct gg_keygen *kg)
{
	if (!kg)
		return;
	atomic_store(&kg->stop, 1);
	keygen_join(kg);
	EVP_PKEY_free(kg->key);
	BN_clear_free(kg->prime);
	pthread_mutex_destroy(&kg->mu);
	pthread_cond_destroy(&kg->cv);
	free(kg);
}

int gg_keygen_start(int bits, int threads, struct gg_keygen **out, struct gg_err *err)
{
	*out = NULL;
	if (!bits)
		bits = GG_PROXY_DEFAULT_BITS;
	if (bits < 1024 || bits > 16384)
		return gg_err_set(err, GG_EUSAGE, "key size %d: expected 1024 to 16384 bits", bits);
	if (threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n < 1 ? 1 : n > KEYGEN_MAX_THREADS ? KEYGEN_MAX_THREADS : (int)n;
	}
	if (threads > KEYGEN_MAX_THREADS)
		threads = KEYGEN_MAX_THREADS;
	struct gg_keygen *kg = calloc(1, sizeof *kg);
	if (!kg)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	kg->bits = bits;
	kg->use_evp = bits % 2 != 0 || EVP_default_properties_is_fips_enabled(NULL);
	atomic_init(&kg->stop, 0);
	pthread_mutex_init(&kg->mu, NULL);
	pthread_cond_init(&kg->cv, NULL);
	/* The threads block every signal, so that Ctrl-C at the prompt reaches the
	 * thread that reads the terminal. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = 0;
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&kg->tid[i], NULL, keygen_thread, kg) != 0) {
			if (i == 0)
				rc = gg_err_set(err, GG_EFAIL, "starting key generation");
			break;
		}
		kg->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		gg_keygen_free(kg);
		return rc;
	}
	*out = kg;
	return 0;
}

int gg_keygen_finish(struct gg_keygen *kg, EVP_PKEY **out, struct gg_err *err)
{
	*out = NULL;
	if (!kg)
		return gg_err_set(err, GG_EFAIL, "no key generation started");
	pthread_mutex_lock(&kg->mu);
	while (!kg->key && kg->finished < kg->nthreads)
		pthread_cond_wait(&kg->cv, &kg->mu);
	pthread_mutex_unlock(&kg->mu);
	atomic_store(&kg->stop, 1);
	keygen_join(kg);
	int rc = 0;
	if (kg->key) {
		*out = kg->key;
		kg->key = NULL;
	} else {
		rc = gg_err_set(err, GG_ECRED, "generating an RSA key of %d bits: %s", kg->bits,
				kg->why[0] ? kg->why : "failed");
	}
	gg_keygen_free(kg);
	return rc;
}
