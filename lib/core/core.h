/* lib/core: the public part is include/gridgpu/core.h (and gridgpu/json.h);
 * here what only the library and its tests use (strings, files, wiped memory). */
#ifndef GG_LIB_CORE_H
#define GG_LIB_CORE_H

#include "gridgpu/core.h"
#include "core/json.h"

/* ---- strings ----------------------------------------------------------- */

/* Strip ASCII whitespace at both ends in place; returns s. */
char *gg_strstrip(char *s);
/* 1 when s is valid UTF-8 (no overlong form, surrogate or truncated sequence). */
int gg_str_utf8_valid(const char *s);
/* 1 when s holds an ASCII control character (below 0x20, or DEL). */
int gg_str_has_control(const char *s);
/* The inverse of gg_str_printable: "\\", "\n", "\r", "\t" and "\xHH" back to
 * their bytes, other text as it is, so gg_str_unprintable(gg_str_printable(s))
 * is s whatever its bytes. NULL (err: GG_EPROTO) for any other backslash
 * sequence or a "\x00", which a C string cannot hold; GG_ENOMEM. malloc'd. */
char *gg_str_unprintable(const char *s, struct gg_err *err);

/* ---- site keys (sitekey.c) --------------------------------------------- */

/* The position of k in GG_SITE_KEYS (what gg_site_key_at(i) gave). */
size_t gg_site_key_index(const struct gg_site_key *k);
/* text as k's value in s, as the file gives it: a duration parsed (a bare
 * number other than 0 refused), an ADDRS value's addresses checked and added
 * (gg_site_allow_add), a LIST's appended (GG_EUSAGE past its room), other text
 * replacing what was there. What text may hold is the caller's check
 * (gg_config_value_ok, control characters); the key's own check is site.c's. */
int gg_site_store(struct gg_site *s, const struct gg_site_key *k, const char *text,
		  struct gg_err *err);
/* k unset in s (a list emptied). */
void gg_site_unset(struct gg_site *s, const struct gg_site_key *k);
/* k's value moved from src (left unset) to dst (what it had freed). */
void gg_site_move_key(struct gg_site *dst, struct gg_site *src, const struct gg_site_key *k);

/* ---- files ------------------------------------------------------------- */

/* Write data to path atomically: a temp file in the same directory created with
 * mode, written, fsynced, renamed over path, then the directory fsynced. On any
 * failure the temp file is removed and path is untouched. */
/* SHA-256 in lower-case hex (64 characters and a NUL), of bytes or of a file's. */
#define GG_SHA256_HEX 65
int gg_sha256_hex(const void *data, size_t len, char out[GG_SHA256_HEX], struct gg_err *err);
int gg_sha256_file(const char *path, char out[GG_SHA256_HEX], struct gg_err *err);
int gg_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
			 struct gg_err *err);
/* fsync the directory holding path (after a rename into it). */
int gg_fsync_dir(const char *path);
/* gg_file_write_atomic, unless path is already our regular file of that mode
 * holding exactly data: then nothing is written (nor synced). */
int gg_file_write_changed(const char *path, const void *data, size_t len, mode_t mode,
			  struct gg_err *err);
/* Name fd, an unnamed file (O_TMPFILE) in tmp's directory, tmp with its last six
 * characters (XXXXXX) made random: a name nobody has, for renaming over path. A name
 * that exists (another writer's) is left alone and another tried. 0, or an error
 * naming path; tmp then names nothing of ours. */
int gg_file_name_unnamed(int fd, char *tmp, const char *path, struct gg_err *err);
/* mkdir -p with the given mode for directories it creates. */
int gg_mkdir_p(const char *path, mode_t mode, struct gg_err *err);
/* A stream connected to the Unix socket at path (close-on-exec); -1 when nothing
 * answers there or the path is too long for a socket's name. */
int gg_unix_connect(const char *path);
/* path made (0700, with its parents) or found as a directory of ours that no one
 * else may use (lstat: a symbolic link is refused); GG_EIO saying what is wrong. */
int gg_dir_private(const char *path, struct gg_err *err);
/* Remove dir's regular files (not a subdirectory's) whose content last changed more
 * than max_age seconds before now, except the one named keep (NULL: none). What
 * cannot be removed is left; returns how many were. A cache's clean-up. */
int gg_dir_prune(const char *dir, int64_t max_age, int64_t now, const char *keep);
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
