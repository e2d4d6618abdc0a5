/* The squashfs writer: libsquashfs' block processor (threaded compression, fragments,
 * deduplication, sparse blocks) writing in place into the SIF file through our own
 * sqfs_file_t, then the tree serialised the way squashfs-tools-ng's writer does it:
 * inodes children-first, directory listings, fragment, ID and xattr tables, superblock. */
#include "image/internal.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqfs/block.h>
#include <sqfs/block_processor.h>
#include <sqfs/block_writer.h>
#include <sqfs/compressor.h>
#include <sqfs/dir_writer.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_writer.h>
#include <sqfs/super.h>
#include <sqfs/xattr_writer.h>

#define WRITEBACK_CHUNK (8u << 20) /* start writeback of every 8 MiB written */
#define SENT_MAX        512        /* the longest queue (backlog) */

/* ---- the file: the squashfs at an offset inside the SIF ----------------------------- */

struct gg_sqfs_file {
	sqfs_file_t base;
	int fd;
	const char *path;
	uint64_t off;         /* partition start in the SIF */
	uint64_t size;        /* squashfs bytes so far */
	uint64_t queued;      /* writeback asked for up to here */
	struct gg_direct *dw; /* O_DIRECT writes; NULL: through the page cache, with wb */
	struct gg_writeback *wb;
	int err; /* errno of the first failed call */
};

static int f_read_at(sqfs_file_t *base, sqfs_u64 offset, void *buffer, size_t size)
{
	struct gg_sqfs_file *f = (struct gg_sqfs_file *)base;
	if (offset > f->size || size > f->size - offset)
		return SQFS_ERROR_OUT_OF_BOUNDS;
	int rc = f->dw ? gg_direct_read(f->dw, f->off + offset, buffer, size)
		       : gg_image_pread_all(f->fd, buffer, size, (int64_t)(f->off + offset));
	if (rc < 0) {
		if (!f->err)
			f->err = errno ? errno : EIO;
		return SQFS_ERROR_IO;
	}
	return 0;
}

static int f_write_at(sqfs_file_t *base, sqfs_u64 offset, const void *buffer, size_t size)
{
	struct gg_sqfs_file *f = (struct gg_sqfs_file *)base;
	int rc = f->dw ? gg_direct_write(f->dw, f->off + offset, buffer, size)
		       : gg_image_pwrite_all(f->fd, buffer, size, (int64_t)(f->off + offset));
	if (rc < 0) {
		if (!f->err)
			f->err = errno;
		return SQFS_ERROR_IO;
	}
	if (offset + size > f->size)
		f->size = offset + size;
	if (f->size - f->queued >= WRITEBACK_CHUNK && f->wb) {
		/* start writing back what is done while we compress the rest */
		gg_writeback_start(f->wb, f->off + f->queued, f->off + f->size);
		f->queued = f->size;
	}
	return 0;
}

static sqfs_u64 f_get_size(const sqfs_file_t *base)
{
	return ((const struct gg_sqfs_file *)base)->size;
}

static int f_truncate(sqfs_file_t *base, sqfs_u64 size)
{
	struct gg_sqfs_file *f = (struct gg_sqfs_file *)base;
	int rc = f->dw ? gg_direct_truncate(f->dw, f->off + size)
		       : ftruncate(f->fd, (off_t)(f->off + size));
	if (rc < 0) {
		if (!f->err)
			f->err = errno;
		return SQFS_ERROR_IO;
	}
	f->size = size;
	if (f->queued > size)
		f->queued = size;
	return 0;
}

static void f_destroy(sqfs_object_t *obj)
{
	gg_direct_free(((struct gg_sqfs_file *)obj)->dw);
	gg_writeback_free(((struct gg_sqfs_file *)obj)->wb);
	free(obj);
}

/* ---- the writer ------------------------------------------------------------------- */

struct gg_sqfs_writer {
	struct gg_sqfs_file *file;
	sqfs_compressor_t *cmp;   /* handed to the block processor (copied per worker) */
	sqfs_compressor_t *mcmp;  /* meta data blocks, on this thread */
	int level;                /* gzip: the data's level (the tables' follows from it) */
	sqfs_compressor_t *uncmp; /* reads fragment blocks back for exact dedup */
	sqfs_block_writer_t *bw;
	sqfs_frag_table_t *frag;
	sqfs_block_processor_t *proc;
	sqfs_compressor_t *gcmp; /* the block processor's: w->cmp's copy behind the gate */
	struct gg_gate *gate;    /* NULL with one compressor thread */
	size_t backlog;          /* the block processor's queue length */
	uint64_t items;          /* queued by us: whole blocks and sentinels */
	uint64_t blocks;         /* of them whole blocks, of files and of tails */
	uint64_t sent[SENT_MAX]; /* sentinels maybe in the queue: blocks queued before each */
	unsigned sent_head, sent_n;
	uint64_t sent_done;   /* sentinels known to be out of the queue */
	struct gg_pack *pack; /* the tails' blocks (pack.c) */
	unsigned char *tail;  /* the current file's unfinished block */
	uint32_t fill;        /* its bytes */
	int began;            /* the current file is in the block processor */
	sqfs_id_table_t *ids;
	sqfs_xattr_writer_t *xwr;
	sqfs_meta_writer_t *im, *dm;
	sqfs_dir_writer_t *dirw;
	sqfs_super_t super;
	uint32_t block_size;
	int comp;
	struct gg_inode *cur;
	uint32_t next_ino;
	uint32_t ninodes;
	int64_t clamp;
	int finished; /* the block processor is done with everything */
	int (*cancel)(void *ud);
	void *cancel_ud;
	uint64_t nser;     /* nodes serialised: the cancel hook is polled every 1024 */
	struct same *same; /* files whose data is another's (dup.c) */
	size_t nsame, samecap;
};

