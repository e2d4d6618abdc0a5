/* Read-ahead for the directory reader: threads that open the sandbox's files in the
 * order they will be fed, check them with fstat, ask for the size of their extended
 * attribute list and read the first bytes, a bounded number of files ahead of the thread
 * that feeds them; they also close what the feeding thread is done with. On trees of many
 * small files the feeding thread spent most of its time in those system calls (500k tiny
 * files: 7 s of system time against half a second of compression), with the compressor
 * threads idle; one thread doing them all became the next bottleneck, so four share them:
 * with the page cache cold they wait on the disk, and more reads in flight help there
 * (500k tiny files read from disk: 36 s with two, 27 s with four; the same with the
 * cache warm). Each thread also leaves the disk reading up to 8 files (AHEAD_PENDING)
 * while it opens its next ones: it asks for their first bytes without waiting
 * (RWF_NOWAIT), which starts the disk on those not in the page cache, and reads them
 * later. From a cold page cache, medians of 3 alternated runs: the bench's 500k tiny
 * files 17.74 -> 11.50 s, its Python tree 4.89 -> 4.23 s; warm, the same calls and times
 * as before.
 *
 * The threads decide nothing: whatever they find (a descriptor, an errno, a short read) is
 * handed over as it is, and the feeding thread checks and reports it exactly as it would
 * have done itself, in the same order, so the image and every message are the same with
 * or without them. They touch only the tree's names and parent links, which do not change
 * while the data is fed. */
#include "image/internal.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define AHEAD_THREADS 4
#define AHEAD_BYTES   (32u << 10) /* read ahead of each file: most small files whole */
/* Files held open ahead at most, a multiple of AHEAD_THREADS. Each thread sleeps when its
 * slots are full until half of them are free again, so more slots mean fewer sleeps: on
 * the bench's 500k tiny files 128 slots took 4.5% less wall time than 64 (5.50 against
 * 5.76 s, medians of 5 alternated runs; 256: 5.41 s), the Python tree the same (3.23 s),
 * for 2 MiB more of peak RSS there (each slot keeps AHEAD_BYTES). */
#define AHEAD_SLOTS_MAX 128
/* Descriptors left under the soft RLIMIT_NOFILE for everything else (standard streams,
 * the output, the root, the scan's directory, libraries): a limit below
 * AHEAD_FD_RESERVE + 2 * AHEAD_THREADS means no read-ahead, not "Too many open files". */
#define AHEAD_FD_RESERVE 64
/* Files each thread leaves the disk reading while it opens its next ones (with the page
 * cache cold), at most: AHEAD_THREADS times this many reads in flight instead of one a
 * thread. Fewer when a thread has fewer slots (a lower RLIMIT_NOFILE). */
#define AHEAD_PENDING 8

/* A slot is handed over by its ready flag alone (seq_cst: each side stores its flag before
 * it loads the other's, so a sleeper is never missed); the mutex is taken only by a
 * thread that must sleep and by the one that wakes it, and a thread wakes the reader only
 * for the file the reader sleeps for. With the mutex taken four times per file by five
 * threads, freezing the bench's 500,000 tiny files made 2.08M futex calls and took 12.2 s;
 * this way 1.36M and 11.4 s (2 cores). */
struct slot {
	struct gg_ahead_file f;
	size_t seq;
	atomic_int ready;
};

/* Thread k opens files k, k + AHEAD_THREADS, ... into slots k, k + AHEAD_THREADS, ...
 * (file i in slot i % nslots): its slots are its own, and the reader empties them
 * in order, so the one it waits for is free once half of its slots are. */
struct reader {
	struct gg_ahead *a;
	unsigned k;
	pthread_t th;
	pthread_cond_t cv;
	int started;
	atomic_int waits;
	atomic_size_t nready; /* of its slots */
};

struct gg_ahead {
	int rootfd, use_openat2;
	atomic_int nowait;    /* reads that do not wait for the disk work here (RWF_NOWAIT) */
	size_t pending_max;   /* of a thread's files left pending: fewer than its slots */
	atomic_size_t waited; /* files whose first bytes were not in the page cache */
	struct gg_node *const *nodes;
	size_t n;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the reader's */
	atomic_int stop;
	atomic_size_t reader_wants; /* 1 + the file the reader sleeps for, 0 when it does not */
	struct reader th[AHEAD_THREADS];
	struct slot *slots;
	size_t nslots; /* a multiple of AHEAD_THREADS */
};

size_t gg_image_ahead_slots_for(uint64_t fd_limit)
{
	if (fd_limit >= AHEAD_FD_RESERVE + AHEAD_SLOTS_MAX)
		return AHEAD_SLOTS_MAX;
	if (fd_limit < AHEAD_FD_RESERVE + 2 * AHEAD_THREADS)
		return 0;
	return (size_t)(fd_limit - AHEAD_FD_RESERVE) / AHEAD_THREADS * AHEAD_THREADS;
}

size_t gg_image_ahead_slots(const struct gg_ahead *a)
{
	return a->nslots;
}

size_t gg_image_ahead_waited(const struct gg_ahead *a)
{
	return a->waited;
}

