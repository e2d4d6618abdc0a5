/* The record store: <dir>/<name>.json, 0600 in a 0700 directory, each written
 * atomically (a new file, on the disk before a rename puts it in place);
 * read-modify-write under flock(<dir>/.lock) so concurrent gridgpu processes
 * never lose an update. A record an update leaves as it was is not written;
 * the records one batch changes reach the disk together (one sync of the file
 * system, one of the directory), not one fsync pair each. <dir>.cache holds
 * every record in one file, made from a scan of a directory still for a
 * second and read instead of the files (gg_store_list, gg_store_rows) while
 * the directory's modification time, which every create, rename and unlink
 * changes, is the one it was made at. */
#include "store/store.h"
#include "compat/compat.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

struct gg_store {
	char *dir;
	char *lockpath;
	char *cachepath; /* <dir>.cache: every record in one file, for list */
	struct gg_store_io io;
};

void gg_store_io_get(const struct gg_store *st, struct gg_store_io *io)
{
	*io = st->io;
}

const char *gg_store_dir(const struct gg_store *st)
{
	return st->dir;
}

int gg_random_uid(char out[13], struct gg_err *err)
{
	unsigned char b[6];
	if (RAND_bytes(b, sizeof b) != 1)
		return gg_err_set(err, GG_EFAIL, "no random numbers from OpenSSL");
	for (int i = 0; i < 6; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

int gg_store_open(const char *dir, struct gg_store **out, struct gg_err *err)
{
	char *d = NULL;
	if (dir) {
		d = strdup(dir);
	} else {
		char *state;
		int rc = gg_xdg_dir(GG_XDG_STATE, &state, err);
		if (rc < 0)
			return rc;
		d = gg_strdup_printf("%s/records", state);
		free(state);
	}
	if (!d)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_mkdir_p(d, 0700, err);
	struct stat sb;
	if (rc == 0 && stat(d, &sb) == 0 && (sb.st_mode & 022))
		rc = gg_err_set(
			err, GG_EIO,
			"record store '%s' is writable by others (mode %04o): run chmod 700 "
			"'%s'",
			d, (unsigned)(sb.st_mode & 07777), d);
	if (rc < 0) {
		free(d);
		return rc;
	}
	struct gg_store *st = calloc(1, sizeof *st);
	if (!st || !(st->lockpath = gg_strdup_printf("%s/.lock", d)) ||
	    !(st->cachepath = gg_strdup_printf("%s.cache", d))) {
		if (st)
			free(st->lockpath);
		free(st);
		free(d);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	st->dir = d;
	*out = st;
	return 0;
}

void gg_store_free(struct gg_store *st)
{
	if (!st)
		return;
	free(st->dir);
	free(st->lockpath);
	free(st->cachepath);
	free(st);
}

static int lock(struct gg_store *st, struct gg_err *err)
{
	int fd = open(st->lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "locking the record store '%s'", st->dir);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return gg_err_sys(err, GG_EIO, e, "locking the record store '%s'", st->dir);
		}
	}
	return fd;
}

static void unlock(int fd)
{
	close(fd); /* releases the flock */
}

static char *rec_path(const struct gg_store *st, const char *name)
{
	return gg_strdup_printf("%s/%s.json", st->dir, name);
}

/* A record's text as the store writes it. malloc'd; NULL when out of memory. */
static char *rec_text(const struct gg_record *r)
{
	json_t *j = gg_record_to_json(r);
	char *text = j ? json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	return text;
}

/* A record's new text on its way to the disk. */
struct pend {
	char *path, *tmp, *text;
	int fd, named, rc;
	struct gg_err *err; /* where the batch's first failure goes (may be NULL) */
	int *have;          /* that failure's code, 0 before one */
	size_t of;          /* the change it writes (gg_store_update_many) */
};

/* The first failure in err, one of a record that is not there only when all are. */
static void keep_first(struct gg_err *err, const struct gg_err *e, int *have)
{
	if (!e->code || (*have && (*have != GG_ENOTFOUND || e->code == GG_ENOTFOUND)))
		return;
	*have = e->code;
	if (err)
		*err = *e;
}

/* Files a batch keeps open at once (each is unnamed until synced). */
#define PEND_OPEN 64

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int pend_fail(struct pend *p, int errnum)
{
	struct gg_err e = {0};
	if (p->rc == 0) {
		p->rc = gg_err_sys(&e, GG_EIO, errnum, "writing '%s'", p->path);
		keep_first(p->err, &e, p->have);
	}
	return p->rc;
}

/* The new text in an unnamed file (O_TMPFILE) of the store's directory, so that
 * a SIGKILL leaves nothing behind; a named temp where the file system has none. */
static int pend_open(struct gg_store *st, struct pend *p)
{
	p->fd = gg_compat_tmpfile(st->dir, 0);
	if (p->fd < 0)
		p->named = (p->fd = gg_compat_mkstemp(p->tmp)) >= 0;
	if (p->fd < 0)
		return pend_fail(p, errno);
	st->io.writes++;
	if (fchmod(p->fd, 0600) < 0 || write_all(p->fd, p->text, strlen(p->text)) < 0)
		return pend_fail(p, errno);
	return 0;
}

/* The new file in the old one's place: a rename, atomic. */
static void pend_name(struct pend *p)
{
	struct gg_err e = {0};
	if (p->rc == 0 && !p->named) {
		p->named = (p->rc = gg_file_name_unnamed(p->fd, p->tmp, p->path, &e)) == 0;
		keep_first(p->err, &e, p->have);
	}
	if (p->fd >= 0 && close(p->fd) < 0)
		pend_fail(p, errno);
	p->fd = -1;
	if (p->rc == 0 && rename(p->tmp, p->path) < 0)
		pend_fail(p, errno);
	if (p->rc < 0 && p->named)
		unlink(p->tmp);
}

/* The files of p[0..n) on the disk before any is named: one fsync for a lone
 * file, else one syncfs for all of them (what an fsync each would cost the
 * disk n times). */
static void pend_sync(struct gg_store *st, struct pend *p, size_t n, int lone)
{
	size_t i = 0;
	while (i < n && p[i].rc < 0)
		i++;
	if (i == n)
		return;
	st->io.syncs++;
	if ((lone ? fsync(p[i].fd) : gg_compat_syncfs(p[i].fd)) == 0)
		return;
	int e = errno;
	if (!lone && e == EOPNOTSUPP) { /* no syncfs (compat.h): an fsync each */
		for (; i < n; i++)
			if (p[i].rc == 0 && fsync(p[i].fd) < 0)
				pend_fail(&p[i], errno);
		return;
	}
	for (; i < n; i++)
		pend_fail(&p[i], e);
}

/* Under the lock: write the n texts, PEND_OPEN files at a time, then sync the
 * directory once for all the renames. Each p[i].rc says how its record fared. */
static void pend_write(struct gg_store *st, struct pend *p, size_t n)
{
	size_t named = 0;
	for (size_t at = 0; at < n; at += PEND_OPEN) {
		size_t k = n - at < PEND_OPEN ? n - at : PEND_OPEN;
		for (size_t i = at; i < at + k; i++)
			if (p[i].rc == 0)
				pend_open(st, &p[i]);
		pend_sync(st, p + at, k, n == 1);
		for (size_t i = at; i < at + k; i++) {
			pend_name(&p[i]);
			named += p[i].rc == 0;
		}
	}
	if (!named)
		return;
	int fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) { /* best effort: the renames are done */
		st->io.syncs++;
		fsync(fd);
		close(fd);
	}
}