struct same {
	struct gg_inode *ino, *of;
};

const char *gg_sqfs_strerror(int code)
{
	switch (code) {
	case SQFS_ERROR_ALLOC: return "out of memory";
	case SQFS_ERROR_IO: return "input/output error";
	case SQFS_ERROR_COMPRESSOR: return "compressor failed";
	case SQFS_ERROR_INTERNAL: return "internal error in libsquashfs";
	case SQFS_ERROR_CORRUPTED: return "corrupted data";
	case SQFS_ERROR_UNSUPPORTED: return "unsupported";
	case SQFS_ERROR_OVERFLOW: return "a size or count is too large for squashfs";
	case SQFS_ERROR_OUT_OF_BOUNDS: return "out of bounds";
	case SFQS_ERROR_SUPER_MAGIC: return "no squashfs magic";
	case SFQS_ERROR_SUPER_VERSION: return "unsupported squashfs version";
	case SQFS_ERROR_SUPER_BLOCK_SIZE: return "bad block size";
	case SQFS_ERROR_NOT_DIR: return "not a directory";
	case SQFS_ERROR_NO_ENTRY: return "no such entry";
	case SQFS_ERROR_LINK_LOOP: return "symbolic link loop";
	case SQFS_ERROR_NOT_FILE: return "not a file";
	case SQFS_ERROR_ARG_INVALID: return "invalid argument";
	case SQFS_ERROR_SEQUENCE: return "calls out of sequence";
	default: return "unknown libsquashfs error";
	}
}

/* Turn a libsquashfs failure into an error naming the file (I/O) or the step. */
static int werr(struct gg_sqfs_writer *w, struct gg_err *err, int rc, const char *what)
{
	if (rc == SQFS_ERROR_IO && w->file && w->file->err) {
		int e = w->file->err;
		return gg_err_sys(err, GG_EIO, e, "writing '%s'", w->file->path);
	}
	if (rc == SQFS_ERROR_ALLOC)
		return gg_err_set(err, GG_ENOMEM, "%s: out of memory", what);
	return gg_err_set(err, GG_EFAIL, "%s: %s", what, gg_sqfs_strerror(rc));
}

/* One of libsquashfs's compressors, its blocks stored raw where they do not shrink. */
static int shrinking_compressor(const sqfs_compressor_config_t *cfg, sqfs_compressor_t **out)
{
	sqfs_compressor_t *inner;
	int rc = sqfs_compressor_create(cfg, &inner);
	if (rc)
		return rc;
	if (!(*out = gg_sqfs_shrink_only(inner))) {
		sqfs_destroy(inner);
		return SQFS_ERROR_ALLOC;
	}
	return 0;
}

static int make_compressors(struct gg_sqfs_writer *w, const struct gg_sqfs_opts *o,
			    struct gg_err *err)
{
	sqfs_compressor_config_t cfg;
	int rc;
	if (o->comp == GG_IMAGE_COMP_GZIP) {
		int level = o->level ? o->level : 6;
		if (level < 1 || level > 12)
			return gg_err_set(err, GG_EUSAGE,
					  "gzip compression level %d out of range (1-12)", level);
		w->cmp = gg_sqfs_deflate_new(level, w->block_size);
		/* the tables' level is chosen when they are written (gg_sqfs_table_level) */
		w->level = level;
		if (!w->cmp)
			return gg_err_set(err, GG_ENOMEM,
					  "creating the deflate compressor: out of memory");
	} else {
		sqfs_compressor_config_init(&cfg, (SQFS_COMPRESSOR)o->comp, w->block_size, 0);
		if (o->comp == GG_IMAGE_COMP_LZ4) {
			if (o->level > 0)
				cfg.flags |= SQFS_COMP_FLAG_LZ4_HC;
		} else if (o->level) {
			cfg.level = (sqfs_u32)o->level;
		}
		rc = shrinking_compressor(&cfg, &w->cmp);
		if (rc == 0)
			rc = shrinking_compressor(&cfg, &w->mcmp);
		if (rc == SQFS_ERROR_ALLOC)
			return gg_err_set(err, GG_ENOMEM,
					  "creating the %s compressor: out of memory",
					  gg_image_comp_name((enum gg_image_comp)o->comp));
		if (rc) {
			if (rc == SQFS_ERROR_UNSUPPORTED || rc == SQFS_ERROR_ARG_INVALID)
				return gg_err_set(
					err, GG_EUSAGE, "%s: compression level %d is not supported",
					gg_image_comp_name((enum gg_image_comp)o->comp), o->level);
			return gg_err_set(err, GG_EFAIL, "creating the %s compressor: %s",
					  gg_image_comp_name((enum gg_image_comp)o->comp),
					  gg_sqfs_strerror(rc));
		}
	}
	if (o->comp == GG_IMAGE_COMP_GZIP) {
		w->uncmp = gg_sqfs_inflate_new(w->block_size);
		rc = w->uncmp ? 0 : SQFS_ERROR_ALLOC;
	} else {
		sqfs_compressor_config_init(&cfg, (SQFS_COMPRESSOR)o->comp, w->block_size,
					    SQFS_COMP_FLAG_UNCOMPRESS);
		rc = sqfs_compressor_create(&cfg, &w->uncmp);
	}
	if (rc)
		return gg_err_set(err, GG_EFAIL, "creating the %s decompressor: %s",
				  gg_image_comp_name((enum gg_image_comp)o->comp),
				  gg_sqfs_strerror(rc));
	return 0;
}