void gg_image_ahead_open(int rootfd, const char *rel, int use_openat2, struct gg_ahead_file *f)
{
	/* O_NONBLOCK: a FIFO put in the file's place must not block the open */
	int fl = O_RDONLY | O_NONBLOCK;
	int noatime = gg_compat_o_noatime();
	f->fd = gg_image_open_beneath(rootfd, rel, fl | noatime, use_openat2);
	if (f->fd < 0 && errno == EPERM && noatime) /* O_NOATIME on a file of another user */
		f->fd = gg_image_open_beneath(rootfd, rel, fl, use_openat2);
	f->err_no = f->fd < 0 ? errno : 0;
	f->st_ok = f->fd >= 0 && fstat(f->fd, &f->st) == 0 && S_ISREG(f->st.st_mode);
	/* most files have no extended attributes: the size of their list says so at once */
	f->xattrs = f->st_ok ? gg_compat_listxattr(f->fd, NULL, NULL, 0) : -1;
}

/* What the slot held before (its descriptor, given back by the reader) is let go here,
 * off the reader's thread. */
static void slot_clear(struct gg_ahead_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->rel);
	f->rel = NULL;
}

/* Read f's first bytes from from on, waiting for the disk: what a read without waiting
 * left. An error keeps what was read: the reader meets it again. */
static void read_rest(struct gg_ahead_file *f, size_t from, size_t want)
{
	ssize_t got;
	do
		got = pread(f->fd, f->data + from, want - from, (off_t)from);
	while (got < 0 && errno == EINTR);
	f->len = from + (got > 0 ? (size_t)got : 0);
}

/* Open file i into f and read its first bytes if the page cache has them. 1 when the
 * rest must be read (f->len so far of *want), 0 when f is complete. */
static int fill(struct gg_ahead *a, struct gg_ahead_file *f, size_t i, size_t *want)
{
	slot_clear(f);
	f->err_no = 0;
	f->st_ok = 0;
	f->xattrs = -1;
	f->len = 0;
	f->rel = gg_image_node_path(a->nodes[i]);
	if (!f->rel) {
		f->err_no = ENOMEM;
		return 0;
	}
	gg_image_ahead_open(a->rootfd, f->rel, a->use_openat2, f);
	/* sparse files are read extent by extent by the feeding thread */
	if (!f->st_ok || f->st.st_size == 0 ||
	    (uint64_t)f->st.st_blocks * 512 < (uint64_t)f->st.st_size)
		return 0;
	*want = (uint64_t)f->st.st_size < AHEAD_BYTES ? (size_t)f->st.st_size : AHEAD_BYTES;
	if (!a->nowait) {
		read_rest(f, 0, *want);
		return 0;
	}
	/* Not in the page cache: the kernel starts reading it (readahead) and says EAGAIN;
	 * the thread opens its next files meanwhile and comes back (finish_due). */
	ssize_t got;
	do
		got = gg_compat_pread_nowait(f->fd, f->data, *want, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0 && (errno == EOPNOTSUPP || errno == EINVAL)) {
		a->nowait = 0; /* this kernel or file system: wait as before */
		read_rest(f, 0, *want);
		return 0;
	}
	if (got < 0)
		return errno == EAGAIN; /* else an error the reader meets again */
	f->len = (size_t)got;
	/* short: partly cached (or the file shrank, which the reader finds out) */
	return got > 0 && (size_t)got < *want;
}

static void hand_over(struct gg_ahead *a, struct reader *r, struct slot *s, size_t i)
{
	s->seq = i;
	r->nready++;
	s->ready = 1;
	if (a->reader_wants == i + 1) {
		pthread_mutex_lock(&a->mu);
		pthread_cond_signal(&a->cv);
		pthread_mutex_unlock(&a->mu);
	}
}

/* A thread's files whose first bytes the disk is still reading, oldest first. */
struct pending {
	struct {
		struct slot *s;
		size_t i, want;
	} f[AHEAD_PENDING];
	unsigned head, n;
};

/* Read the oldest pending file to its end and hand it over. */
static void finish_oldest(struct gg_ahead *a, struct reader *r, struct pending *p)
{
	struct slot *s = p->f[p->head].s;
	read_rest(&s->f, s->f.len, p->f[p->head].want);
	a->waited++;
	hand_over(a, r, s, p->f[p->head].i);
	p->head = (p->head + 1) % AHEAD_PENDING;
	p->n--;
}

/* Finish the pending files the reader waits for, and those opened pending_max - 1 or
 * more of this thread's files before newest: with newest's successor at most
 * pending_max are pending, so a slot is never filled again while pending and the reader
 * never waits long. */
static void finish_due(struct gg_ahead *a, struct reader *r, struct pending *p, size_t newest)
{
	while (p->n) {
		size_t oldest = p->f[p->head].i;
		size_t w = a->reader_wants; /* 1 + the file the reader sleeps for */
		int wanted = w > oldest && w - 1 <= newest && (w - 1) % AHEAD_THREADS == r->k;
		if (oldest + (a->pending_max - 1) * AHEAD_THREADS > newest && !wanted)
			return;
		finish_oldest(a, r, p);
	}
}

