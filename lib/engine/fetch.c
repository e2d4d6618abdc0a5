/* A job's outputs into a local directory (gridgpu get): the files the CE's
 * listing names (plain file names only), then those the CE put at storage,
 * fetched over HTTPS resuming what a broken fetch left; then, when asked, the
 * job cleaned on its CE and forgotten as gg_engine_clean does it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cred/cred.h"
#include "engine/engine_int.h"

struct fetch {
	struct gg_engine *e;
	struct gg_record *r;
	struct gg_ce *ce;
	const char *target;
	char **files; /* the CE's names that can be written in target */
	size_t nfiles, nlisted;
	struct gg_storage_output *so;
	size_t ns;
	unsigned char *skip; /* per output (CE's files, then storage's): already there */
	char **paths;        /* the files written, in order */
	size_t npaths;
};

/* A name from the CE's listing that is a plain file name: not empty, no '/',
 * not "." or "..", no control character. */
static int plain_name(const char *n)
{
	return n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..") &&
	       !gg_str_has_control(n);
}

/* Keep the names that can be written inside the target: the others are
 * skipped with a warning, hidden files (A-REX's own) silently. f->files is
 * compacted (the dropped names freed), f->nfiles how many are left. */
static void usable_names(struct fetch *f)
{
	size_t k = 0;
	for (size_t i = 0; i < f->nlisted; i++) {
		char *n = f->files[i];
		if (!plain_name(n))
			gg_engine_notef(
				f->e, GG_NOTE_WARN,
				"skipping '%s' from the CE's listing: not a plain file name", n);
		if (!plain_name(n) || n[0] == '.')
			free(n);
		else
			f->files[k++] = n;
	}
	f->nfiles = k;
}

/* Two files with the same bytes: 1, 0 when they differ, or an error. */
static int same_bytes(const char *a, const char *b, struct gg_err *err)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int rc = fa && fb ? 1 : gg_err_sys(err, GG_EFAIL, errno, "'%s'", fa ? b : a);
	char x[16384], y[16384];
	while (rc == 1) {
		size_t n = fread(x, 1, sizeof x, fa), m = fread(y, 1, sizeof y, fb);
		if (n != m || memcmp(x, y, n) != 0)
			rc = 0;
		else if (n == 0)
			break;
	}
	if (rc == 1 && (ferror(fa) || ferror(fb)))
		rc = gg_err_sys(err, GG_EFAIL, errno, "comparing '%s' with the job's", a);
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return rc;
}

static const char *out_name(const struct fetch *f, size_t i)
{
	return i < f->nfiles ? f->files[i] : f->so[i - f->nfiles].name;
}

/* tmp and what a broken fetch into it leaves (tmp.part and its validator). */
static void remove_check(const char *tmp)
{
	static const char *const tails[] = {"", ".part", ".part.validator"};
	for (size_t i = 0; i < 3; i++) {
		char *p = gg_strdup_printf("%s%s", tmp, tails[i]);
		if (p)
			unlink(p);
		free(p);
	}
}

/* Output i, already a file at path: 1 when the job's is the same bytes, 0 when
 * it differs (or path is no regular file), or an error. The job's is fetched
 * beside it under a hidden name (no output has one), removed after. */
static int same_as_there(struct fetch *f, size_t i, const char *path, const struct gg_auth *a,
			 struct gg_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	char *tmp = gg_strdup_printf("%s/.%s.gg-same", f->target, out_name(f, i));
	if (!tmp)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int64_t resumed = 0;
	remove_check(tmp);
	int rc = i < f->nfiles
			 ? gg_ce_get_file(f->ce, f->r->job_id, out_name(f, i), tmp, NULL, NULL, err)
			 : gg_storage_fetch(a, f->so[i - f->nfiles].url, tmp, NULL, NULL, &resumed,
					    err);
	if (rc == 0)
		rc = same_bytes(path, tmp, err);
	else
		gg_err_prefix(err, "%s", out_name(f, i));
	remove_check(tmp);
	free(tmp);
	return rc;
}

/* The credential the job's outputs at storage are read with: the record's,
 * and on a slurm+ssh site (its ssh key) the user's proxy. */
