/* JSON documents gridgpu writes (records, --json output, image metadata, what
 * it sends a CE): the helpers are public (include/gridgpu/json.h). Included by
 * core/core.h, so by every file of lib/.
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

#ifndef GG_JSON_POISON
#define GG_JSON_POISON 1
#endif
#include "gridgpu/core.h"
#include "gridgpu/json.h"

#endif
