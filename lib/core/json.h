/* JSON documents gridgpu writes (records, --json output, image metadata, what
 * it sends a CE): one way to put text in them, and members that cannot be
 * dropped silently. Included by core/core.h, so by every file of lib/ and cli/.
 *
 * jansson's json_string() and json_pack("s") return NULL for text that is not
 * valid UTF-8, and json_object_set_new() / json_array_append_new() then skip the
 * member without a word: one path or URL with a Latin-1 byte removed a whole
 * list from a record. After this header those functions cannot be named (the
 * compiler refuses them, #pragma GCC poison); use gg_json_text, gg_json_set and
 * gg_json_append. A file that must build raw JSON (a test forging a hostile
 * record, lib/core/json.c itself) defines GG_JSON_RAW before its includes. */
#ifndef GG_LIB_CORE_JSON_H
#define GG_LIB_CORE_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "gridgpu/core.h"

/* A JSON string of text that may not be valid UTF-8 (a path, a URL, a command,
 * what a CE or a node says): kept as it is when it is valid UTF-8, else escaped
 * as gg_str_printable does ("\xff", "\x1b", "\n", "\\"), so it is never
 * dropped; control characters of valid text are kept (jansson writes them as
 * \u001b). json null for NULL. NULL only when out of memory. */
json_t *gg_json_text(const char *s);
/* gg_json_text of the len bytes at s (a NUL among them is kept: \u0000 when
 * the rest is valid UTF-8, else \x00). */
json_t *gg_json_textn(const char *s, size_t len);
/* 1 when gg_json_text keeps s as it is (valid UTF-8), 0 when it escapes it. */
int gg_json_text_exact(const char *s);
/* json_object_set_new and json_array_append_new that never lose a member
 * silently: v is stolen; when it is NULL (out of memory) or cannot be set, the
 * loss is counted (gg_json_losses) and GG_ENOMEM returned. */
int gg_json_set(json_t *o, const char *key, json_t *v);
int gg_json_append(json_t *a, json_t *v);
/* An object of the pairs key, value (json_t *, stolen) up to a NULL key, each
 * set by gg_json_set: json_pack("{s:o,...}") without its silent NULL. */
json_t *gg_json_object(const char *key, ...);
/* gg_json_set(o, key, gg_json_text(s)) when s is not NULL; nothing for NULL. */
int gg_json_set_text(json_t *o, const char *key, const char *s);
/* The number of members gg_json_set and gg_json_append lost in this thread so
 * far. A writer compares it before and after building a document and refuses
 * to use one that lost a member (a record is not written, a --json document
 * becomes an error). */
size_t gg_json_losses(void);

#ifndef GG_JSON_RAW
#pragma GCC poison json_string json_stringn json_string_nocheck json_stringn_nocheck
#pragma GCC poison json_pack json_pack_ex json_vpack_ex json_sprintf json_vsprintf
#pragma GCC poison json_object_set_new json_object_set_new_nocheck json_array_append_new
#pragma GCC poison json_array_insert_new
#endif

#endif