/* p made ready for a record's text (which it takes); rc < 0, and the failure
 * noted in err, when out of memory. */
static int pend_init(struct gg_store *st, struct pend *p, const char *name, char *text,
		     struct gg_err *err, int *have)
{
	memset(p, 0, sizeof *p);
	p->fd = -1;
	p->err = err;
	p->have = have;
	p->text = text;
	p->path = rec_path(st, name);
	p->tmp = p->path ? gg_strdup_printf("%s.tmp.XXXXXX", p->path) : NULL;
	if (!text || !p->tmp) {
		struct gg_err e = {0};
		p->rc = gg_err_set(&e, GG_ENOMEM, "out of memory");
		keep_first(err, &e, have);
	}
	return p->rc;
}

static void pend_clear(struct pend *p)
{
	free(p->path);
	free(p->tmp);
	free(p->text);
}

static int write_rec(struct gg_store *st, const struct gg_record *r, struct gg_err *err)
{
	struct pend p;
	int have = 0;
	if (pend_init(st, &p, r->name, rec_text(r), err, &have) == 0)
		pend_write(st, &p, 1);
	pend_clear(&p);
	return p.rc;
}

/* The record named name into *r; its text as read in *textp when not NULL. */
static int read_rec_text(struct gg_store *st, const char *name, struct gg_record *r, char **textp,
			 struct gg_err *err)
{
	char *path = rec_path(st, name), *text = NULL;
	size_t len;
	if (!path)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_file_read(path, 1 << 20, &text, &len, err);
	if (rc == GG_ENOTFOUND)
		gg_err_set(err, GG_ENOTFOUND, "no session or job named '%s'", name);
	if (rc == 0) {
		json_error_t je;
		json_t *j = json_loadb(text, len, 0, &je);
		if (!j)
			rc = gg_err_set(err, GG_EIO, "record '%s' is corrupt: %s", path, je.text);
		else if ((rc = gg_record_from_json(j, r, err)) < 0)
			gg_err_prefix(err, "record '%s' is corrupt", path);
		else if (strcmp(r->name, name) != 0) {
			gg_record_clear(r);
			rc = gg_err_set(err, GG_EIO, "record '%s' names another session", path);
		}
		json_decref(j);
		if (rc < 0 && err)
			err->code = rc = GG_EIO;
	}
	if (rc == 0 && textp)
		*textp = text;
	else
		free(text);
	free(path);
	return rc;
}

