/* lib/image internals shared between its files: the in-memory tree, the squashfs writer,
 * the feed the sandbox readers fill, the readers. Not installed, not for other modules. */
#ifndef GG_IMAGE_INTERNAL_H
#define GG_IMAGE_INTERNAL_H

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "image/image.h"

struct sqfs_inode_generic_t;

/* ---- the tree -------------------------------------------------------------------- */

/* One squashfs inode. Hard links are several nodes sharing one. Inodes live until the
 * tree is freed (the block processor keeps a pointer to ->sq while blocks are in flight),
 * even when a later tar entry or whiteout drops every name. One is made per entry: its
 * fields are ordered so that no padding is left between them (136 bytes, a 144-byte
 * malloc chunk; 160 before). */
struct gg_inode {
	uint32_t mode; /* with the S_IF* type bits */
	uint32_t uid, gid;
	uint32_t rdev; /* Linux new_encode_dev */
	int64_t mtime;
	char *target; /* symlink target */
	unsigned char
		*xattrs; /* packed: repeated {u16 keylen, key, u32 vallen, value}, keys sorted */
	size_t xattrs_len;
	uint64_t size;                   /* regular files: size announced by the source */
	struct sqfs_inode_generic_t *sq; /* regular files: filled by the block processor */
	char *capture; /* content kept for the image metadata (labels.json, runscript...) */
	size_t capture_len;
	uint32_t ino;              /* squashfs inode number, assigned when serialising */
	uint32_t nlink;            /* names referencing it, counted when serialising */
	uint64_t ref;              /* position in the inode table */
	uint64_t src_dev, src_ino; /* directory source: identity for hard links */
	uint64_t src_seq; /* OCI: (layer << 40) | entry index of the entry holding the data */
	struct gg_inode *next_all;
	char elf[3];     /* SIF arch code from the ELF header of the data, "" if none */
	uint8_t fed;     /* data given to the block processor */
	uint8_t skipped; /* unreadable, left out (--skip-unreadable) */
	uint8_t visited; /* scratch for walks */
};

/* A name in the tree. Its bytes live in the same allocation, after the struct (one
 * malloc a name, not two: on a tree of 500k short names that is 16 bytes an entry). */
struct gg_node {
	char *name; /* "" for the root; points at the node's own bytes */
	struct gg_node *parent;
	struct gg_inode *inode;
	struct gg_node **kids; /* directories: sorted by strcmp of name */
	uint32_t nkids, cap;
	int layer; /* OCI: layer that last created or declared this entry */
};

struct gg_tree {
	struct gg_node *root;
	struct gg_inode *all; /* every inode ever made, for freeing */
	/* distinct uid/gid values (squashfs keeps at most 65536) */
	uint32_t *ids;
	size_t nids, idcap;
	uint8_t id_max_seen;
	uint8_t root_set; /* the source gave the root's attributes */
	uint64_t nnodes;
};

struct gg_tree *gg_image_tree_new(void);
void gg_image_tree_free(struct gg_tree *t);
struct gg_inode *gg_image_inode_new(struct gg_tree *t);
/* Record a uid/gid; GG_EFAIL past 65536 distinct values. */
int gg_image_tree_note_id(struct gg_tree *t, uint32_t id, struct gg_err *err);
struct gg_node *gg_image_node_find(const struct gg_node *dir, const char *name);
/* Insert a child (dir must not hold name yet); NULL on allocation failure. */
struct gg_node *gg_image_node_add(struct gg_tree *t, struct gg_node *dir, const char *name,
				  size_t namelen, struct gg_inode *ino);
/* Detach and free a node and its subtree (the inodes stay until the tree is freed). */
void gg_image_node_remove(struct gg_tree *t, struct gg_node *n);
/* Path of a node relative to the root ("" for the root); malloc'd. */
char *gg_image_node_path(const struct gg_node *n);
/* Look a clean relative path up without following symlinks; NULL when missing. */
struct gg_node *gg_image_tree_lookup(const struct gg_tree *t, const char *path);
/* Resolve a path inside the tree following symlinks (absolute targets from the root,
 * at most 40 hops); NULL when it does not resolve. */