/* The compressor threads run as SCHED_BATCH, the calling thread (which reads the files
 * and writes the finished blocks in order) stays SCHED_OTHER: when a block is done the
 * feeder gets the CPU at once instead of waiting behind a worker for its time slice,
 * which left the workers without work for a third of the time on a busy machine. Same
 * nice value, same share of the machine; unprivileged threads may choose SCHED_BATCH.
 * The workers inherit the policy of the thread that starts them: a short-lived helper
 * thread, so the caller's own policy is never touched. */
struct starter {
	const sqfs_block_processor_desc_t *desc;
	sqfs_block_processor_t *proc;
	int rc;
};

static void *starter_main(void *arg)
{
	struct starter *st = arg;
	gg_compat_sched_batch(); /* this thread only; best effort */
	st->rc = sqfs_block_processor_create_ex(st->desc, &st->proc);
	return NULL;
}

static int start_workers(const sqfs_block_processor_desc_t *desc, sqfs_block_processor_t **out)
{
	struct starter st = {.desc = desc};
	pthread_t th;
	if (pthread_create(&th, NULL, starter_main, &st) != 0 || pthread_join(th, NULL) != 0)
		st.rc = sqfs_block_processor_create_ex(desc, &st.proc); /* no helper: plain */
	*out = st.proc;
	return st.rc;
}

/* The block processor and its compressor threads. With more than one, its compressor is
 * a copy of w->cmp behind the gate (gate.c). */
static int start_processor(struct gg_sqfs_writer *w, unsigned jobs, sqfs_file_t *file,
			   struct gg_err *err)
{
	sqfs_block_processor_desc_t desc;
	memset(&desc, 0, sizeof desc);
	desc.size = sizeof desc;
	desc.max_block_size = w->block_size;
	desc.num_workers = jobs;
	/* Blocks in flight. Finished blocks are taken in submission order, so one big block
	 * being compressed holds back everything behind it; a small file costs a whole
	 * item. With a short queue the workers ran dry behind the feeder on trees with
	 * many small files (measured on the benchmark tree: 16 and 64 items were 10-20%
	 * slower than 128). Each item is a 128 KiB buffer, reused: 128..512 items bound
	 * the memory at 16..64 MiB whatever the size of the sandbox. */
	unsigned backlog = jobs * 64;
	w->backlog = backlog < 128 ? 128 : backlog > 512 ? 512 : backlog;
	desc.max_backlog = w->backlog;
	desc.cmp = w->cmp;
	if (jobs > 1) {
		sqfs_compressor_t *inner = sqfs_copy(w->cmp);
		w->gate = inner ? gg_gate_new() : NULL;
		w->gcmp = w->gate ? gg_gate_wrap(w->gate, inner) : NULL;
		if (!w->gcmp) {
			sqfs_destroy(inner);
			return gg_err_set(err, GG_ENOMEM,
					  "starting the compressor threads: out of memory");
		}
		desc.cmp = w->gcmp;
	}
	desc.wr = w->bw;
	desc.tbl = w->frag;
	desc.file = file;
	desc.uncmp = w->uncmp;
	int rc = start_workers(&desc, &w->proc);
	return rc ? werr(w, err, rc, "starting the compressor threads") : 0;
}

static void gate(struct gg_sqfs_writer *w, uint64_t whole);

/* The tails' blocks (pack.c) go through the block processor as files of one block of
 * their own: compressed by its threads, written in order, deduplicated against the other
 * blocks. Their inodes, which only give the fragment table where they went, are the
 * packer's. Never taken as sparse: the table needs a block where each is. */
static int pack_submit(void *ud, const void *data, size_t n, sqfs_inode_generic_t **holder)
{
	struct gg_sqfs_writer *w = ud;
	if (w->gate)
		gate(w, 1);
	w->blocks++;
	w->items++;
	int rc = sqfs_block_processor_begin_file(w->proc, holder, NULL,
						 SQFS_BLK_DONT_FRAGMENT | SQFS_BLK_IGNORE_SPARSE);
	if (!rc)
		rc = sqfs_block_processor_append(w->proc, data, n);
	if (!rc)
		rc = sqfs_block_processor_end_file(w->proc);
	return rc;
}

static int pack_read(void *ud, uint64_t off, void *buf, size_t n)
{
	sqfs_file_t *f = &((struct gg_sqfs_writer *)ud)->file->base;
	return f->read_at(f, off, buf, n);
}