static int read_rec(struct gg_store *st, const char *name, struct gg_record *r, struct gg_err *err)
{
	return read_rec_text(st, name, r, NULL, err);
}

static int name_taken(struct gg_store *st, const char *name)
{
	char *p = rec_path(st, name);
	int taken = p && access(p, F_OK) == 0;
	free(p);
	return taken;
}

/* The name is taken: what frees it depends on whether its owner has ended (a record
 * that cannot be read is for clean to forget). */
static int name_in_use(struct gg_store *st, const char *name, struct gg_err *err)
{
	struct gg_record old;
	int got = read_rec(st, name, &old, NULL) == 0;
	int live = got && !gg_sess_state_ended(old.state);
	const char *kind = got && old.kind == GG_REC_JOB ? "job" : "session";
	const char *state = got ? gg_sess_state_name(old.state) : NULL;
	if (got)
		gg_record_clear(&old);
	if (live)
		return gg_err_set(err, GG_EUSAGE,
				  "a %s named '%s' is %s: pick another --name, or end it "
				  "('gridgpu kill %s') and forget it ('gridgpu clean %s') first",
				  kind, name, state, name, name);
	return gg_err_set(err, GG_EUSAGE,
			  "a session or job named '%s' exists already: pick another --name, "
			  "or 'gridgpu clean %s' first",
			  name, name);
}

int gg_store_create(struct gg_store *st, struct gg_record *r, const char *prefix,
		    struct gg_err *err)
{
	int fd = lock(st, err);
	if (fd < 0)
		return fd;
	int rc = 0;
	if (!r->name) {
		char *name = NULL;
		for (int n = 1; n < 100000; n++) {
			free(name);
			name = gg_strdup_printf("%s-%d", prefix, n);
			if (!name || !name_taken(st, name))
				break;
		}
		if (!name) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			goto out;
		}
		r->name = name;
	} else if (name_taken(st, r->name)) {
		rc = name_in_use(st, r->name, err);
		goto out;
	}
	if (!gg_record_name_valid(r->name)) {
		rc = gg_err_set(err, GG_EUSAGE,
				"invalid name '%s': use a letter, then letters, "
				"digits, '.', '_' or '-'",
				r->name);
		goto out;
	}
	r->version = 1;
	r->created = r->updated = (int64_t)time(NULL);
	rc = write_rec(st, r, err);
out:
	unlock(fd);
	return rc;
}