struct gg_node *gg_image_tree_resolve(const struct gg_tree *t, const char *path);
/* Walk top and every node below it depth first, children in name order, without
 * recursion or allocation (the way back up goes through the parent pointers), so that
 * any depth is safe. pre(n) comes before n's children, post(n) after them; either may be
 * NULL. pre returning GG_WALK_SKIP leaves out n's children and n's post; any other
 * non-zero return of pre or post stops the walk and is returned. The callbacks must not
 * add or remove nodes. */
#define GG_WALK_SKIP 1
typedef int (*gg_walk_fn)(struct gg_node *n, void *ud);
int gg_image_tree_walk(struct gg_node *top, gg_walk_fn pre, gg_walk_fn post, void *ud);

/* Bounds of the names an image may hold: a name at most GG_IMAGE_NAME_MAX bytes (the
 * squashfs limit: unsquashfs and the kernel refuse longer ones), a path at most
 * GG_IMAGE_PATH_MAX bytes (PATH_MAX without the NUL; this bounds the depth too). */
#define GG_IMAGE_NAME_MAX 256
#define GG_IMAGE_PATH_MAX 4095
/* Check a clean relative path against those bounds; with whiteouts set, a last name
 * ".wh.NAME" may be 4 bytes longer (it only names what it hides). GG_EFAIL with err
 * naming the entry (shortened when long). */
int gg_image_path_check(const char *path, int whiteouts, struct gg_err *err);

/* Attach a packed xattr set to an inode (copied). */
int gg_image_inode_set_xattrs(struct gg_inode *ino, const unsigned char *packed, size_t len);

/* Packed xattr builder, used by the readers. */
struct gg_xattr_buf {
	unsigned char *buf;
	size_t len, cap;
	size_t count;
};
int gg_image_xattr_add(struct gg_xattr_buf *b, const char *key, const void *val, size_t vlen);
/* Sort by key (the packed order is what the image gets). */
int gg_image_xattr_sort(struct gg_xattr_buf *b);
void gg_image_xattr_free(struct gg_xattr_buf *b);
/* 1 for the namespaces squashfs stores: user., trusted., security. */
int gg_image_xattr_supported(const char *key);

/* One archive entry, normalised, applied to the tree by gg_image_tree_apply. */
struct gg_entry {
	const char *path; /* clean relative path (gg_image_path_clean) */
	uint32_t mode;    /* with S_IF* bits */
	uint32_t uid, gid;
	int64_t mtime;
	uint32_t rdev;
	const char *symlink;  /* target, for S_IFLNK */
	const char *hardlink; /* clean path of the link target, or NULL */
	uint64_t size;
	const unsigned char *xattrs; /* packed, sorted */
	size_t xattrs_len;
};
/* Apply an entry: create or replace the node at e->path (a directory over a directory
 * keeps the children and takes the new attributes; anything else replaces), creating
 * missing parents. Rejects paths through a symlink or a non-directory, hard links to
 * missing entries or directories. With whiteouts set, ".wh.NAME" removes NAME from lower
 * layers and ".wh..wh..opq" empties the directory of lower-layer entries. *data gets the
 * inode whose bytes follow (a regular file that is not a hard link), else NULL. */
int gg_image_tree_apply(struct gg_tree *t, const struct gg_entry *e, int layer, int whiteouts,
			struct gg_inode **data, struct gg_err *err);

/* ---- the squashfs writer ------------------------------------------------------------ */

struct gg_sqfs_writer;
struct gg_sqfs_opts {
	int comp;      /* enum gg_image_comp */
	int level;     /* 0 = default */
	unsigned jobs; /* >= 1 */
	uint32_t block_size;
	int (*cancel)(void *ud); /* optional: polled while the tree is serialised */
	void *cancel_ud;
};
/* len bytes at off, through short writes and EINTR (sif.c): 0, or -1 with errno set
 * (ENOSPC when the disk took nothing). */
int gg_image_pwrite_all(int fd, const void *buf, size_t len, int64_t off);
/* len bytes from off: 0, or -1 with errno set (0 when the file ended first). */
int gg_image_pread_all(int fd, void *buf, size_t len, int64_t off);

/* Write a squashfs into fd starting at base (the SIF partition offset). path is for
 * messages. */
int gg_sqfs_writer_new(int fd, const char *path, uint64_t base, const struct gg_sqfs_opts *o,
		       struct gg_sqfs_writer **out, struct gg_err *err);