static int storage_auth(struct fetch *f, struct gg_auth *a, struct gg_err *err)
{
	int rc = gg_auth_find(gg_engine_site(f->e, f->r->site), f->r->auth, 0, a, err);
	if (rc == 0 && !strcmp(a->kind, "ssh"))
		rc = gg_auth_add_proxy(a, 0, err);
	return rc;
}

/* A file already there that is the job's output, byte for byte, is kept and
 * not fetched again (f->skip); one that differs is refused before anything is
 * downloaded, so nothing is half replaced. Outputs at storage of a job that did
 * not finish are not fetched: no conflict. */
static int refuse_existing(struct fetch *f, struct gg_err *err)
{
	struct gg_auth a = {0};
	int rc = 0, auth = 0;
	for (size_t i = 0; rc == 0 && i < f->nfiles + f->ns; i++) {
		int storage = i >= f->nfiles;
		char *p = gg_strdup_printf("%s/%s", f->target, out_name(f, i));
		if (!p)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		if (access(p, F_OK) == 0 && !(storage && f->r->state != GG_S_FINISHED)) {
			if (storage && !auth++)
				rc = storage_auth(f, &a, err);
			int same = rc < 0 ? rc : same_as_there(f, i, p, &a, err);
			if (same == 1)
				gg_engine_notef(
					f->e, GG_NOTE_VERBOSE,
					"'%s' is already there, the same as the job's: kept", p);
			else if (same == 0)
				gg_err_set(err, GG_EFAIL,
					   "'%s' is already there and differs from the job's: use "
					   "--force to replace it",
					   p);
			rc = same == 1 ? 0 : same == 0 ? GG_EFAIL : same;
			f->skip[i] = same == 1;
		}
		free(p);
	}
	if (auth)
		gg_auth_clear(&a);
	return rc;
}