int gg_store_load(struct gg_store *st, const char *name, struct gg_record *r, struct gg_err *err)
{
	if (!gg_record_name_valid(name))
		return gg_err_set(err, GG_ENOTFOUND, "no session or job named '%s'", name);
	return read_rec(st, name, r, err);
}

/* url's host, lower-case (malloc'd), or NULL: libcurl's URL parser. */
static char *url_host(const char *url)
{
	CURLU *u = curl_url();
	char *h = NULL, *out = NULL;
	if (u && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK && (out = strdup(h)))
		for (char *c = out; *c; c++)
			*c = (char)tolower((unsigned char)*c);
	curl_free(h);
	curl_url_cleanup(u);
	return out;
}

/* s names r's job: the CE's job id, or a job URL as arcstat and arcsub print it
 * (https://ce/arex/rest/1.0/jobs/ID, gsiftp://ce:2811/jobs/ID) on the host of
 * r's CE, ending in the id. */
static int names_job(const struct gg_record *r, const char *s)
{
	if (!r->job_id || !*r->job_id)
		return 0;
	if (!strstr(s, "://"))
		return strcmp(s, r->job_id) == 0;
	size_t n = strlen(s), k = strlen(r->job_id);
	while (n && s[n - 1] == '/')
		n--;
	if (!r->ce || n <= k || strncmp(s + n - k, r->job_id, k) != 0 || s[n - k - 1] != '/')
		return 0;
	char *a = url_host(s), *b = url_host(r->ce);
	int same = a && b && strcmp(a, b) == 0;
	free(a);
	free(b);
	return same;
}

int gg_store_find(struct gg_store *st, const char *what, struct gg_record *r, struct gg_err *err)
{
	int rc = gg_store_load(st, what, r, err);
	struct gg_record *recs = NULL;
	size_t n = 0, hit = 0, hits = 0;
	if (rc != GG_ENOTFOUND || gg_store_list(st, &recs, &n, NULL, NULL) < 0)
		return rc;
	char names[256] = "";
	for (size_t i = 0; i < n; i++) {
		if (!names_job(&recs[i], what))
			continue;
		if (!hits++)
			hit = i;
		size_t o = strlen(names);
		snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", recs[i].name);
	}
	if (hits == 1) {
		*r = recs[hit];
		memset(&recs[hit], 0, sizeof recs[hit]);
		rc = 0;
	} else if (hits > 1) {
		rc = gg_err_set(err, GG_EUSAGE, "'%s' is the CE job of %s: name one", what, names);
	}
	gg_records_free(recs, n);
	return rc;
}

/* Under the lock. */
static int drop_rec(struct gg_store *st, const char *name, struct gg_err *err)
{
	char *p = rec_path(st, name);
	if (!p)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = 0;
	if (unlink(p) < 0)
		rc = gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_EIO, errno,
				"removing record '%s'", p);
	free(p);
	return rc;
}

/* Under the lock: c's record read and given to fn. Its new text in *text when
 * fn changed it (the time of the change in updated), NULL when fn cancelled,
 * dropped (*drop set) or left it as it was. */
