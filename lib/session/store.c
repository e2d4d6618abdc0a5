/* The record store: <dir>/<name>.json, 0600 in a 0700 directory, each written
 * atomically (temp, fsync, rename); read-modify-write under flock(<dir>/.lock)
 * so concurrent gridgpu processes never lose an update. */
#include "session/session.h"

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
};

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
		rc = gg_err_set(err, GG_EIO,
				"record store '%s' is writable by others (mode %04o): run chmod 700 "
				"'%s'",
				d, (unsigned)(sb.st_mode & 07777), d);
	if (rc < 0) {
		free(d);
		return rc;
	}
	struct gg_store *st = calloc(1, sizeof *st);
	if (!st || !(st->lockpath = gg_strdup_printf("%s/.lock", d))) {
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

static int write_rec(struct gg_store *st, const struct gg_record *r, struct gg_err *err)
{
	json_t *j = gg_record_to_json(r);
	char *text = j ? json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	char *path = rec_path(st, r->name);
	int rc;
	if (!text || !path)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	else
		rc = gg_file_write_atomic(path, text, strlen(text), 0600, err);
	free(text);
	free(path);
	return rc;
}

static int read_rec(struct gg_store *st, const char *name, struct gg_record *r, struct gg_err *err)
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
	free(text);
	free(path);
	return rc;
}

static int name_taken(struct gg_store *st, const char *name)
{
	char *p = rec_path(st, name);
	int taken = p && access(p, F_OK) == 0;
	free(p);
	return taken;
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
		rc = gg_err_set(err, GG_EUSAGE,
				"a session or job named '%s' exists already: pick another --name, "
				"or 'gridgpu clean %s' first",
				r->name, r->name);
		goto out;
	}
	if (!gg_record_name_valid(r->name)) {
		rc = gg_err_set(err, GG_EUSAGE, "invalid name '%s': use a letter, then letters, "
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

int gg_store_update(struct gg_store *st, const char *name, gg_record_update_fn fn, void *ud,
		    struct gg_record *out, struct gg_err *err)
{
	if (!gg_record_name_valid(name))
		return gg_err_set(err, GG_ENOTFOUND, "no session or job named '%s'", name);
	int fd = lock(st, err);
	if (fd < 0)
		return fd;
	struct gg_record r;
	int rc = read_rec(st, name, &r, err);
	if (rc == 0) {
		if (fn(&r, ud) == 0) {
			r.updated = (int64_t)time(NULL);
			rc = write_rec(st, &r, err);
		}
		if (out && rc == 0)
			*out = r;
		else
			gg_record_clear(&r);
	}
	unlock(fd);
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
	char *p = rec_path(st, name);
	if (!p)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int fd = lock(st, err);
	int rc = fd < 0 ? fd : 0;
	if (rc == 0 && unlink(p) < 0)
		rc = gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_EIO, errno,
				"removing record '%s'", p);
	if (fd >= 0)
		unlock(fd);
	free(p);
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

int gg_store_list(struct gg_store *st, struct gg_record **recs, size_t *n, size_t *bad,
		  struct gg_err *err)
{
	*recs = NULL;
	*n = 0;
	if (bad)
		*bad = 0;
	DIR *d = opendir(st->dir);
	if (!d)
		return gg_err_sys(err, GG_EIO, errno, "reading the record store '%s'", st->dir);
	size_t cap = 0, cnt = 0;
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
		else if (bad)
			(*bad)++;
	}
	closedir(d);
	if (cnt)
		qsort(arr, cnt, sizeof *arr, by_created);
	*recs = arr;
	*n = cnt;
	return 0;
}
