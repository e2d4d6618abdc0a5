/* Text into JSON documents without losing it (core/json.h). */
#define GG_JSON_RAW
#include "core/core.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local size_t losses;

int gg_json_text_exact(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;
	json_decref(j);
	return j != NULL;
}

json_t *gg_json_text(const char *s)
{
	return s ? gg_json_textn(s, strlen(s)) : json_null();
}

json_t *gg_json_textn(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);
	if (j)
		return j;
	char *p = gg_str_printable(s, len);
	j = p ? json_string(p) : NULL;
	free(p);
	return j;
}

static int lost(void)
{
	losses++;
	return GG_ENOMEM;
}

int gg_json_set(json_t *o, const char *key, json_t *v)
{
	/* jansson steals v even when it refuses it */
	return v && json_object_set_new(o, key, v) == 0 ? 0 : lost();
}

int gg_json_append(json_t *a, json_t *v)
{
	return v && json_array_append_new(a, v) == 0 ? 0 : lost();
}

int gg_json_set_text(json_t *o, const char *key, const char *s)
{
	return s ? gg_json_set(o, key, gg_json_text(s)) : 0;
}

json_t *gg_json_object(const char *key, ...)
{
	json_t *o = json_object();
	va_list ap;
	va_start(ap, key);
	for (const char *k = key; k; k = va_arg(ap, const char *))
		gg_json_set(o, k, va_arg(ap, json_t *));
	va_end(ap);
	return o;
}

size_t gg_json_losses(void)
{
	return losses;
}