static int change_one(struct gg_store *st, struct gg_store_change *c, gg_record_update_fn fn,
		      char **text, int *drop, struct gg_err *err)
{
	char *old = NULL;
	*text = NULL;
	*drop = 0;
	if (!gg_record_name_valid(c->name))
		return gg_err_set(err, GG_ENOTFOUND, "no session or job named '%s'", c->name);
	int rc = read_rec_text(st, c->name, &c->out, &old, err);
	if (rc < 0)
		return rc;
	int64_t was = c->out.updated;
	int what = fn(&c->out, c->ud);
	*drop = what == GG_STORE_DROP;
	if (what == 0) {
		c->out.updated = was; /* compared without it: the rest is the change */
		*text = rec_text(&c->out);
		if (*text && strcmp(*text, old) != 0) {
			free(*text);
			c->out.updated = (int64_t)time(NULL);
			*text = rec_text(&c->out);
		} else if (*text) {
			free(*text);
			*text = NULL;
			what = 1;
		}
		if (what == 0 && !*text)
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	free(old);
	return rc;
}

/* Under the lock: every change made, the records that changed written
 * together. The first failure in err; its code returned. */
static int change_all(struct gg_store *st, struct gg_store_change *ch, size_t n,
		      gg_record_update_fn fn, struct pend *p, struct gg_err *err)
{
	size_t np = 0;
	int have = 0;
	for (size_t i = 0; i < n; i++) {
		char *text = NULL;
		int drop = 0;
		struct gg_err e = {0};
		struct gg_store_change *c = &ch[i];
		memset(&c->out, 0, sizeof c->out);
		if ((c->rc = change_one(st, c, fn, &text, &drop, &e)) == 0 && drop)
			c->rc = drop_rec(st, c->name, &e);
		keep_first(err, &e, &have);
		if (!text)
			continue;
		if ((c->rc = pend_init(st, &p[np], c->name, text, err, &have)) < 0)
			pend_clear(&p[np]);
		else
			p[np++].of = i;
	}
	pend_write(st, p, np);
	for (size_t k = 0; k < np; k++) {
		ch[p[k].of].rc = p[k].rc;
		pend_clear(&p[k]);
	}
	return have;
}

int gg_store_update_many(struct gg_store *st, struct gg_store_change *ch, size_t n,
			 gg_record_update_fn fn, struct gg_err *err)
{
	struct pend *p = calloc(n ? n : 1, sizeof *p);
	int fd = p ? lock(st, err) : gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = fd;
	if (fd >= 0) {
		rc = change_all(st, ch, n, fn, p, err);
		unlock(fd);
		for (size_t i = 0; i < n; i++)
			if (ch[i].rc < 0)
				gg_record_clear(&ch[i].out);
	}
	free(p);
	return rc;
}

int gg_store_update(struct gg_store *st, const char *name, gg_record_update_fn fn, void *ud,
		    struct gg_record *out, struct gg_err *err)
{
	struct gg_store_change c = {.name = name, .ud = ud};
	int rc = gg_store_update_many(st, &c, 1, fn, err);
	if (rc == 0 && out)
		*out = c.out;
	else
		gg_record_clear(&c.out);
	return rc;
}

int gg_store_save(struct gg_store *st, const struct gg_record *r, struct gg_err *err)
{
	int fd = lock(st, err);
	if (fd < 0)
		return fd;
	int rc = write_rec(st, r, err);
	unlock(fd);
	return rc;
}

int gg_store_remove(struct gg_store *st, const char *name, struct gg_err *err)
{
	int fd = lock(st, err);
	if (fd < 0)
		return fd;
	int rc = drop_rec(st, name, err);
	unlock(fd);
	return rc;
}

void gg_records_free(struct gg_record *recs, size_t n)
{
	if (!recs)
		return;
	for (size_t i = 0; i < n; i++)
		gg_record_clear(&recs[i]);
	free(recs);
}

static int by_created(const void *a, const void *b)
{
	const struct gg_record *x = a, *y = b;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The directory's modification time in nanoseconds: every create, update
 * (an atomic rename) and remove changes it. *still is 1 when it was a second
 * old at this stat: a change after it is then sure to change it again (the
 * file system's clock ticks far more often), so a scan begun now may be
 * kept under this time. */
static int dir_mtime(const char *dir, int64_t *ns, int *still)
{
	struct stat sb;
	struct timespec now;
	if (stat(dir, &sb) < 0 || clock_gettime(CLOCK_REALTIME, &now) < 0)
		return -1;
	*ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	*still = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - *ns >= 1000000000;
	return 0;
}

void gg_record_rows_free(struct gg_record_row *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		free(rows[i].name);
		free(rows[i].site);
		free(rows[i].mig);
		free(rows[i].json);
	}
	free(rows);
}

static int row_from_record(const struct gg_record *r, struct gg_record_row *w)
{
	memset(w, 0, sizeof *w);
	json_t *j = gg_record_to_json(r);
	w->json = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	w->name = strdup(r->name);
	w->site = strdup(r->site ? r->site : "-");
	w->mig = strdup(r->mig ? r->mig : "-");
	w->kind = r->kind;
	w->state = r->state;
	w->gpus = r->gpus;
	w->created = r->created;
	w->started = r->started;
	w->walltime = r->walltime;
	w->deadline_at = r->deadline_at;
	w->last_activity = r->last_activity;
	w->first_login = r->first_login;
	return w->json && w->name && w->site && w->mig ? 0 : -1;
}

/* The cache, one line per record: the table's fields, tab-separated, then the
 * record as compact JSON (names and sites cannot hold tabs or newlines; JSON
 * escapes them). The first line names the directory state it was made from. */
#define CACHE_MAGIC "gridgpu-records-cache 2"

static int read_cache(struct gg_store *st, int64_t mtime, struct gg_record_row **rows, size_t *n,
		      size_t *bad)
{
	char *text = NULL;
	size_t len;
	if (gg_file_read(st->cachepath, 1u << 30, &text, &len, NULL) < 0)
		return -1;
	long long m = 0, b = 0;
	char *p = text;
	if (sscanf(p, CACHE_MAGIC " %lld %lld", &m, &b) != 2 || m != mtime) {
		free(text);
		return -1;
	}
	size_t cap = 64, cnt = 0;
	struct gg_record_row *a = calloc(cap, sizeof *a);
	p = strchr(p, '\n');
	while (a && p && *++p) {
		char *eol = strchr(p, '\n');
		if (!eol) /* a truncated cache */
			goto bad;
		*eol = '\0';
		char *f[13];
		int nf = 0;
		for (char *q = p; nf < 13; nf++) {
			f[nf] = q;
			char *tab = nf < 12 ? strchr(q, '\t') : NULL;
			if (!tab) {
				nf++;
				break;
			}
			*tab = '\0';
			q = tab + 1;
		}
		if (nf != 13)
			goto bad;
		if (cnt == cap) {
			struct gg_record_row *na = realloc(a, 2 * cap * sizeof *na);
			if (!na)
				goto bad;
			a = na;
			cap *= 2;
		}
		struct gg_record_row *w = &a[cnt];
		memset(w, 0, sizeof *w);
		enum gg_sess_state state;
		if (gg_sess_state_parse(f[3], &state) < 0)
			goto bad;
		w->name = strdup(f[0]);
		w->site = strdup(f[1]);
		w->kind = strcmp(f[2], "job") == 0 ? GG_REC_JOB : GG_REC_SESSION;
		w->state = state;
		w->gpus = atoi(f[4]);
		w->mig = strdup(f[5]);
		w->created = strtoll(f[6], NULL, 10);
		w->started = strtoll(f[7], NULL, 10);
		w->walltime = strtoll(f[8], NULL, 10);
		w->deadline_at = strtoll(f[9], NULL, 10);
		w->last_activity = strtoll(f[10], NULL, 10);
		w->first_login = strtoll(f[11], NULL, 10);
		w->json = strdup(f[12]);
		cnt++;
		if (!w->name || !w->site || !w->mig || !w->json)
			goto bad;
		p = eol;
	}
	if (!a)
		goto bad;
	free(text);
	*rows = a;
	*n = cnt;
	if (bad)
		*bad = (size_t)b;
	return 0;
bad:
	gg_record_rows_free(a, cnt);
	free(text);
	return -1;
}

static void write_cache(struct gg_store *st, int64_t mtime, const struct gg_record_row *rows,
			size_t n, size_t bad)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return;
	fprintf(f, CACHE_MAGIC " %lld %zu\n", (long long)mtime, bad);
	for (size_t i = 0; i < n; i++) {
		const struct gg_record_row *w = &rows[i];
		fprintf(f, "%s\t%s\t%s\t%s\t%d\t%s\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%s\n",
			w->name, w->site, w->kind == GG_REC_JOB ? "job" : "session",
			gg_sess_state_name(w->state), w->gpus, w->mig, (long long)w->created,
			(long long)w->started, (long long)w->walltime, (long long)w->deadline_at,
			(long long)w->last_activity, (long long)w->first_login, w->json);
	}
	if (fclose(f) == 0)
		gg_file_write_atomic(st->cachepath, buf, len, 0600, NULL);
	free(buf);
}

/* The rows of n records; NULL when out of memory. */
static struct gg_record_row *rows_of(const struct gg_record *recs, size_t n)
{
	struct gg_record_row *w = calloc(n ? n : 1, sizeof *w);
	for (size_t i = 0; w && i < n; i++) {
		if (row_from_record(&recs[i], &w[i]) < 0) {
			gg_record_rows_free(w, i + 1);
			w = NULL;
		}
	}
	return w;
}

/* The records as the cache has them (each parsed from its JSON); -1 when the
 * cache is not of this state of the directory or one of them is unreadable. */
static int list_cached(struct gg_store *st, int64_t mtime, struct gg_record **recs, size_t *n,
		       size_t *bad)
{
	struct gg_record_row *rows = NULL;
	size_t nr = 0, cnt = 0;
	if (read_cache(st, mtime, &rows, &nr, bad) < 0)
		return -1;
	struct gg_record *a = calloc(nr ? nr : 1, sizeof *a);
	int ok = a != NULL;
	for (size_t i = 0; ok && i < nr; i++) {
		json_t *j = json_loads(rows[i].json, 0, NULL);
		ok = j && gg_record_from_json(j, &a[cnt], NULL) == 0;
		cnt += ok;
		json_decref(j);
	}
	gg_record_rows_free(rows, nr);
	if (!ok) {
		gg_records_free(a, cnt);
		return -1;
	}
	*recs = a;
	*n = cnt;
	return 0;
}

/* Every record file read (the unreadable ones counted in *bad), sorted. */
static int scan(struct gg_store *st, struct gg_record **recs, size_t *n, size_t *bad,
		struct gg_err *err)
{
	DIR *d = opendir(st->dir);
	if (!d)
		return gg_err_sys(err, GG_EIO, errno, "reading the record store '%s'", st->dir);
	size_t cap = 0, cnt = 0, nbad = 0;
	struct gg_record *arr = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(l - 5), de->d_name);
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			struct gg_record *na = realloc(arr, cap * sizeof *na);
			if (!na) {
				closedir(d);
				gg_records_free(arr, cnt);
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			}
			arr = na;
		}
		struct gg_err e2 = {0};
		if (read_rec(st, name, &arr[cnt], &e2) == 0)
			cnt++;
		else
			nbad++;
	}
	closedir(d);
	if (cnt)
		qsort(arr, cnt, sizeof *arr, by_created);
	*bad = nbad;
	*recs = arr;
	*n = cnt;
	return 0;
}