int gg_sqfs_file_begin(struct gg_sqfs_writer *w, struct gg_inode *ino, struct gg_err *err);
int gg_sqfs_file_append(struct gg_sqfs_writer *w, const void *data, size_t len, struct gg_err *err);
int gg_sqfs_file_end(struct gg_sqfs_writer *w, struct gg_err *err);
/* ino's data is same's (fed, or itself the copy of a fed file): it gets same's blocks
 * and fragment when the data is finished. */
int gg_sqfs_file_same(struct gg_sqfs_writer *w, struct gg_inode *ino, struct gg_inode *same,
		      struct gg_err *err);
/* The data block size. */
uint32_t gg_sqfs_writer_block_size(const struct gg_sqfs_writer *w);
/* Bytes written so far (for progress). */
uint64_t gg_sqfs_writer_size(const struct gg_sqfs_writer *w);
/* Finish the data, serialise the tree (skipping skipped inodes), write the tables and
 * the superblock with mkfs_time, pad to 4 KiB. clamp_time >= 0 clamps every inode mtime
 * to it. *size = the padded squashfs size; counts go to res. */
int gg_sqfs_writer_finish(struct gg_sqfs_writer *w, struct gg_tree *t, uint32_t mkfs_time,
			  int64_t clamp_time, uint64_t *size, struct gg_freeze_result *res,
			  struct gg_err *err);
void gg_sqfs_writer_free(struct gg_sqfs_writer *w);
/* The gzip level of the tables, for data at level over data_bytes and that many inodes. */
int gg_sqfs_table_level(int level, uint64_t data_bytes, uint64_t inodes);
/* Message for a libsquashfs error code. */
const char *gg_sqfs_strerror(int code);
/* Walk the directory tree of a squashfs (sqfscheck.c), without recursion: names
 * 1 to 256 bytes with no '/' or NUL and not "." or "..", paths at most 4095
 * bytes, symlink targets 1 to 4095 bytes, no name twice in a directory, no
 * directory reached twice. 0 when sound, 1 when not (why says where and what),
 * -1 when out of memory (why says so); *entries (may be NULL) = entries seen. */
struct sqfs_file_t;
struct sqfs_super_t;
struct sqfs_compressor_t;
int gg_sqfs_check_tree(struct sqfs_file_t *file, const struct sqfs_super_t *sb,
		       struct sqfs_compressor_t *cmp, char *why, size_t whylen, uint64_t *entries);

/* The gate (gate.c): counts the blocks the compressor threads finish, so the feeding
 * thread can sleep until a batch of them is done. new: NULL when out of memory. wrap:
 * a compressor that hands every block to inner and counts it; it owns inner, except
 * when it returns NULL (out of memory). Its copies share g, which must outlive them. */
struct gg_gate;
struct gg_gate *gg_gate_new(void);
void gg_gate_free(struct gg_gate *g);
struct sqfs_compressor_t *gg_gate_wrap(struct gg_gate *g, struct sqfs_compressor_t *inner);
/* Blocks compressed so far. */
uint64_t gg_gate_done(struct gg_gate *g);
/* Sleep until done blocks in all are compressed, or until no compressor is busy. */
void gg_gate_wait(struct gg_gate *g, uint64_t done);
/* The writer's use of it (squashfs.c): with live blocks queued in all (sparse ones not
 * counted), done of them compressed and a queue of backlog items, 1 when the feeder
 * should sleep, until *until are done; 0 when it should queue on. */
int gg_sqfs_gate_due(uint64_t live, uint64_t done, size_t backlog, uint64_t *until);

/* Tails (pack.c): the data of files smaller than a block and the last, partial block
 * of the others, packed into fragment blocks on the calling thread, each tail equal to
 * an earlier one (byte for byte) stored once. io: submit queues a block for compression
 * and writing, and *holder gets its inode (its start and size word) once written;
 * read reads the image back; uncmp decompresses what it reads.
 * add: where tail data[0..n) (0 < n < block size) is, index and offset; an SQFS_ERROR
 * code on failure, as the others. flush: queue the block being filled. table: after
 * everything queued is written, the fragment table's entries (the blocks in order). */
