/* A batch's shared input (submit --count N): the image every job of the batch
 * runs, put once at the site's storage (its output_base) and fetched from
 * there by the CE's data staging for each job (a root:// base through the
 * site's XCache), instead of uploaded N times to N session directories. The
 * name is the image's SHA-256: a later batch of the same image finds it there
 * whole (its size) and uploads nothing. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ce/ce.h"
#include "core/core.h"
#include "http/http.h"
#include "engine/engine_int.h"

/* Where the shared copy goes: BASE + "gridgpu-image-SHA256.sif". */
static char *shared_url(const struct gg_site *site, const char *image, struct gg_err *err)
{
	char hex[GG_SHA256_HEX];
	if (gg_sha256_file(image, hex, err) < 0)
		return NULL;
	char *base = gg_site_output_base(site);
	char *url =
		base ? gg_strdup_printf("%s%sgridgpu-image-%s.sif", base,
					base[0] && base[strlen(base) - 1] == '/' ? "" : "/", hex)
		     : NULL;
	free(base);
	if (!url)
		gg_err_set(err, GG_ENOMEM, "out of memory");
	return url;
}

static void *share_progress(struct gg_engine *e, const char *url)
{
	char label[160];
	snprintf(label, sizeof label, "the image, once for the batch, to %s", url);
	return e->upload_begin ? e->upload_begin(e->ud, label) : NULL;
}

/* HEAD url: its status; *loc the https Location of a redirect (a door's). */
static long head(struct gg_http *h, const char *url, int64_t *len, char **loc, struct gg_err *err)
{
	struct gg_http_resp r = {0};
	long st = gg_http_request(h, "HEAD", url, NULL, NULL, 0, NULL, 1, &r, err) < 0 ? -1
										       : r.status;
	if (len)
		*len = r.length;
	if (loc && st >= 300 && st < 400 && r.location && !strncmp(r.location, "https://", 8) &&
	    !strchr(r.location, '?'))
		*loc = strdup(r.location);
	gg_http_resp_clear(&r);
	return st;
}

/* Where the storage keeps https: behind a door, the data server it
 * redirects to (the CE's staging does not follow a redirect when it checks
 * a source); else https itself. NULL when the storage cannot be asked. */
static char *located(struct gg_http *h, const char *https, struct gg_err *err)
{
	char *loc = NULL;
	long st = head(h, https, NULL, &loc, err);
	if (st < 0)
		return NULL;
	return loc ? loc : strdup(https);
}

/* The copy at the storage (https, by the handles that do and do not follow
 * redirects): its URL there, put now unless it was there whole (size). */
static char *put_once(struct gg_engine *e, struct gg_http *h[2], const char *https, const char *url,
		      const char *image, int64_t size, struct gg_err *err)
{
	char *at = located(h[0], https, err);
	int64_t len = -1;
	long st = at ? head(h[1], at, &len, NULL, err) : -1;
	if (st >= 200 && st < 300 && len == size)
		return at;
	if (st < 0) {
		free(at);
		return NULL;
	}
	/* to where the door sent the HEAD: a door may answer a PUT with its
	 * redirect before it reads the body, and close (a broken pipe) */
	struct gg_http_resp r = {0};
	void *p = share_progress(e, url);
	int rc = gg_http_put_file(h[1], at, image, p ? e->upload_progress : NULL, p, &r, err);
	if (e->upload_end && p)
		e->upload_end(p);
	if (rc == 0 && (r.status < 200 || r.status >= 300))
		rc = gg_err_set(err, r.status == 401 || r.status == 403 ? GG_ECRED : GG_EFAIL,
				"the storage answered %ld", r.status);
	gg_http_resp_clear(&r);
	if (rc == 0)
		return at;
	free(at);
	return NULL;
}

/* The URL the CE fetches: at (https) in the scheme of url (davs or https);
 * a root:// one as it is, through the site's cache. */
static char *ce_url(const struct gg_site *site, const char *url, const char *at)
{
	if (!strncmp(url, "davs://", 7))
		return gg_strdup_printf("davs://%s", at + 8);
	if (!strncmp(url, "https://", 8))
		return strdup(at);
	return gg_data_cache_url(site->cache, url);
}

static int shareable(const struct gg_job_spec *q, const struct gg_site *site, size_t njobs)
{
	return njobs >= 2 && site && site->output_base && q->image && !q->image_url &&
	       strncmp(q->image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK)) != 0;
}

char *gg_batch_share_image(struct gg_engine *e, const struct gg_auth *a,
			   const struct gg_job_spec *q, const struct gg_site *site, size_t njobs)
{
	struct stat st;
	if (!shareable(q, site, njobs) || stat(q->image, &st) < 0)
		return NULL;
	struct gg_err err = {0};
	char *url = shared_url(site, q->image, &err), *https = url ? gg_data_http_url(url) : NULL;
	struct gg_http_opts o = {.proxy_path = strcmp(a->kind, "token") ? a->proxy_path : NULL,
				 .token = a->token ? a->token->value : NULL,
				 .ca_dir = a->ca_dir,
				 .token_fn = a->tsource ? gg_tsource_current : NULL,
				 .token_ud = a->tsource,
				 .cancel = e->cancel,
				 .cancel_ud = e->ud,
				 .log = &e->log};
	struct gg_http *h[2] = {NULL, NULL};
	int rc = !https ? gg_err_set(&err, GG_EUSAGE, "the output base is no storage URL")
			: gg_http_new(&o, &h[0], &err);
	o.follow = 1;
	if (rc == 0)
		rc = gg_http_new(&o, &h[1], &err);
	char *at = rc == 0 ? put_once(e, h, https, url, q->image, (int64_t)st.st_size, &err) : NULL;
	int64_t sent[2] = {0, 0}, got;
	for (int i = 0; i < 2; i++)
		if (h[i])
			gg_http_bytes(h[i], &sent[i], &got);
	gg_engine_notef(e, GG_NOTE_VERBOSE, "%lld bytes sent to the storage",
			(long long)(sent[0] + sent[1]));
	gg_http_free(h[0]);
	gg_http_free(h[1]);
	free(https);
	char *src = at ? ce_url(site, url, at) : NULL;
	if (src)
		gg_engine_notef(e, GG_NOTE_VERBOSE,
				"the image is at %s: the CE fetches it for each job", src);
	else
		gg_engine_notef(
			e, GG_NOTE_VERBOSE,
			"the image not shared through %s (%s): each job gets its own upload",
			url ? url : "the storage", err.msg[0] ? err.msg : "out of memory");
	free(at);
	free(url);
	return src;
}