int gg_store_rows(struct gg_store *st, struct gg_record_row **rows, size_t *n, size_t *bad,
		  struct gg_err *err)
{
	*rows = NULL;
	*n = 0;
	int64_t mtime = 0;
	int still = 0, have_mtime = dir_mtime(st->dir, &mtime, &still) == 0;
	if (have_mtime && read_cache(st, mtime, rows, n, bad) == 0)
		return 0;
	struct gg_record *recs = NULL;
	size_t nr = 0, nbad = 0;
	int rc = scan(st, &recs, &nr, &nbad, err);
	if (rc < 0)
		return rc;
	struct gg_record_row *w = rows_of(recs, nr);
	gg_records_free(recs, nr);
	if (!w)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (have_mtime && still)
		write_cache(st, mtime, w, nr, nbad);
	if (bad)
		*bad = nbad;
	*rows = w;
	*n = nr;
	return 0;
}

int gg_store_list(struct gg_store *st, struct gg_record **recs, size_t *n, size_t *bad,
		  struct gg_err *err)
{
	*recs = NULL;
	*n = 0;
	size_t nbad = 0;
	int64_t mtime = 0;
	int still = 0, have_mtime = dir_mtime(st->dir, &mtime, &still) == 0;
	if (!(have_mtime && list_cached(st, mtime, recs, n, &nbad) == 0)) {
		int rc = scan(st, recs, n, &nbad, err);
		if (rc < 0)
			return rc;
		struct gg_record_row *w = have_mtime && still ? rows_of(*recs, *n) : NULL;
		if (w)
			write_cache(st, mtime, w, *n, nbad);
		gg_record_rows_free(w, *n);
	}
	if (bad)
		*bad = nbad;
	return 0;
}