struct sqfs_inode_generic_t;
struct sqfs_frag_table_t;
struct gg_pack_io {
	int (*submit)(void *ud, const void *data, size_t n, struct sqfs_inode_generic_t **holder);
	int (*read)(void *ud, uint64_t off, void *buf, size_t n);
	struct sqfs_compressor_t *uncmp;
	void *ud;
};
struct gg_pack;
struct gg_pack *gg_pack_new(uint32_t block_size, const struct gg_pack_io *io);
void gg_pack_free(struct gg_pack *p);
int gg_pack_add(struct gg_pack *p, const void *data, uint32_t n, uint32_t *index, uint32_t *offset);
int gg_pack_flush(struct gg_pack *p);
int gg_pack_table(struct gg_pack *p, struct sqfs_frag_table_t *tbl);

/* Writeback (writeback.c): a thread that starts the kernel writing ranges of fd out
 * (sync_file_range), best effort. new: NULL when out of memory; without a thread the
 * caller's thread makes the calls. start: ask for [from, to) (merged with what is still
 * pending). free (NULL is fine): start what is pending, stop the thread; returns where
 * writeback was started up to. */
struct gg_writeback;
struct gg_writeback *gg_writeback_new(int fd);
void gg_writeback_start(struct gg_writeback *wb, uint64_t from, uint64_t to);
uint64_t gg_writeback_free(struct gg_writeback *wb);

/* Direct writes (direct.c): a file written from the aligned offset at on (absolute
 * offsets) through a few aligned buffers that two threads write with O_DIRECT; reads see
 * every byte written. new: NULL when it cannot be set up (at not 4096-aligned, no /proc,
 * out of memory): write through the page cache then. write, read, truncate: 0, or -1
 * with errno (a failed write of the threads' is returned by the next write or flush).
 * flush: everything written so far into the file (the last bytes through the page cache);
 * writes may follow.
 * syncs: the fdatasyncs the threads made so far, one after every GG_DIRECT_SYNC bytes
 * written with O_DIRECT (so the final fsync finds little left), waiting for one under way.
 * free (NULL is fine): stop the threads; returns the chunks written with O_DIRECT. */
/* 16, 32 and 64 MiB left the same 2 ms to the final fsync of the compressed-files
 * tree's image; 32 makes half as many calls as 16. */
#define GG_DIRECT_SYNC (32u << 20)
struct gg_direct;
struct gg_direct *gg_direct_new(int fd, uint64_t at);
int gg_direct_write(struct gg_direct *d, uint64_t off, const void *buf, size_t n);
int gg_direct_read(struct gg_direct *d, uint64_t off, void *buf, size_t n);
int gg_direct_truncate(struct gg_direct *d, uint64_t size);
int gg_direct_flush(struct gg_direct *d);
uint64_t gg_direct_syncs(struct gg_direct *d);
uint64_t gg_direct_free(struct gg_direct *d);

/* ---- the feed (feed.c): what the readers hand entries and data to ----------------- */

struct gg_feed;
/* Report a warning (counted; the callback gets it unless too many were reported). */
void gg_image_warn(struct gg_feed *fz, const char *fmt, ...) GG_ATTR_PRINTF(2, 3);
/* Poll the cancel callback: GG_EINTR (err set) when asked to stop. */
int gg_image_check_cancel(struct gg_feed *fz, struct gg_err *err);
/* Progress bookkeeping. */
void gg_image_progress_totals(struct gg_feed *fz, uint64_t files, uint64_t bytes);
void gg_image_progress_phase(struct gg_feed *fz, enum gg_image_phase phase);
void gg_image_progress_input(struct gg_feed *fz, uint64_t bytes_consumed);
/* Feed one regular file's data: begin (path = clean relative path, for metadata capture
 * and messages), append any number of times, end. */
int gg_image_feed_begin(struct gg_feed *fz, struct gg_inode *ino, const char *path,
			struct gg_err *err);
int gg_image_feed_data(struct gg_feed *fz, const void *data, size_t len, struct gg_err *err);
int gg_image_feed_end(struct gg_feed *fz, struct gg_err *err);
/* Instead of begin/data/end: ino's size bytes are same's, a file fed before. */
int gg_image_feed_same(struct gg_feed *fz, struct gg_inode *ino, struct gg_inode *same,
		       uint64_t size, struct gg_err *err);
