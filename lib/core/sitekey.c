/* The keys of a site profile as data: one table made from GG_SITE_KEYS
 * (gridgpu/core.h), through which the INI reader and writer, copying and
 * clearing, site add and site set (lib/engine/site.c) reach struct gg_site. */
#include "core/core.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct row {
	struct gg_site_key pub; /* first: a row's address is its key's */
	size_t off;             /* the member: char *, int64_t or char *[max] */
	size_t count_off;       /* a list's count (int) */
	int max;                /* a list's room */
	const char *noun;       /* a list's values, for "more than 8 jump hosts" */
};

#define ROW_S(kind, field, option, shortopt, argname, dflt, flags, check, help) \
	{{#field, #field, option, shortopt, kind, argname, help, dflt, flags},  \
	 offsetof(struct gg_site, field),                                       \
	 0,                                                                     \
	 0,                                                                     \
	 NULL},
#define ROW_L(kind, field, count, max, noun, key, option, shortopt, argname, check, help) \
	{{key, #field, option, shortopt, kind, argname, help, NULL, 0},                   \
	 offsetof(struct gg_site, field),                                                 \
	 offsetof(struct gg_site, count),                                                 \
	 max,                                                                             \
	 noun},
#define ROW_D(field, option, dflt, help)                                    \
	{{#field, #field, option, 0, GG_SK_DURATION, "DUR", help, dflt, 0}, \
	 offsetof(struct gg_site, field),                                   \
	 0,                                                                 \
	 0,                                                                 \
	 NULL},

static const struct row rows[] = {GG_SITE_KEYS(ROW_S, ROW_L, ROW_D)};
#define NROWS (sizeof rows / sizeof rows[0])
_Static_assert(NROWS == GG_SITE_NKEYS, "GG_SITE_NKEYS counts the rows");

size_t gg_site_key_count(void)
{
	return NROWS;
}

const struct gg_site_key *gg_site_key_at(size_t i)
{
	return i < NROWS ? &rows[i].pub : NULL;
}

size_t gg_site_key_index(const struct gg_site_key *k)
{
	return (size_t)((const struct row *)k - rows);
}

const struct gg_site_key *gg_site_key_find(const char *name)
{
	if (!name)
		return NULL;
	const char *opt = strncmp(name, "--", 2) == 0 ? name + 2 : name;
	for (size_t i = 0; i < NROWS; i++)
		if (!strcmp(rows[i].pub.key, name) || !strcmp(rows[i].pub.option, opt))
			return &rows[i].pub;
	return NULL;
}

static int is_list(const struct gg_site_key *k)
{
	return k->kind == GG_SK_LIST || k->kind == GG_SK_ADDRS;
}

/* The member of k in s, and a list's count. */
static void *member(const struct gg_site *s, const struct gg_site_key *k, int **count)
{
	const struct row *r = (const struct row *)k;
	if (count)
		*count = is_list(k) ? (int *)((char *)s + r->count_off) : NULL;
	return (char *)s + r->off;
}

const char *gg_site_get_text(const struct gg_site *s, const struct gg_site_key *k)
{
	return is_list(k) || k->kind == GG_SK_DURATION ? NULL : *(char **)member(s, k, NULL);
}

char *const *gg_site_get_list(const struct gg_site *s, const struct gg_site_key *k, int *n)
{
	int *count;
	char **v = member(s, k, &count);
	*n = count ? *count : 0;
	return count ? v : NULL;
}

int64_t gg_site_get_duration(const struct gg_site *s, const struct gg_site_key *k)
{
	return k->kind == GG_SK_DURATION ? *(int64_t *)member(s, k, NULL) : 0;
}

char *gg_site_value_text(const struct gg_site *s, const struct gg_site_key *k, int *oom)
{
	char d[32], *out = NULL;
	size_t len = 0;
	int n, none;
	char *const *v = gg_site_get_list(s, k, &n);
	oom = oom ? oom : &none;
	*oom = 0;
	if (k->kind == GG_SK_DURATION && gg_site_get_duration(s, k))
		out = strdup(gg_duration_format_exact(gg_site_get_duration(s, k), d, sizeof d));
	else if (gg_site_get_text(s, k))
		out = strdup(gg_site_get_text(s, k));
	else if (v && n) {
		FILE *f = open_memstream(&out, &len);
		for (int i = 0; f && i < n; i++)
			fprintf(f, "%s%s", i ? ", " : "", v[i]);
		if (!f || fclose(f) != 0) {
			free(out);
			out = NULL;
		}
	} else
		return NULL;
	*oom = out == NULL;
	return out;
}

void gg_site_unset(struct gg_site *s, const struct gg_site_key *k)
{
	int *count;
	void *m = member(s, k, &count);
	if (k->kind == GG_SK_DURATION) {
		*(int64_t *)m = 0;
	} else if (count) {
		for (int i = 0; i < *count; i++)
			free(((char **)m)[i]);
		*count = 0;
	} else {
		free(*(char **)m);
		*(char **)m = NULL;
	}
}

void gg_site_move_key(struct gg_site *dst, struct gg_site *src, const struct gg_site_key *k)
{
	const struct row *r = (const struct row *)k;
	size_t size = k->kind == GG_SK_DURATION ? sizeof(int64_t)
		      : is_list(k)              ? (size_t)r->max * sizeof(char *)
						: sizeof(char *);
	int *dcount, *scount;
	void *d = member(dst, k, &dcount), *s = member(src, k, &scount);
	gg_site_unset(dst, k);
	memcpy(d, s, size);
	memset(s, 0, size);
	if (dcount) {
		*dcount = *scount;
		*scount = 0;
	}
}

/* Append a copy of v to list k of s. */
static int list_add(struct gg_site *s, const struct gg_site_key *k, const char *v,
		    struct gg_err *err)
{
	const struct row *r = (const struct row *)k;
	int *count;
	char **list = member(s, k, &count);
	if (*count == r->max)
		return gg_err_set(err, GG_EUSAGE, "more than %d %s", r->max, r->noun);
	if (!(list[*count] = strdup(v)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	(*count)++;
	return 0;
}

int gg_site_store(struct gg_site *s, const struct gg_site_key *k, const char *text,
		  struct gg_err *err)
{
	void *m = member(s, k, NULL);
	int64_t secs;
	switch (k->kind) {
	case GG_SK_DURATION:
		if (gg_duration_parse_unit(text, &secs, err) < 0)
			return GG_EUSAGE;
		*(int64_t *)m = secs;
		return 0;
	case GG_SK_ADDRS: return gg_site_allow_add(s, text, err);
	case GG_SK_LIST: return list_add(s, k, text, err);
	default: break;
	}
	char *v = strdup(text);
	if (!v)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	free(*(char **)m);
	*(char **)m = v;
	return 0;
}

void gg_site_clear(struct gg_site *s)
{
	if (!s)
		return;
	free(s->name);
	for (size_t i = 0; i < NROWS; i++)
		gg_site_unset(s, &rows[i].pub);
	memset(s, 0, sizeof *s);
}

int gg_site_copy(struct gg_site *dst, const struct gg_site *src, struct gg_err *err)
{
	memset(dst, 0, sizeof *dst);
	if (src->name && !(dst->name = strdup(src->name)))
		goto oom;
	for (size_t i = 0; i < NROWS; i++) {
		const struct gg_site_key *k = &rows[i].pub;
		int n;
		char *const *v = gg_site_get_list(src, k, &n);
		const char *t = gg_site_get_text(src, k);
		if (k->kind == GG_SK_DURATION)
			*(int64_t *)member(dst, k, NULL) = gg_site_get_duration(src, k);
		else if (t && !(*(char **)member(dst, k, NULL) = strdup(t)))
			goto oom;
		for (int j = 0; v && j < n; j++)
			if (list_add(dst, k, v[j], err) < 0)
				goto oom;
	}
	return 0;
oom:
	gg_site_clear(dst);
	return gg_err_set(err, GG_ENOMEM, "out of memory");
}
