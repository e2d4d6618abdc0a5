/* lib/core: the public part is include/gridgpu/core.h; here what only the
 * library and the gridgpu command use (strings, files, wiped memory). */
#ifndef GG_LIB_CORE_H
#define GG_LIB_CORE_H

#include "gridgpu/core.h"
#include "core/json.h"

/* ---- strings ----------------------------------------------------------- */

/* malloc'd printf; NULL on allocation failure. */
char *gg_strdup_printf(const char *fmt, ...) GG_ATTR_PRINTF(1, 2);
/* Damerau-Levenshtein distance (a transposition counts 1), for "did you mean". */
size_t gg_edit_distance(const char *a, const char *b);
/* Strip ASCII whitespace at both ends in place; returns s. */
char *gg_strstrip(char *s);
/* Text from outside (a CE, a node, an image, a file name), made safe to print on
 * a terminal: every control character (C0 incl. ESC, CR, LF and TAB, DEL, the
 * C1 controls U+0080-U+009F), every bidirectional control and invisible format
 * character (U+061C, U+200B-U+200F, U+2028-U+202E, U+2060-U+2064,
 * U+2066-U+2069, U+FEFF) and every byte that is not valid UTF-8 is escaped
 * visibly, byte by byte ("\n", "\r", "\t", "\x1b", "\xc2\x9b", "\xe2\x80\xae",
 * "\xff"), a backslash is doubled; other valid UTF-8 text is kept. The result is
 * valid UTF-8 with none of those code points.
 * malloc'd (at most 4 * len + 1 bytes); NULL when out of memory. */
char *gg_str_printable(const char *s, size_t len);
/* 1 when s is valid UTF-8 (no overlong form, surrogate or truncated sequence). */
int gg_str_utf8_valid(const char *s);
/* 1 when s holds an ASCII control character (below 0x20, or DEL). */
int gg_str_has_control(const char *s);
/* The inverse of gg_str_printable: "\\", "\n", "\r", "\t" and "\xHH" back to
 * their bytes, other text as it is, so gg_str_unprintable(gg_str_printable(s))
 * is s whatever its bytes. NULL (err: GG_EPROTO) for any other backslash
 * sequence or a "\x00", which a C string cannot hold; GG_ENOMEM. malloc'd. */
char *gg_str_unprintable(const char *s, struct gg_err *err);
/* Split a command line into words as the configuration's token_command is:
 * blanks separate words; '...' keeps everything literally; "..." keeps
 * everything but \" and \\ (a backslash before them escapes them); a
 * backslash outside quotes escapes the next character. No variables, globs
 * or other shell syntax. *argv is NULL-terminated, free with gg_argv_free.
 * GG_EUSAGE for an unterminated quote or no word at all. */
int gg_argv_split(const char *s, char ***argv, struct gg_err *err);
void gg_argv_free(char **argv);

/* ---- durations and sizes typed by a user ------------------------------- */

/* gg_duration_parse and gg_size_parse for what a user types (an option, a
 * configuration value): a bare number other than 0 is refused (GG_EUSAGE, "'4'
 * needs a unit: 4h, 4m or 4d") instead of being read as seconds or bytes, which
 * turned "--walltime 4" into a minute and "--memory 16" into 16 bytes. A bare 0
 * stays valid: it means none or the default wherever the option takes it. */
int gg_duration_parse_unit(const char *s, int64_t *out, struct gg_err *err);
int gg_size_parse_unit(const char *s, uint64_t *out, struct gg_err *err);

/* ---- files ------------------------------------------------------------- */

/* Write data to path atomically: a temp file in the same directory created with
 * mode, written, fsynced, renamed over path, then the directory fsynced. On any
 * failure the temp file is removed and path is untouched. */
int gg_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
			 struct gg_err *err);
/* fsync the directory holding path (after a rename into it). */
int gg_fsync_dir(const char *path);
/* Name fd, an unnamed file (O_TMPFILE) in tmp's directory, tmp with its last six
 * characters (XXXXXX) made random: a name nobody has, for renaming over path. A name
 * that exists (another writer's) is left alone and another tried. 0, or an error
 * naming path; tmp then names nothing of ours. */
int gg_file_name_unnamed(int fd, char *tmp, const char *path, struct gg_err *err);
/* Read a whole file (at most max bytes, else GG_EIO "too large"); NUL-terminated.
 * *out is malloc'd, *len (may be NULL) without the NUL. */
int gg_file_read(const char *path, size_t max, char **out, size_t *len, struct gg_err *err);
/* mkdir -p with the given mode for directories it creates. */
int gg_mkdir_p(const char *path, mode_t mode, struct gg_err *err);
/* mkdir -p of the directory holding path (mode for those it creates). */
int gg_mkdir_parent(const char *path, mode_t mode, struct gg_err *err);
/* The user's home: $HOME, else the password database's (NULL when neither). */
const char *gg_home_dir(void);
/* Refuse a secret file (key, proxy) that is not a regular file owned by us or
 * that group/others can read or write (as ssh does). what = "key", "proxy". */
int gg_file_check_private(const char *path, const char *what, struct gg_err *err);
/* Overwrite a file's contents with zeros, fsync, unlink. */
int gg_file_shred(const char *path, struct gg_err *err);

/* ---- memory that held secrets ------------------------------------------- */

/* free() and realloc() that wipe a block (its whole usable size) before it is
 * given back, for libraries whose buffers hold keys and tokens (libcurl,
 * OpenSSL): a core image or a later allocation sees zeros. */
void gg_wipe_free(void *p);
void *gg_wipe_realloc(void *p, size_t n);

#endif