/* Append n zero bytes (holes of sparse files). */
int gg_image_feed_zeros(struct gg_feed *fz, uint64_t n, struct gg_err *err);
/* The same for a hole an archive declares: the holes of a freeze may add up to 1 GiB
 * plus 256 times the data bytes fed so far, no more (a 10 KiB tar declaring a 1 TiB
 * sparse file would cost minutes of CPU): GG_EFAIL past that. */
int gg_image_feed_hole(struct gg_feed *fz, uint64_t n, struct gg_err *err);
/* The tree the entries go into. */
struct gg_tree *gg_image_feed_tree(struct gg_feed *fz);
/* 1 for files the directory reader leaves out (the temp file, the output it replaces). */
int gg_image_feed_excluded(const struct gg_feed *fz, dev_t dev, ino_t ino);
int gg_image_feed_skip_unreadable(const struct gg_feed *fz);
/* The compressor threads of the freeze: with more than one the directory reader opens
 * and reads files ahead on threads of their own. */
unsigned gg_image_feed_jobs(const struct gg_feed *fz);
/* The squashfs data block size. */
uint32_t gg_image_feed_block_size(const struct gg_feed *fz);

/* The driver's side (freeze.c). new: NULL when out of memory; free accepts NULL and
 * frees neither the tree nor the writer. */
struct gg_feed *gg_image_feed_new(const struct gg_image_callbacks *cb, int skip_unreadable);
void gg_image_feed_free(struct gg_feed *fz);
/* Leave a file out of a directory source (at most two: the temp file, the old output). */
void gg_image_feed_exclude(struct gg_feed *fz, dev_t dev, ino_t ino);
/* The tree and the squashfs writer to feed (sq NULL once the writer is freed). */
void gg_image_feed_attach(struct gg_feed *fz, struct gg_tree *t, struct gg_sqfs_writer *sq);
void gg_image_feed_set_jobs(struct gg_feed *fz, unsigned jobs);
/* The size of the source, when the reader counts source bytes. */
void gg_image_progress_source_size(struct gg_feed *fz, uint64_t bytes);
/* The freeze is done: the count of warnings not shown, the last progress report.
 * Returns the number of warnings. */
unsigned gg_image_feed_finish(struct gg_feed *fz, uint64_t image_size);

/* ---- the readers (sandbox.c, tar.c, oci.c) ---------------------------------------- */

/* Readers (sandbox.c, tar.c, oci.c). source_desc gets a malloc'd digest ("sha256:...")
 * when the reader knows one. */
int gg_image_read_dir(struct gg_feed *fz, const char *dir, struct gg_err *err);
/* Open the clean relative path rel beneath the directory rootfd ("" = rootfd itself)
 * without following any symbolic link on the way: openat2 with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS when use_openat2, else one O_NOFOLLOW openat per component
 * (O_PATH for the directories on the way). -1 with errno (ELOOP for a link). */
int gg_image_open_beneath(int rootfd, const char *rel, int flags, int use_openat2);
/* 1 when openat2 is there and allowed (not filtered by a seccomp profile). */
int gg_image_openat2_works(int rootfd);
int gg_image_read_tar(struct gg_feed *fz, int fd, const char *name, char **digest,
		      struct gg_err *err);
struct gg_oci_info {
	char *digest;          /* manifest digest, or the image ID for legacy docker archives */
	char *config_json;     /* the image config's "config" object, compact JSON, or NULL */
	char *labels_json;     /* its Labels, compact JSON object, or NULL */
	char *ref;             /* a repo tag / ref name when the archive names one */
	const char *bootstrap; /* "oci", "oci-archive" or "docker-archive" (static) */
};
int gg_image_read_oci(struct gg_feed *fz, const char *path, struct gg_oci_info *info,
		      struct gg_err *err);
void gg_image_oci_info_clear(struct gg_oci_info *info);
/* Detect the format of a path (dir, OCI layout/archive, tar). */
int gg_image_detect(const char *path, enum gg_image_format *out, struct gg_err *err);