static void *ahead_main(void *arg)
{
	struct reader *r = arg;
	struct gg_ahead *a = r->a;
	struct pending p = {.n = 0};
	/* as the compressor threads (squashfs.c): the feeding thread goes first */
	gg_compat_sched_batch(); /* this thread only; best effort */
	for (size_t i = r->k; i < a->n; i += AHEAD_THREADS) {
		struct slot *s = &a->slots[i % a->nslots];
		if (s->ready && !a->stop) {
			while (p.n) /* the reader may wait for them: never sleep on them */
				finish_oldest(a, r, &p);
			pthread_mutex_lock(&a->mu);
			r->waits = 1;
			while (s->ready && !a->stop)
				pthread_cond_wait(&r->cv, &a->mu);
			r->waits = 0;
			pthread_mutex_unlock(&a->mu);
		}
		if (a->stop)
			return NULL;
		size_t want = 0;
		if (!fill(a, &s->f, i, &want)) {
			hand_over(a, r, s, i);
		} else {
			unsigned t = (p.head + p.n++) % AHEAD_PENDING;
			p.f[t].s = s;
			p.f[t].i = i;
			p.f[t].want = want;
		}
		finish_due(a, r, &p, i);
	}
	while (p.n && !a->stop)
		finish_oldest(a, r, &p);
	return NULL;
}

static void ahead_free(struct gg_ahead *a)
{
	for (size_t k = 0; a->slots && k < a->nslots; k++) {
		slot_clear(&a->slots[k].f);
		free(a->slots[k].f.data);
	}
	free(a->slots);
	for (unsigned k = 0; k < AHEAD_THREADS; k++)
		pthread_cond_destroy(&a->th[k].cv);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static int ahead_init(struct gg_ahead *a)
{
	if (!(a->slots = calloc(a->nslots, sizeof *a->slots)))
		return -1;
	for (size_t i = 0; i < a->nslots; i++)
		a->slots[i].f.fd = -1;
	for (size_t i = 0; i < a->nslots; i++)
		if (!(a->slots[i].f.data = malloc(AHEAD_BYTES)))
			return -1;
	return 0;
}

/* The slots the soft descriptor limit leaves room for. */
static size_t slots_now(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return AHEAD_SLOTS_MAX;
	return gg_image_ahead_slots_for((uint64_t)rl.rlim_cur);
}

struct gg_ahead *gg_image_ahead_start(int rootfd, int use_openat2, struct gg_node *const *nodes,
				      size_t n)
{
	size_t nslots = slots_now();
	struct gg_ahead *a = nslots ? calloc(1, sizeof *a) : NULL;
	if (!a)
		return NULL;
	a->nslots = nslots;
	a->rootfd = rootfd;
	a->use_openat2 = use_openat2;
	a->nowait = 1;
	a->pending_max = nslots / AHEAD_THREADS - 1; /* nslots is at least 2 * AHEAD_THREADS */
	if (a->pending_max > AHEAD_PENDING)
		a->pending_max = AHEAD_PENDING;
	a->nodes = nodes;
	a->n = n;
	/* mutex and condition variables need no clean-up when never used (Linux) */
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	for (unsigned k = 0; k < AHEAD_THREADS; k++) {
		a->th[k].a = a;
		a->th[k].k = k;
		pthread_cond_init(&a->th[k].cv, NULL);
	}
	if (ahead_init(a) < 0) {
		ahead_free(a);
		return NULL;
	}
	for (unsigned k = 0; k < AHEAD_THREADS; k++) {
		if (pthread_create(&a->th[k].th, NULL, ahead_main, &a->th[k]) != 0) {
			gg_image_ahead_stop(a);
			return NULL;
		}
		a->th[k].started = 1;
	}
	return a;
}

struct gg_ahead_file *gg_image_ahead_get(struct gg_ahead *a, size_t i)
{
	struct slot *s = &a->slots[i % a->nslots];
	if (!s->ready) {
		pthread_mutex_lock(&a->mu);
		a->reader_wants = i + 1;
		while (!s->ready)
			pthread_cond_wait(&a->cv, &a->mu);
		a->reader_wants = 0;
		pthread_mutex_unlock(&a->mu);
	}
	return &s->f; /* ready, so s->seq == i: file i - nslots was given back */
}

void gg_image_ahead_done(struct gg_ahead *a, struct gg_ahead_file *f)
{
	struct slot *s = (struct slot *)f; /* f is the slot's first member */
	struct reader *r = &a->th[s->seq % AHEAD_THREADS];
	r->nready--;
	s->ready = 0;
	if (r->waits && r->nready <= a->nslots / AHEAD_THREADS / 2) {
		pthread_mutex_lock(&a->mu);
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&a->mu);
	}
}

void gg_image_ahead_stop(struct gg_ahead *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	for (unsigned k = 0; k < AHEAD_THREADS; k++)
		pthread_cond_signal(&a->th[k].cv);
	pthread_mutex_unlock(&a->mu);
	for (unsigned k = 0; k < AHEAD_THREADS; k++)
		if (a->th[k].started)
			pthread_join(a->th[k].th, NULL);
	ahead_free(a);
}