/* path is written whole: keep it (the caller's list) and tell e->fetched. */
static int got(struct fetch *f, char *path, struct gg_err *err)
{
	char **p = realloc(f->paths, (f->npaths + 1) * sizeof *p);
	if (!p) {
		free(path);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	f->paths = p;
	f->paths[f->npaths++] = path;
	if (f->e->fetched)
		f->e->fetched(f->e->ud, path);
	return 0;
}

/* e->download_begin's progress handle for a file (NULL: no progress). */
static void *progress_begin(const struct fetch *f, const char *name, const char *where)
{
	char label[160];
	snprintf(label, sizeof label, "%s %s%s", f->r->name, name, where);
	return f->e->download_begin ? f->e->download_begin(f->e->ud, label) : NULL;
}

static void progress_end(const struct fetch *f, void *p)
{
	if (f->e->download_end && p)
		f->e->download_end(p);
}

/* The CE's files, each written whole (or not at all) under its name. */
static int from_ce(struct fetch *f, struct gg_err *err)
{
	for (size_t i = 0; i < f->nfiles; i++) {
		if (f->skip[i])
			continue;
		char *path = gg_strdup_printf("%s/%s", f->target, f->files[i]);
		if (!path)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		void *p = progress_begin(f, f->files[i], "");
		int rc = gg_ce_get_file(f->ce, f->r->job_id, f->files[i], path,
					p ? f->e->download_progress : NULL, p, err);
		progress_end(f, p);
		if (rc < 0) {
			free(path);
			return gg_err_prefix(err, "%s", f->files[i]);
		}
		if ((rc = got(f, path, err)) < 0)
			return rc;
	}
	return 0;
}

/* One output at storage with the user's credential a. */
static int storage_one(struct fetch *f, const struct gg_auth *a, const struct gg_storage_output *o,
		       struct gg_err *err)
{
	char *path = gg_strdup_printf("%s/%s", f->target, o->name);
	if (!path)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	void *p = progress_begin(f, o->name, " (storage)");
	int64_t resumed = 0;
	int rc = gg_storage_fetch(a, o->url, path, p ? f->e->download_progress : NULL, p, &resumed,
				  err);
	progress_end(f, p);
	if (rc < 0) {
		free(path);
		return gg_err_prefix(err, "%s from %s", o->name, o->url);
	}
	if (resumed)
		gg_engine_notef(f->e, GG_NOTE_INFO, "%s: resumed at byte %lld", o->name,
				(long long)resumed);
	return got(f, path, err);
}

/* The outputs the CE put at storage, fetched over HTTPS with the credential
 * the job was made with (resuming what a broken fetch left behind). */
static int from_storage(struct fetch *f, struct gg_err *err)
{
	if (!f->ns)
		return 0;
	const struct gg_record *r = f->r;
	if (r->state != GG_S_FINISHED) {
		gg_engine_notef(f->e, GG_NOTE_WARN,
				"%s did not finish: its outputs at storage are not fetched (%s)",
				r->name, r->error ? r->error : gg_sess_state_name(r->state));
		return 0;
	}
	struct gg_auth a;
	int rc = storage_auth(f, &a, err);
	for (size_t i = 0; rc == 0 && i < f->ns; i++)
		if (!f->skip[f->nfiles + i])
			rc = storage_one(f, &a, &f->so[i], err);
	gg_auth_clear(&a);
	return rc;
}

/* What there is to fetch: the outputs at storage (from the record) and the
 * CE's listing. A job cleaned on the CE still has its outputs at storage. */
static int list_outputs(struct fetch *f, struct gg_err *err)
{
	if (gg_storage_outputs(f->r, &f->so, &f->ns, err) < 0)
		return err->code;
	int rc = gg_ce_ls(f->ce, f->r->job_id, &f->files, &f->nlisted, err);
	if (rc == GG_ENOTFOUND && f->ns) {
		gg_engine_notef(f->e, GG_NOTE_WARN,
				"the CE no longer has %s's files: fetching its outputs at storage "
				"only",
				f->r->name);
		rc = 0;
	}
	if (rc == 0)
		usable_names(f);
	if (rc == 0 && !(f->skip = calloc(f->nfiles + f->ns + 1, 1)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	return rc;
}

static int fetch_outputs(struct fetch *f, unsigned flags, struct gg_err *err)
{
	int rc = list_outputs(f, err);
	if (rc == 0)
		rc = gg_mkdir_p(f->target, 0755, err);
	if (rc == 0 && !(flags & GG_FETCH_FORCE))
		rc = refuse_existing(f, err);
	if (rc == 0)
		rc = from_ce(f, err);
	if (rc == 0)
		rc = from_storage(f, err);
	return rc;
}

/* Where the job is now (waiting for its end when asked): it must have ended. */
static int ended(struct fetch *f, unsigned flags, int64_t timeout, struct gg_err *err)
{
	struct gg_record *r = f->r;
	if (!r->job_id || !r->ce)
		return gg_err_set(err, GG_ENOTFOUND, "was never submitted (%s)",
				  r->error ? r->error : gg_sess_state_name(r->state));
	int rc = gg_engine_open_record_ce(f->e, r, &f->ce, err);
	if (rc == 0)
		rc = gg_engine_wait_ended(f->e, f->ce, r, !!(flags & GG_FETCH_WAIT), timeout, err);
	if (rc == 0 && !gg_sess_state_ended(r->state))
		rc = gg_err_set(err, GG_EFAIL,
				"the job is %s: its outputs come when it ends ('gridgpu get "
				"--wait %s')",
				gg_sess_state_name(r->state), r->name);
	return rc;
}

int gg_engine_fetch(struct gg_engine *e, struct gg_record *r, const char *dir, unsigned flags,
		    int64_t timeout, char ***paths, size_t *npaths, struct gg_err *err)
{
	struct fetch f = {.e = e, .r = r};
	int rc = ended(&f, flags, timeout, err);
	f.target = dir ? dir : r->name; /* saving the record may have replaced r's strings */
	if (rc == 0)
		rc = fetch_outputs(&f, flags, err);
	gg_ce_free(f.ce);
	if (rc == 0 && (flags & GG_FETCH_CLEAN) && gg_engine_clean_one(e, r, err) < 0)
		rc = gg_err_prefix(err, "cleaning on the CE (the record is kept)");
	for (size_t i = 0; i < f.nfiles; i++)
		free(f.files[i]);
	free(f.files);
	free(f.skip);
	gg_storage_outputs_free(f.so, f.ns);
	if (paths) {
		*paths = f.paths;
		*npaths = f.npaths;
	} else {
		gg_fetched_free(f.paths, f.npaths);
	}
	return rc;
}

void gg_fetched_free(char **paths, size_t n)
{
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}
