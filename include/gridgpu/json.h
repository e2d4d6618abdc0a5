/* gridgpu/json.h (lib/core/json.c): one way to put text in a JSON document and
 * members that cannot be dropped silently. Text from outside (a path, a URL,
 * what a CE or a node says) may not be valid UTF-8: jansson's json_string()
 * and json_pack("s") return NULL for it, and json_object_set_new() /
 * json_array_append_new() then skip the member without a word. These helpers
 * keep such text, escaped (as gg_str_printable does), and count any member
 * lost, so every front end's --json output escapes outside text the same way.
 *
 * A program that wants the compiler to refuse jansson's silent constructors
 * (lib/ and cli/ do) defines GG_JSON_POISON before it includes this header; a
 * file that must build raw JSON (a test forging a hostile record) defines
 * GG_JSON_RAW as well. */
#ifndef GRIDGPU_JSON_H
#define GRIDGPU_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "gridgpu/api.h"

/* A JSON string of text that may not be valid UTF-8 (a path, a URL, a command,
 * what a CE or a node says): kept as it is when it is valid UTF-8, else escaped
 * as gg_str_printable does ("\xff", "\x1b", "\n", "\\"), so it is never
 * dropped; control characters of valid text are kept (jansson writes them as
 * \u001b). json null for NULL. NULL only when out of memory. */
GG_API json_t *gg_json_text(const char *s);
/* gg_json_text of the len bytes at s (a NUL among them is kept: \u0000 when
 * the rest is valid UTF-8, else \x00). */
GG_API json_t *gg_json_textn(const char *s, size_t len);
/* 1 when gg_json_text keeps s as it is (valid UTF-8), 0 when it escapes it. */
GG_API int gg_json_text_exact(const char *s);
/* json_object_set_new and json_array_append_new that never lose a member
 * silently: v is stolen; when it is NULL (out of memory) or cannot be set, the
 * loss is counted (gg_json_losses) and GG_ENOMEM returned. */
GG_API int gg_json_set(json_t *o, const char *key, json_t *v);
GG_API int gg_json_append(json_t *a, json_t *v);
/* An object of the pairs key, value (json_t *, stolen) up to a NULL key, each
 * set by gg_json_set: json_pack("{s:o,...}") without its silent NULL. */
GG_API json_t *gg_json_object(const char *key, ...);
/* gg_json_set(o, key, gg_json_text(s)) when s is not NULL; nothing for NULL. */
GG_API int gg_json_set_text(json_t *o, const char *key, const char *s);
/* The number of members gg_json_set and gg_json_append lost in this thread so
 * far. A writer compares it before and after building a document and refuses
 * to use one that lost a member (a record is not written, a --json document
 * becomes an error). */
GG_API size_t gg_json_losses(void);

#endif

/* Outside the include guard: it applies whichever header first brought this one in. */
#if defined(GG_JSON_POISON) && !defined(GG_JSON_RAW) && !defined(GRIDGPU_JSON_POISONED)
#define GRIDGPU_JSON_POISONED
#pragma GCC poison json_string json_stringn json_string_nocheck json_stringn_nocheck
#pragma GCC poison json_pack json_pack_ex json_vpack_ex json_sprintf json_vsprintf
#pragma GCC poison json_object_set_new json_object_set_new_nocheck json_array_append_new
#pragma GCC poison json_array_insert_new
#endif