/* libarchive entry -> struct gg_entry helpers (archive.c), shared by tar.c and oci.c. */
struct archive;
struct archive_entry;
struct gg_entry_buf {
	char *path, *hardlink;
	struct gg_xattr_buf xattrs;
	struct gg_entry e;
};
/* Fill b->e from an archive entry; rejects traversal and unsupported types. */
int gg_image_entry_from_archive(struct gg_feed *fz, struct archive_entry *ae,
				struct gg_entry_buf *b, const char *what, struct gg_err *err);
void gg_image_entry_buf_free(struct gg_entry_buf *b);
/* A new libarchive reader of a tar (plain or GNU) or layer, in any of the
 * compressions it may come in (gzip, bzip2, xz, lzma, zstd, lz4, compress); NULL
 * when out of memory. */
struct archive *gg_image_tar_reader(void);
/* 0 for libarchive warnings not worth showing (locale conversion of UTF-8 names). */
int gg_image_archive_warning_matters(const char *msg);
/* Copy the data of the current archive entry into the freeze (sparse holes as zeros). */
int gg_image_feed_archive_data(struct gg_feed *fz, struct archive *a, struct gg_inode *ino,
			       const char *path, const char *what, struct gg_err *err);

/* ---- read-ahead (ahead.c): threads opening and reading files ahead of the feed ---- */

/* What opening one file gave, handed over as found, for the reader to check. */
struct gg_ahead_file {
	int fd; /* -1: the open failed with err_no */
	int err_no;
	int st_ok; /* fstat worked and it is a regular file: st */
	struct stat st;
	ssize_t xattrs;      /* flistxattr(fd, NULL, 0) when st_ok (0: none), else -1 */
	unsigned char *data; /* its first len bytes (0 for sparse files) */
	size_t len;
	char *rel; /* its path relative to the root (NULL: out of memory) */
};
/* Open rel beneath rootfd as the reader does (O_NOATIME when allowed, O_NONBLOCK: a FIFO
 * put in its place must not block), fstat it and size its attribute list: fd, err_no,
 * st_ok and xattrs of f. The threads do this for every file; without them the reader
 * calls it itself. */
void gg_image_ahead_open(int rootfd, const char *rel, int use_openat2, struct gg_ahead_file *f);
/* Start opening nodes[0..n) in order, as many files ahead as gg_image_ahead_slots_for
 * gives for the soft RLIMIT_NOFILE; NULL when that is none or no thread or memory could
 * be had (then the reader opens them itself). nodes must outlive it. */
struct gg_ahead;
struct gg_ahead *gg_image_ahead_start(int rootfd, int use_openat2, struct gg_node *const *nodes,
				      size_t n);
/* Files held open ahead at most under a soft limit of fd_limit descriptors: up to 128, a
 * multiple of the thread count, 64 descriptors left for the rest; 0 below 72. */
size_t gg_image_ahead_slots_for(uint64_t fd_limit);
/* What a read-ahead holds at most: its slots. */
size_t gg_image_ahead_slots(const struct gg_ahead *a);
/* Files whose first bytes were not in the page cache so far: the disk read them while
 * their thread opened its next files (up to 8 a thread, fewer when it has fewer slots). */
size_t gg_image_ahead_waited(const struct gg_ahead *a);
/* File i, waited for (i in order, each once); give it back with done: a descriptor left
 * in fd is closed by the threads, not by the reader. */
struct gg_ahead_file *gg_image_ahead_get(struct gg_ahead *a, size_t i);
void gg_image_ahead_done(struct gg_ahead *a, struct gg_ahead_file *f);
/* Stop the threads, close what they opened and free; NULL is fine. */
void gg_image_ahead_stop(struct gg_ahead *a);

/* ---- stat pool (statpool.c): fstatat over a directory's names on several threads ---- */

struct gg_stat_result {
	struct stat st;
	int err; /* 0, or fstatat's errno (st is then undefined) */
};
/* Start the helper threads; NULL when none could be had (then the caller stats alone). */
struct gg_statpool;
struct gg_statpool *gg_image_statpool_start(void);
/* fstatat(dfd, names[i], AT_SYMLINK_NOFOLLOW) into out[i] for every i < n, by the helpers
 * and the caller together; returns when all are done. */
void gg_image_statpool_run(struct gg_statpool *p, int dfd, char *const *names, size_t n,
			   struct gg_stat_result *out);
/* Stop the threads and free; NULL is fine. */
void gg_image_statpool_stop(struct gg_statpool *p);