static int start_pack(struct gg_sqfs_writer *w, struct gg_err *err)
{
	struct gg_pack_io io = {pack_submit, pack_read, w->uncmp, w};
	w->tail = malloc(w->block_size);
	w->pack = w->tail ? gg_pack_new(w->block_size, &io) : NULL;
	return w->pack ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* The output: fd from base on, through the sqfs_file_t interface. */
static int make_file(struct gg_sqfs_writer *w, int fd, const char *path, uint64_t base,
		     struct gg_err *err)
{
	w->file = calloc(1, sizeof *w->file);
	if (!w->file)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	w->file->fd = fd;
	w->file->dw = gg_direct_new(fd, base);
	if (!w->file->dw) /* best effort: none when out of memory */
		w->file->wb = gg_writeback_new(fd);
	w->file->path = path;
	w->file->off = base;
	w->file->base.base.destroy = f_destroy;
	w->file->base.read_at = f_read_at;
	w->file->base.write_at = f_write_at;
	w->file->base.get_size = f_get_size;
	w->file->base.truncate = f_truncate;
	return 0;
}

int gg_sqfs_writer_new(int fd, const char *path, uint64_t base, const struct gg_sqfs_opts *o,
		       struct gg_sqfs_writer **out, struct gg_err *err)
{
	*out = NULL;
	struct gg_sqfs_writer *w = calloc(1, sizeof *w);
	if (!w)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	w->block_size = o->block_size ? o->block_size : SQFS_DEFAULT_BLOCK_SIZE;
	w->comp = o->comp ? o->comp : GG_IMAGE_COMP_GZIP;
	w->cancel = o->cancel;
	w->cancel_ud = o->cancel_ud;
	struct gg_sqfs_opts oo = *o;
	oo.comp = w->comp;
	int rc;
	if (make_compressors(w, &oo, err) < 0)
		goto fail;

	if (make_file(w, fd, path, base, err) < 0)
		goto fail;
	sqfs_file_t *file = &w->file->base;

	rc = sqfs_super_init(&w->super, w->block_size, 0, (SQFS_COMPRESSOR)w->comp);
	if (rc) {
		werr(w, err, rc, "squashfs superblock");
		goto fail;
	}
	rc = sqfs_super_write(&w->super, file);
	if (rc) {
		werr(w, err, rc, "writing the squashfs superblock");
		goto fail;
	}
	rc = w->cmp->write_options(w->cmp, file);
	if (rc < 0) {
		werr(w, err, rc, "writing the compressor options");
		goto fail;
	}
	if (rc > 0)
		w->super.flags |= SQFS_FLAG_COMPRESSOR_OPTIONS;

	w->bw = sqfs_block_writer_create(file, SQFS_DEVBLK_SIZE, 0);
	w->frag = sqfs_frag_table_create(0);
	w->ids = sqfs_id_table_create(0);
	w->xwr = sqfs_xattr_writer_create(0);
	if (!w->bw || !w->frag || !w->ids || !w->xwr) {
		gg_err_set(err, GG_ENOMEM, "setting up the squashfs writer: out of memory");
		goto fail;
	}
	if (start_processor(w, o->jobs ? o->jobs : 1, file, err) < 0 || start_pack(w, err) < 0)
		goto fail;
	*out = w;
	return 0;
fail:
	gg_sqfs_writer_free(w);
	return err->code;
}

void gg_sqfs_writer_free(struct gg_sqfs_writer *w)
{
	if (!w)
		return;
	/* After a failure or a cancel, blocks can still be queued in the worker pool, and
	 * libsquashfs 1.2 does not free those when the processor is destroyed: drain them
	 * first. Each failing sync retires at least one block; the bound is a safety net. */
	if (w->proc && !w->finished)
		for (int i = 0; i < 100000 && sqfs_block_processor_sync(w->proc) != 0; i++)
			;
	/* the processor first: it joins the workers that use the compressor and writer */
	sqfs_destroy(w->proc);
	gg_pack_free(w->pack);
	free(w->tail);
	sqfs_destroy(w->gcmp);
	gg_gate_free(w->gate);
	sqfs_destroy(w->dirw);
	sqfs_destroy(w->dm);
	sqfs_destroy(w->im);
	sqfs_destroy(w->xwr);
	sqfs_destroy(w->ids);
	sqfs_destroy(w->frag);
	sqfs_destroy(w->bw);
	sqfs_destroy(w->uncmp);
	sqfs_destroy(w->mcmp);
	sqfs_destroy(w->cmp);
	free(w->same);
	if (w->file)
		sqfs_destroy(&w->file->base);
	free(w);
}

uint32_t gg_sqfs_writer_block_size(const struct gg_sqfs_writer *w)
{
	return w->block_size;
}

uint64_t gg_sqfs_writer_size(const struct gg_sqfs_writer *w)
{
	return w->file ? w->file->size : 0;
}

int gg_sqfs_file_begin(struct gg_sqfs_writer *w, struct gg_inode *ino, struct gg_err *err)
{
	if (w->cur || ino->sq)
		return gg_err_set(err, GG_EFAIL, "squashfs writer: file data given twice");
	w->cur = ino;
	w->began = 0;
	w->fill = 0;
	return 0;
}

int gg_sqfs_file_same(struct gg_sqfs_writer *w, struct gg_inode *ino, struct gg_inode *same,
		      struct gg_err *err)
{
	if (w->cur || ino->sq)
		return gg_err_set(err, GG_EFAIL, "squashfs writer: file data given twice");
	if (w->nsame == w->samecap) {
		size_t ncap = w->samecap ? w->samecap * 2 : 64;
		struct same *ns = realloc(w->same, ncap * sizeof *ns);
		if (!ns)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		w->same = ns;
		w->samecap = ncap;
	}
	w->same[w->nsame++] = (struct same){ino, same};
	return 0;
}

/* Each copy gets its own inode with the data of the file it copies, which was fed and
 * is finished now: blocks, fragment, size (the rest is set when it is serialised). */
static int copy_same(struct gg_sqfs_writer *w, struct gg_err *err)
{
	for (size_t k = 0; k < w->nsame; k++) {
		const sqfs_inode_generic_t *of = w->same[k].of->sq;
		if (!of)
			return gg_err_set(err, GG_EFAIL,
					  "squashfs writer: a copy of a file not fed");
		size_t n = sizeof *of + of->payload_bytes_available;
		sqfs_inode_generic_t *in = malloc(n);
		if (!in)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		memcpy(in, of, n);
		w->same[k].ino->sq = in;
	}
	return 0;
}

/* Before an append that queues whole blocks: when the queue would be nearly full, the
 * processor would put this thread to sleep until the oldest item is done, and wake it
 * at every item a compressor finishes. Sleep on the gate instead (gg_sqfs_gate_due says
 * when and how long), then take the finished blocks back in one go.
 * The queue is estimated from what was queued and what the processor took back (its
 * stats): whole blocks, and the sentinel item that ends each file of whole blocks
 * (its tail is packed here), which the stats do not count: it is out once a block
 * queued after it is. Sparse blocks (never compressed) count as done. */
static void gate(struct gg_sqfs_writer *w, uint64_t whole)
{
	const sqfs_block_processor_stats_t *st = sqfs_block_processor_get_stats(w->proc);
	uint64_t taken = st->data_block_count + st->sparse_block_count;
	while (w->sent_n && w->sent[w->sent_head] < taken) {
		w->sent_head = (w->sent_head + 1) % SENT_MAX;
		w->sent_n--;
		w->sent_done++;
	}
	if (w->items + whole + 2 < taken + w->sent_done + w->backlog)
		return; /* room left: the append will not wait */
	uint64_t until;
	if (gg_sqfs_gate_due(w->blocks - st->sparse_block_count, gg_gate_done(w->gate), w->backlog,
			     &until))
		gg_gate_wait(w->gate, until);
}

/* The gate's two marks: the feeder sleeps only once more than three quarters of the
 * queue are blocks not compressed yet, and then until a quarter are left, so it refills
 * half a queue in one go; the compressors have that quarter meanwhile. With one mark
 * (sleep when more than 64 of 128 were left, wake at 64) the queue stayed at the mark:
 * the feeder slept after nearly every block (2,242 times on the Python tree), and each
 * time a compressor woke it. With 96 and 32: futex calls 38k -> 26k, context switches
 * 21.5k -> 12.4k; medians of alternated runs (5 on the Python tree, 3 on the others):
 * Python tree 4.25 -> 4.13 s, debootstrap 3.92 -> 3.84 s, tiny files 8.67 -> 8.01 s
 * (80 and 16 measured alike, 112 and 16 worse); the same images. */
int gg_sqfs_gate_due(uint64_t live, uint64_t done, size_t backlog, uint64_t *until)
{
	uint64_t high = backlog * 3 / 4, low = backlog / 4;
	if (live <= done || live - done <= high)
		return 0;
	*until = live - low;
	return 1;
}

/* The sentinel the block processor queues at the end of a file of whole blocks. */
static void sentinel(struct gg_sqfs_writer *w)
{
	if (w->sent_n == SENT_MAX) { /* more than a queue: the oldest is out */
		w->sent_head = (w->sent_head + 1) % SENT_MAX;
		w->sent_n--;
		w->sent_done++;
	}
	w->sent[(w->sent_head + w->sent_n++) % SENT_MAX] = w->blocks;
	w->items++;
}

/* Whole blocks data[0..n) of the current file to the block processor. */
static int queue_whole(struct gg_sqfs_writer *w, const void *data, size_t n)
{
	int rc = 0;
	if (!w->began && !(rc = sqfs_block_processor_begin_file(w->proc, &w->cur->sq, NULL, 0)))
		w->began = 1;
	if (rc)
		return rc;
	uint64_t whole = n / w->block_size;
	if (w->gate)
		gate(w, whole);
	w->blocks += whole;
	w->items += whole;
	return sqfs_block_processor_append(w->proc, data, n);
}

/* The file's whole blocks go to the block processor (straight from data when they
 * start at a block's start), the rest of it waits in w->tail for the next data or the
 * end of the file. */
int gg_sqfs_file_append(struct gg_sqfs_writer *w, const void *data, size_t len, struct gg_err *err)
{
	const unsigned char *d = data;
	int rc = 0;
	while (len && !rc) {
		if (!w->fill && len >= w->block_size) {
			size_t n = len - len % w->block_size;
			rc = queue_whole(w, d, n);
			d += n;
			len -= n;
			continue;
		}
		size_t c = w->block_size - w->fill < len ? w->block_size - w->fill : len;
		memcpy(w->tail + w->fill, d, c);
		w->fill += (uint32_t)c;
		d += c;
		len -= c;
		if (w->fill == w->block_size) {
			rc = queue_whole(w, w->tail, w->block_size);
			w->fill = 0;
		}
	}
	return rc ? werr(w, err, rc, "compressing file data") : 0;
}

/* A file that never reached a whole block: its inode, made as the block processor
 * makes one. */
static int small_inode(struct gg_inode *ino)
{
	if (!(ino->sq = calloc(1, sizeof *ino->sq)))
		return SQFS_ERROR_ALLOC;
	ino->sq->base.type = SQFS_INODE_FILE;
	return sqfs_inode_set_frag_location(ino->sq, 0xFFFFFFFF, 0xFFFFFFFF);
}

/* The file's tail into a fragment block, and its size and place into its inode. */
static int end_tail(struct gg_sqfs_writer *w, struct gg_inode *ino)
{
	sqfs_u32 index, offset;
	sqfs_u64 size;
	int rc = gg_pack_add(w->pack, w->tail, w->fill, &index, &offset);
	if (!rc)
		rc = sqfs_inode_get_file_size(ino->sq, &size);
	if (!rc)
		rc = sqfs_inode_set_file_size(ino->sq, size + w->fill);
	if (!rc)
		rc = sqfs_inode_set_frag_location(ino->sq, index, offset);
	return rc;
}

int gg_sqfs_file_end(struct gg_sqfs_writer *w, struct gg_err *err)
{
	struct gg_inode *ino = w->cur;
	if (!ino)
		return gg_err_set(err, GG_EFAIL, "squashfs writer: no file data begun");
	int rc = w->began ? sqfs_block_processor_end_file(w->proc) : small_inode(ino);
	if (w->began)
		sentinel(w);
	if (!rc && w->fill)
		rc = end_tail(w, ino);
	w->cur = NULL;
	w->began = 0;
	w->fill = 0;
	return rc ? werr(w, err, rc, "compressing file data") : 0;
}

static int live(const struct gg_node *n)
{
	return !n->inode->skipped;
}

/* Count names per inode and number inodes children-first (root last): tree walks that
 * leave out what was skipped. */
static int count_link(struct gg_node *n, void *ud)
{
	(void)ud;
	if (!live(n))
		return GG_WALK_SKIP;
	n->inode->nlink++;
	return 0;
}

static int skip_dead(struct gg_node *n, void *ud)
{
	(void)ud;
	return live(n) ? 0 : GG_WALK_SKIP;
}

static int number(struct gg_node *n, void *ud)
{
	struct gg_sqfs_writer *w = ud;
	if (S_ISDIR(n->inode->mode) || !n->inode->ino)
		n->inode->ino = ++w->next_ino;
	return 0;
}

static uint32_t clamp_time(const struct gg_sqfs_writer *w, int64_t t)
{
	if (w->clamp >= 0 && t > w->clamp)
		t = w->clamp;
	if (t < 0)
		return 0;
	if (t > (int64_t)UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)t;
}

static int xattr_index(struct gg_sqfs_writer *w, const struct gg_inode *ino, sqfs_u32 *idx,
		       struct gg_err *err)
{
	*idx = 0xFFFFFFFF;
	if (!ino->xattrs_len)
		return 0;
	int rc = sqfs_xattr_writer_begin(w->xwr, 0);
	size_t off = 0;
	char key[256];
	while (!rc && off < ino->xattrs_len) {
		uint16_t kl;
		uint32_t vl;
		memcpy(&kl, ino->xattrs + off, 2);
		if (kl >= sizeof key) {
			rc = SQFS_ERROR_OVERFLOW;
			break;
		}
		memcpy(key, ino->xattrs + off + 2, kl);
		key[kl] = '\0';
		memcpy(&vl, ino->xattrs + off + 2 + kl, 4);
		rc = sqfs_xattr_writer_add(w->xwr, key, ino->xattrs + off + 6 + kl, vl);
		off += 6 + (size_t)kl + vl;
	}
	if (!rc)
		rc = sqfs_xattr_writer_end(w->xwr, idx);
	if (rc)
		return werr(w, err, rc, "storing extended attributes");
	return 0;
}

static sqfs_inode_generic_t *plain_inode(const struct gg_inode *ino)
{
	size_t extra = S_ISLNK(ino->mode) && ino->target ? strlen(ino->target) : 0;
	sqfs_inode_generic_t *in = calloc(1, sizeof *in + extra + 1);
	if (!in)
		return NULL;
	switch (ino->mode & S_IFMT) {
	case S_IFSOCK:
		in->base.type = SQFS_INODE_SOCKET;
		in->data.ipc.nlink = ino->nlink;
		break;
	case S_IFIFO:
		in->base.type = SQFS_INODE_FIFO;
		in->data.ipc.nlink = ino->nlink;
		break;
	case S_IFLNK:
		in->base.type = SQFS_INODE_SLINK;
		in->data.slink.nlink = ino->nlink;
		in->data.slink.target_size = (sqfs_u32)extra;
		in->payload_bytes_available = (sqfs_u32)extra;
		in->payload_bytes_used = (sqfs_u32)extra;
		memcpy(in->extra, ino->target, extra);
		break;
	case S_IFBLK:
		in->base.type = SQFS_INODE_BDEV;
		in->data.dev.nlink = ino->nlink;
		in->data.dev.devno = ino->rdev;
		break;
	case S_IFCHR:
		in->base.type = SQFS_INODE_CDEV;
		in->data.dev.nlink = ino->nlink;
		in->data.dev.devno = ino->rdev;
		break;
	case S_IFREG: /* a file whose data never came (e.g. an empty hard-link target) */
		in->base.type = SQFS_INODE_FILE;
		in->data.file.fragment_index = 0xFFFFFFFF;
		in->data.file.fragment_offset = 0xFFFFFFFF;
		break;
	default: free(in); return NULL;
	}
	return in;
}

static int write_inode(struct gg_sqfs_writer *w, struct gg_inode *ino, sqfs_inode_generic_t *in,
		       struct gg_err *err)
{
	in->base.mode = (sqfs_u16)ino->mode;
	in->base.mod_time = clamp_time(w, ino->mtime);
	in->base.inode_number = ino->ino;
	int rc = sqfs_id_table_id_to_index(w->ids, ino->uid, &in->base.uid_idx);
	if (!rc)
		rc = sqfs_id_table_id_to_index(w->ids, ino->gid, &in->base.gid_idx);
	if (rc)
		return werr(w, err, rc, "storing owner ids");
	sqfs_u64 block;
	sqfs_u32 offset;
	sqfs_meta_writer_get_position(w->im, &block, &offset);
	ino->ref = (block << 16) | offset;
	rc = sqfs_meta_writer_write_inode(w->im, in);
	if (rc)
		return werr(w, err, rc, "writing the inode table");
	w->ninodes++;
	return 0;
}

struct ser {
	struct gg_sqfs_writer *w;
	struct gg_freeze_result *res;
	struct gg_err *err;
	uint32_t root_parent;
};

/* A non-directory: its inode, once for all its names. */
static int serialize_leaf(struct ser *z, struct gg_inode *ki)
{
	struct gg_sqfs_writer *w = z->w;
	struct gg_freeze_result *res = z->res;
	struct gg_err *err = z->err;
	if (ki->visited) {
		res->hardlinks++;
		return 0;
	}
	ki->visited = 1;
	sqfs_u32 xidx;
	if (xattr_index(w, ki, &xidx, err) < 0)
		return err->code;
	sqfs_inode_generic_t *in;
	int rc = 0;
	if (S_ISREG(ki->mode) && ki->sq) {
		in = ki->sq;
		ki->sq = NULL;
		rc = sqfs_inode_set_xattr_index(in, xidx);
		if (!rc) {
			if (in->base.type == SQFS_INODE_EXT_FILE) {
				in->data.file_ext.nlink = ki->nlink;
			} else if (ki->nlink > 1) {
				rc = sqfs_inode_make_extended(in);
				in->data.file_ext.nlink = ki->nlink;
			}
		}
		sqfs_u64 sz = 0;
		sqfs_inode_get_file_size(in, &sz);
		res->data_bytes += sz;
	} else {
		in = plain_inode(ki);
		if (!in)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		if (xidx != 0xFFFFFFFF)
			rc = sqfs_inode_set_xattr_index(in, xidx);
	}
	if (S_ISREG(ki->mode))
		res->files++;
	else if (S_ISLNK(ki->mode))
		res->symlinks++;
	else
		res->specials++;
	if (rc) {
		sqfs_free(in);
		return werr(w, err, rc, "building an inode");
	}
	rc = write_inode(w, ki, in, err);
	sqfs_free(in);
	return rc;
}

/* A directory, after its children (their inode references go into its listing). */
static int serialize_dir(struct ser *z, struct gg_node *n)
{
	struct gg_sqfs_writer *w = z->w;
	struct gg_err *err = z->err;
	uint32_t subdirs = 0;
	int rc = sqfs_dir_writer_begin(w->dirw, 0);
	for (size_t i = 0; !rc && i < n->nkids; i++) {
		struct gg_node *k = n->kids[i];
		if (!live(k))
			continue;
		if (S_ISDIR(k->inode->mode))
			subdirs++;
		rc = sqfs_dir_writer_add_entry(w->dirw, k->name, k->inode->ino, k->inode->ref,
					       (sqfs_u16)k->inode->mode);
	}
	if (!rc)
		rc = sqfs_dir_writer_end(w->dirw);
	if (rc)
		return werr(w, err, rc, "writing a directory listing");
	sqfs_u32 xidx;
	if (xattr_index(w, n->inode, &xidx, err) < 0)
		return err->code;
	uint32_t parent_ino = n->parent ? n->parent->inode->ino : z->root_parent;
	sqfs_inode_generic_t *in = sqfs_dir_writer_create_inode(w->dirw, 0, xidx, parent_ino);
	if (!in)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	/* libsquashfs counts every entry; Unix (and mksquashfs) count "." ".." and subdirs */
	if (in->base.type == SQFS_INODE_DIR)
		in->data.dir.nlink = 2 + subdirs;
	else
		in->data.dir_ext.nlink = 2 + subdirs;
	z->res->dirs++;
	rc = write_inode(w, n->inode, in, err);
	sqfs_free(in);
	return rc;
}

static int serialize(struct gg_node *n, void *ud)
{
	struct ser *z = ud;
	if (z->w->cancel && (z->w->nser++ & 1023) == 0 && z->w->cancel(z->w->cancel_ud))
		return gg_err_set(z->err, GG_EINTR, "interrupted");
	if (S_ISDIR(n->inode->mode))
		return serialize_dir(z, n);
	return serialize_leaf(z, n->inode);
}

static int pad_to_block(struct gg_sqfs_writer *w, struct gg_err *err)
{
	uint64_t size = w->file->size;
	size_t pad = (size_t)(size % SQFS_DEVBLK_SIZE);
	if (!pad)
		return 0;
	static const unsigned char zero[SQFS_DEVBLK_SIZE];
	int rc = w->file->base.write_at(&w->file->base, size, zero, SQFS_DEVBLK_SIZE - pad);
	if (rc)
		return werr(w, err, rc, "padding the squashfs");
	return 0;
}

/* The gzip level of the inode, directory and other tables. They are written on one
 * thread after the data, while the other cores idle. At libdeflate's level 12 they come
 * out about 4% smaller than at 6 for about 3 us more CPU per inode: on the bench's 500k
 * tiny files, where the tables are a third of the image, that is 229 kB of 16 MB (1.4%)
 * for 1.6 s; on its Python tree, where they are half a percent of it, 20 kB of 178 MB
 * (0.01%) for 0.2 s, 4% of the wall time. Level 11 makes images of the same size as 12
 * (within the 4 KiB the squashfs is padded to, on the 500k tiny files, 50k of them, the
 * Python tree, the debootstrap tree and /usr/share/man) in 0.24 s less on the 500k tiny
 * files (5.50 -> 5.27 s, medians of 4 alternated runs); level 10 is 45 kB larger there.
 * So level 11 where the tables are (by about 16 bytes an inode) at least 1% of the image,
 * whose data is data_bytes; else the data's own level. Never above the data's level when
 * that was asked lower than the default; level 12 asked is kept. */
int gg_sqfs_table_level(int level, uint64_t data_bytes, uint64_t inodes)
{
	if (level < 6 || level >= 11)
		return level;
	return inodes * 16 * 100 >= data_bytes ? 11 : level;
}

/* The data is written: free the block processor (its buffers, the workers' compressors)
 * and set up the writers of the inode and directory tables, with the tables' own
 * compressor for gzip (made only now: at levels 10 to 12 it takes 8.8 MiB). */
static int start_tables(struct gg_sqfs_writer *w, struct gg_err *err)
{
	sqfs_destroy(w->proc);
	w->proc = NULL;
	sqfs_file_t *file = &w->file->base;
	int mlevel =
		w->level ? gg_sqfs_table_level(w->level, file->get_size(file), w->next_ino) : 0;
	if (mlevel && !(w->mcmp = gg_sqfs_deflate_new(mlevel, w->block_size)))
		return gg_err_set(err, GG_ENOMEM, "writing the tables: out of memory");
	w->im = sqfs_meta_writer_create(file, w->mcmp, 0);
	w->dm = sqfs_meta_writer_create(file, w->mcmp, SQFS_META_WRITER_KEEP_IN_MEMORY);
	w->dirw = w->dm ? sqfs_dir_writer_create(w->dm, 0) : NULL;
	if (!w->im || !w->dm || !w->dirw)
		return gg_err_set(err, GG_ENOMEM, "writing the tables: out of memory");
	return 0;
}

int gg_sqfs_writer_finish(struct gg_sqfs_writer *w, struct gg_tree *t, uint32_t mkfs_time,
			  int64_t clamp_time_, uint64_t *size, struct gg_freeze_result *res,
			  struct gg_err *err)
{
	sqfs_file_t *file = &w->file->base;
	int rc = gg_pack_flush(w->pack);
	if (!rc)
		rc = sqfs_block_processor_finish(w->proc);
	if (!rc)
		rc = gg_pack_table(w->pack, w->frag);
	if (rc)
		return werr(w, err, rc, "compressing file data");
	w->finished = 1;
	if (copy_same(w, err) < 0)
		return err->code;
	res->duplicates = w->nsame;
	w->clamp = clamp_time_;
	for (struct gg_inode *i = t->all; i; i = i->next_all) {
		i->nlink = 0;
		i->ino = 0;
		i->visited = 0;
	}
	gg_image_tree_walk(t->root, count_link, NULL, NULL);
	w->next_ino = 0;
	gg_image_tree_walk(t->root, skip_dead, number, w);
	if (start_tables(w, err) < 0)
		return err->code;

	w->super.inode_table_start = file->get_size(file);
	struct ser z = {w, res, err, w->next_ino + 1};
	if (gg_image_tree_walk(t->root, skip_dead, serialize, &z) != 0)
		return err->code;
	if ((rc = sqfs_meta_writer_flush(w->im)) || (rc = sqfs_meta_writer_flush(w->dm)))
		return werr(w, err, rc, "writing the inode and directory tables");
	w->super.root_inode_ref = t->root->inode->ref;
	w->super.directory_table_start = file->get_size(file);
	if ((rc = sqfs_meta_write_write_to_file(w->dm)))
		return werr(w, err, rc, "writing the directory table");
	if ((rc = sqfs_frag_table_write(w->frag, file, &w->super, w->mcmp)))
		return werr(w, err, rc, "writing the fragment table");
	if ((rc = sqfs_id_table_write(w->ids, file, &w->super, w->mcmp)))
		return werr(w, err, rc, "writing the ID table");
	if ((rc = sqfs_xattr_writer_flush(w->xwr, file, &w->super, w->mcmp)))
		return werr(w, err, rc, "writing the xattr table");
	w->super.inode_count = w->ninodes;
	w->super.modification_time = mkfs_time;
	w->super.bytes_used = file->get_size(file);
	if ((rc = sqfs_super_write(&w->super, file)))
		return werr(w, err, rc, "writing the squashfs superblock");
	if (pad_to_block(w, err) < 0)
		return err->code;
	if (w->file->dw && gg_direct_flush(w->file->dw) < 0) {
		if (!w->file->err)
			w->file->err = errno;
		return werr(w, err, SQFS_ERROR_IO, "writing the squashfs");
	}
	*size = w->file->size;
	return 0;
}