/* ---- directory listings and their read-ahead (dirahead.c) ------------------------- */

/* A directory read: opened beneath the root, its names, their fstatat. */
struct gg_dir_listing {
	DIR *dir;       /* open (dirfd() for *at calls), NULL when it could not be read */
	int open_err;   /* errno of the open (0: opened) */
	int stat_err;   /* errno of fstat on it */
	struct stat st; /* what is open */
	char **names;   /* sorted, without "." and ".." */
	size_t n;
	int read_err;               /* errno of reading the names (ENOMEM included) */
	struct gg_stat_result *res; /* fstatat of names[i] (no symlinks followed); NULL: not done */
};
/* Read the directory rel beneath rootfd into l (stats on sp's threads for large ones when
 * sp is not NULL); every failure is recorded in l, never reported. */
void gg_image_dir_read(int rootfd, const char *rel, int use_openat2, struct gg_statpool *sp,
		       struct gg_dir_listing *l);
void gg_image_dir_listing_free(struct gg_dir_listing *l);
/* Threads that read the directories the scan wants next. start: NULL when no thread
 * could be had. want: the directories the scan reads next, the first first (replaces the
 * order of earlier calls). take: 1 with dir's listing in out (waited for when a thread is
 * reading it); 0 when no thread has started on it (the scan reads it). stop (NULL is
 * fine): join the threads, free what was not taken; returns the listings handed over. */
struct gg_dirahead;
struct gg_dirahead *gg_image_dirahead_start(int rootfd, int use_openat2);
void gg_image_dirahead_want(struct gg_dirahead *a, struct gg_node *const *next, size_t n);
int gg_image_dirahead_take(struct gg_dirahead *a, const struct gg_node *dir,
			   struct gg_dir_listing *out);
uint64_t gg_image_dirahead_stop(struct gg_dirahead *a);
/* Wait until every directory wanted is read (for the tests). */
void gg_image_dirahead_drain(struct gg_dirahead *a);

/* ---- copies of files (dup.c) ------------------------------------------------------- */

/* The files of a directory source in feed order, nodes[0..n): the sizes of min bytes or
 * more that two of them have. NULL when out of memory (then nothing is looked for). */
struct gg_dups;
struct gg_dups *gg_image_dups_new(struct gg_node *const *nodes, size_t n, uint64_t min);
void gg_image_dups_free(struct gg_dups *d);
/* A file about to be fed: its node, its open descriptor and that descriptor's fstat. */
struct gg_dup_file {
	struct gg_node *node;
	int fd;
	const struct stat *st;
	int rootfd, use_openat2; /* where the earlier files are opened again */
};
/* *same: an earlier file (as given here) whose bytes f's are, compared byte for byte, or
 * NULL (then f may be compared with later ones). 0, or <0 with err set when fz's
 * cancel callback said stop. Polls the cancel callback during long compares. */
int gg_image_dups_find(struct gg_dups *d, const struct gg_dup_file *f, struct gg_feed *fz,
		       struct gg_inode **same, struct gg_err *err);

/* ---- metadata (meta.c) ------------------------------------------------------------ */

/* SIF arch code of the tree: /bin/sh (symlinks resolved inside the tree), else the first
 * executable ELF in sorted order, else the host's. */
const char *gg_image_tree_arch(const struct gg_tree *t);
/* Paths whose content the metadata needs (labels.json, runscript, env scripts...). */
int gg_image_meta_wanted(const char *path);

struct gg_meta_in {
	const struct gg_tree *tree;
	const char *source;     /* as given */
	const char *source_abs; /* absolute path, or "stdin" */
	enum gg_image_format format;
	const char *source_digest;
	const struct gg_oci_info *oci;
	const char *arch; /* SIF code */
	int64_t build_time;
	int reproducible;
	const char *const *labels;
	size_t nlabels;
	const char *gpus_json;
	const char *usage_json; /* what the session's work used, or NULL */
	const char *tool_version;
	int comp, level;
	uint32_t block_size;
};
/* The definition text, inspect-metadata.json and gridgpu-provenance.json objects
 * (malloc'd, compact JSON with sorted keys). */
int gg_image_meta_build(const struct gg_meta_in *in, char **deffile, char **inspect,
			char **provenance, struct gg_err *err);

#endif
