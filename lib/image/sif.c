/* SIF (Singularity Image Format, spec "01"): the packed little-endian header and
 * descriptors, a writer that lays objects out the way apptainer does (but lets a
 * partition be written in place first), a reader and a structural verifier. Layout
 * facts: /work/shared/notes/sif.md section 1. */
#include "image/internal.h"
#include "image/partfile.h"

#include <stdarg.h>
#include <stdio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <sqfs/id_table.h>
#include <sqfs/io.h>
#include <sqfs/super.h>

#define DATA_OFFSET (GG_SIF_DESCR_OFFSET + GG_SIF_DESCR_TOTAL * GG_SIF_DESCR_SIZE) /* 32176 */
#define PART_ALIGN  4096

/* ---- byte layout ------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, int64_t sv)
{
	uint64_t v = (uint64_t)sv;
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return (int64_t)v;
}

void gg_sif_header_encode(const struct gg_sif_header *h, uint8_t out[GG_SIF_HEADER_SIZE])
{
	memset(out, 0, GG_SIF_HEADER_SIZE);
	memcpy(out + 0, h->launch, 32);
	memcpy(out + 32, h->magic, 10);
	memcpy(out + 42, h->version, 3);
	memcpy(out + 45, h->arch, 3);
	memcpy(out + 48, h->id, 16);
	put64(out + 64, h->created);
	put64(out + 72, h->modified);
	put64(out + 80, h->descr_free);
	put64(out + 88, h->descr_total);
	put64(out + 96, h->descr_offset);
	put64(out + 104, h->descr_size);
	put64(out + 112, h->data_offset);
	put64(out + 120, h->data_size);
}

int gg_sif_header_decode(const uint8_t in[GG_SIF_HEADER_SIZE], struct gg_sif_header *h,
			 struct gg_err *err)
{
	memset(h, 0, sizeof *h);
	memcpy(h->launch, in + 0, 32);
	memcpy(h->magic, in + 32, 10);
	memcpy(h->version, in + 42, 3);
	memcpy(h->arch, in + 45, 3);
	memcpy(h->id, in + 48, 16);
	h->created = get64(in + 64);
	h->modified = get64(in + 72);
	h->descr_free = get64(in + 80);
	h->descr_total = get64(in + 88);
	h->descr_offset = get64(in + 96);
	h->descr_size = get64(in + 104);
	h->data_offset = get64(in + 112);
	h->data_size = get64(in + 120);
	if (memcmp(h->magic, "SIF_MAGIC\0", 10) != 0)
		return gg_err_set(err, GG_EFAIL, "not a SIF image (no SIF_MAGIC at offset 32)");
	if (memcmp(h->version, "01\0", 3) != 0)
		return gg_err_set(err, GG_EFAIL, "unsupported SIF version '%.2s' (expected 01)",
				  h->version);
	return 0;
}

void gg_sif_descr_encode(const struct gg_sif_descr *d, uint8_t out[GG_SIF_DESCR_SIZE])
{
	memset(out, 0, GG_SIF_DESCR_SIZE);
	put32(out + 0, (uint32_t)d->type);
	out[4] = d->used ? 1 : 0;
	put32(out + 5, d->id);
	put32(out + 9, d->group);
	put32(out + 13, d->link);
	put64(out + 17, d->offset);
	put64(out + 25, d->size);
	put64(out + 33, d->size_with_padding);
	put64(out + 41, d->created);
	put64(out + 49, d->modified);
	put64(out + 57, d->uid);
	put64(out + 65, d->gid);
	memcpy(out + 73, d->name, 128);
	memcpy(out + 201, d->extra, 384);
}

void gg_sif_descr_decode(const uint8_t in[GG_SIF_DESCR_SIZE], struct gg_sif_descr *d)
{
	memset(d, 0, sizeof *d);
	d->type = (int32_t)get32(in + 0);
	d->used = in[4];
	d->id = get32(in + 5);
	d->group = get32(in + 9);
	d->link = get32(in + 13);
	d->offset = get64(in + 17);
	d->size = get64(in + 25);
	d->size_with_padding = get64(in + 33);
	d->created = get64(in + 41);
	d->modified = get64(in + 49);
	d->uid = get64(in + 57);
	d->gid = get64(in + 65);
	memcpy(d->name, in + 73, 128);
	memcpy(d->extra, in + 201, 384);
}

void gg_sif_partition_extra(struct gg_sif_descr *d, int32_t fstype, int32_t parttype,
			    const char *arch)
{
	memset(d->extra, 0, sizeof d->extra);
	put32(d->extra + 0, (uint32_t)fstype);
	put32(d->extra + 4, (uint32_t)parttype);
	if (arch)
		memcpy(d->extra + 8, arch, strnlen(arch, 2));
}

int gg_sif_partition_info(const struct gg_sif_descr *d, int32_t *fstype, int32_t *parttype,
			  char arch[3])
{
	if (d->type != GG_SIF_PARTITION)
		return GG_EFAIL;
	*fstype = (int32_t)get32(d->extra + 0);
	*parttype = (int32_t)get32(d->extra + 4);
	memcpy(arch, d->extra + 8, 3);
	arch[2] = '\0';
	return 0;
}

const char *gg_sif_type_name(int32_t type)
{
	switch (type) {
	case GG_SIF_DEFFILE: return "Def.FILE";
	case GG_SIF_ENVVAR: return "Env.Vars";
	case GG_SIF_LABELS: return "JSON.Labels";
	case GG_SIF_PARTITION: return "FS";
	case GG_SIF_SIGNATURE: return "Signature";
	case GG_SIF_GENERIC_JSON: return "JSON.Generic";
	case GG_SIF_GENERIC: return "Generic/Raw";
	case GG_SIF_CRYPTO_MSG: return "Cryptographic Message";
	case GG_SIF_SBOM: return "SBOM";
	case GG_SIF_OCI_ROOT_INDEX: return "OCI.RootIndex";
	case GG_SIF_OCI_BLOB: return "OCI.Blob";
	default: return "Unknown";
	}
}

const char *gg_sif_fstype_name(int32_t fs)
{
	switch (fs) {
	case GG_SIF_FS_SQUASHFS: return "Squashfs";
	case GG_SIF_FS_EXT3: return "Ext3";
	case GG_SIF_FS_IMMUOBJ: return "Data.Archive";
	case GG_SIF_FS_RAW: return "Raw.Data";
	case GG_SIF_FS_ENC_SQUASHFS: return "Encrypted squashfs";
	case GG_SIF_FS_GOCRYPTFS: return "Gocryptfs squashfs";
	default: return "Unknown";
	}
}

const char *gg_sif_parttype_name(int32_t pt)
{
	switch (pt) {
	case GG_SIF_PART_SYSTEM: return "System";
	case GG_SIF_PART_PRIMSYS: return "*System";
	case GG_SIF_PART_DATA: return "Data";
	case GG_SIF_PART_OVERLAY: return "Overlay";
	default: return "Unknown";
	}
}

/* ---- writer ----------------------------------------------------------------------- */

struct gg_sif_writer {
	int fd;
	const char *path;
	struct gg_sif_writer_opts o;
	struct gg_sif_descr d[GG_SIF_DESCR_TOTAL];
	int64_t end; /* end of the data so far */
};

int gg_image_pwrite_all(int fd, const void *buf, size_t len, int64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int gg_image_pread_all(int fd, void *buf, size_t len, int64_t off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int gg_sif_writer_new(int fd, const char *path, const struct gg_sif_writer_opts *o,
		      struct gg_sif_writer **out, struct gg_err *err)
{
	struct gg_sif_writer *w = calloc(1, sizeof *w);
	if (!w)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	w->fd = fd;
	w->path = path;
	if (o)
		w->o = *o;
	w->end = DATA_OFFSET;
	*out = w;
	return 0;
}

void gg_sif_writer_free(struct gg_sif_writer *w)
{
	free(w);
}

int64_t gg_sif_writer_data_start(const struct gg_sif_writer *w)
{
	(void)w;
	return (DATA_OFFSET + PART_ALIGN - 1) / PART_ALIGN * PART_ALIGN;
}

static struct gg_sif_descr *slot(struct gg_sif_writer *w, uint32_t id, struct gg_err *err)
{
	if (id < 1 || id > GG_SIF_DESCR_TOTAL) {
		gg_err_set(err, GG_EFAIL, "SIF object id %u out of range (1-%d)", id,
			   GG_SIF_DESCR_TOTAL);
		return NULL;
	}
	struct gg_sif_descr *d = &w->d[id - 1];
	if (d->used) {
		gg_err_set(err, GG_EFAIL, "SIF object id %u used twice", id);
		return NULL;
	}
	memset(d, 0, sizeof *d);
	d->used = 1;
	d->id = id;
	return d;
}

int gg_sif_writer_add_partition(struct gg_sif_writer *w, uint32_t id, uint32_t group,
				int64_t offset, int64_t size, int32_t fstype, int32_t parttype,
				const char *arch, struct gg_err *err)
{
	if (offset < w->end || offset % PART_ALIGN)
		return gg_err_set(
			err, GG_EFAIL,
			"SIF partition at %lld: not 4096-aligned after the previous object",
			(long long)offset);
	struct gg_sif_descr *d = slot(w, id, err);
	if (!d)
		return err->code;
	d->type = GG_SIF_PARTITION;
	d->group = group | GG_SIF_GROUP_MASK;
	d->offset = offset;
	d->size = size;
	d->size_with_padding = size + (offset - w->end);
	gg_sif_partition_extra(d, fstype, parttype, arch);
	w->end = offset + size;
	return 0;
}

int gg_sif_writer_add(struct gg_sif_writer *w, uint32_t id, int32_t type, uint32_t group,
		      const char *name, const void *data, size_t len, struct gg_err *err)
{
	if (type == GG_SIF_PARTITION)
		return gg_err_set(err, GG_EFAIL, "SIF partitions go through add_partition");
	struct gg_sif_descr *d = slot(w, id, err);
	if (!d)
		return err->code;
	d->type = type;
	d->group = group | GG_SIF_GROUP_MASK;
	d->offset = w->end;
	d->size = (int64_t)len;
	d->size_with_padding = (int64_t)len;
	if (name)
		strncpy(d->name, name, sizeof d->name - 1);
	if (len && gg_image_pwrite_all(w->fd, data, len, d->offset) < 0) {
		d->used = 0;
		return gg_err_sys(err, GG_EIO, errno ? errno : EIO, "writing '%s'", w->path);
	}
	w->end += (int64_t)len;
	return 0;
}

int gg_sif_writer_finish(struct gg_sif_writer *w, int64_t *size, struct gg_err *err)
{
	struct gg_sif_header h;
	memset(&h, 0, sizeof h);
	if (w->o.launch_script)
		memcpy(h.launch, GG_SIF_LAUNCH, strlen(GG_SIF_LAUNCH));
	memcpy(h.magic, "SIF_MAGIC", 9);
	memcpy(h.version, "01", 2);
	memcpy(h.arch, "00", 2);
	int64_t t = w->o.deterministic ? GG_SIF_GO_ZERO_TIME : w->o.now;
	if (!w->o.deterministic)
		memcpy(h.id, w->o.id, 16);
	h.created = h.modified = t;
	int used = 0;
	for (int i = 0; i < GG_SIF_DESCR_TOTAL; i++) {
		struct gg_sif_descr *d = &w->d[i];
		if (!d->used)
			continue;
		used++;
		d->created = d->modified = t;
		int32_t fs, pt;
		char arch[3];
		if (gg_sif_partition_info(d, &fs, &pt, arch) == 0 && pt == GG_SIF_PART_PRIMSYS)
			memcpy(h.arch, arch, 2);
	}
	h.descr_total = GG_SIF_DESCR_TOTAL;
	h.descr_free = GG_SIF_DESCR_TOTAL - used;
	h.descr_offset = GG_SIF_DESCR_OFFSET;
	h.descr_size = (int64_t)GG_SIF_DESCR_TOTAL * GG_SIF_DESCR_SIZE;
	h.data_offset = DATA_OFFSET;
	h.data_size = w->end - DATA_OFFSET;

	uint8_t *buf = calloc(1, DATA_OFFSET);
	if (!buf)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	gg_sif_header_encode(&h, buf);
	for (int i = 0; i < GG_SIF_DESCR_TOTAL; i++)
		if (w->d[i].used)
			gg_sif_descr_encode(&w->d[i],
					    buf + GG_SIF_DESCR_OFFSET + i * GG_SIF_DESCR_SIZE);
	int rc = gg_image_pwrite_all(w->fd, buf, DATA_OFFSET, 0);
	free(buf);
	if (rc < 0 || ftruncate(w->fd, (off_t)w->end) < 0)
		return gg_err_sys(err, GG_EIO, errno ? errno : EIO, "writing '%s'", w->path);
	if (size)
		*size = w->end;
	return 0;
}

/* ---- reader ----------------------------------------------------------------------- */

void gg_sif_close(struct gg_sif *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->descr);
	free(s->path);
	free(s);
}

/* Structural checks shared by open and verify. Each failure is reported once with a
 * short name; check() returns the ok flag. */
struct checker {
	struct gg_sif_verify_report *rep;
	struct gg_err *err; /* first failure, for gg_sif_open */
	int failed;
};

static void record(struct checker *c, const char *what, int ok, const char *detail)
{
	if (c->rep && c->rep->nchecks < sizeof c->rep->checks / sizeof c->rep->checks[0]) {
		struct gg_sif_check *k = &c->rep->checks[c->rep->nchecks++];
		snprintf(k->what, sizeof k->what, "%s", what);
		k->ok = ok;
		snprintf(k->detail, sizeof k->detail, "%s", detail);
	}
}

/* A condition: when false, the formatted failure is recorded (and becomes the error of
 * gg_sif_open if it is the first). Returns ok. */
GG_ATTR_PRINTF(4, 5)
static int check(struct checker *c, const char *what, int ok, const char *fmt, ...)
{
	if (ok)
		return 1;
	char detail[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	record(c, what, 0, detail);
	if (!c->failed) {
		c->failed = 1;
		gg_err_set(c->err, GG_EFAIL, "%s", detail);
	}
	return 0;
}

/* A passed check, for the report. */
GG_ATTR_PRINTF(3, 4)
static void pass(struct checker *c, const char *what, const char *fmt, ...)
{
	char detail[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	record(c, what, 1, detail);
}

static int by_offset(const void *a, const void *b)
{
	const struct gg_sif_descr *x = *(const struct gg_sif_descr *const *)a;
	const struct gg_sif_descr *y = *(const struct gg_sif_descr *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* No two objects may share a byte (empty objects take none). ok = 1 when none do. */
static int check_overlap(struct checker *c, const struct gg_sif *s, struct gg_err *err)
{
	const struct gg_sif_descr **v = malloc(s->ndescr * sizeof *v);
	if (!v)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < s->ndescr; i++)
		if (s->descr[i].used && s->descr[i].size > 0)
			v[n++] = &s->descr[i];
	if (n)
		qsort(v, n, sizeof *v, by_offset);
	int ok = 1;
	for (size_t i = 1; ok && i < n; i++)
		ok = check(c, "descriptors", v[i - 1]->offset + v[i - 1]->size <= v[i]->offset,
			   "objects %u (%lld bytes at %lld) and %u (at %lld) overlap", v[i - 1]->id,
			   (long long)v[i - 1]->size, (long long)v[i - 1]->offset, v[i]->id,
			   (long long)v[i]->offset);
	free(v);
	return ok;
}

/* The file opened and its size (a directory refused); *out even when a check
 * fails later. */
static int load_open(const char *path, struct gg_sif **out, struct gg_err *err)
{
	*out = NULL;
	struct gg_sif *s = calloc(1, sizeof *s);
	if (!s)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	s->fd = -1;
	if (!(s->path = strdup(path))) {
		gg_sif_close(s);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (s->fd < 0 || fstat(s->fd, &st) < 0) {
		int e = errno;
		gg_sif_close(s);
		return gg_err_sys(err, e == ENOENT ? GG_ENOTFOUND : GG_EIO, e, "opening '%s'",
				  path);
	}
	if (S_ISDIR(st.st_mode)) {
		gg_sif_close(s);
		return gg_err_set(err, GG_EFAIL, "'%s' is a directory, not a SIF image", path);
	}
	s->file_size = (uint64_t)st.st_size;
	*out = s;
	return 0;
}

/* The header, and where it puts the descriptor table and the data inside
 * the file. 1 when sound, 0 when a check failed, <0 on a read error. */
static int load_header(struct gg_sif *s, struct checker *c, struct gg_err *err)
{
	uint8_t hb[GG_SIF_HEADER_SIZE];
	if (!check(c, "file", s->file_size >= GG_SIF_HEADER_SIZE,
		   "'%s' is too short for a SIF header (%llu bytes)", s->path,
		   (unsigned long long)s->file_size))
		return 0;
	if (gg_image_pread_all(s->fd, hb, sizeof hb, 0) < 0)
		return gg_err_sys(err, GG_EIO, errno ? errno : EIO, "reading '%s'", s->path);
	struct gg_err herr = {0};
	if (!check(c, "header", gg_sif_header_decode(hb, &s->hdr, &herr) == 0, "%s", herr.msg))
		return 0;
	const struct gg_sif_header *h = &s->hdr;
	pass(c, "header", "SIF_MAGIC, version 01");
	int64_t fsz = (int64_t)s->file_size;
	if (!check(c, "descriptor table",
		   h->descr_total > 0 && h->descr_total <= 65536 &&
			   h->descr_offset >= GG_SIF_HEADER_SIZE &&
			   h->descr_size == h->descr_total * GG_SIF_DESCR_SIZE,
		   "bad descriptor table: %lld descriptors of %lld bytes at offset %lld",
		   (long long)h->descr_total, (long long)h->descr_size, (long long)h->descr_offset))
		return 0;
	if (!check(c, "descriptor table",
		   h->descr_offset <= fsz && h->descr_size <= fsz - h->descr_offset,
		   "the descriptor table (%lld bytes at %lld) runs past the end of the file "
		   "(%lld bytes): truncated?",
		   (long long)h->descr_size, (long long)h->descr_offset, (long long)fsz))
		return 0;
	if (!check(c, "data area",
		   h->data_offset >= h->descr_offset + h->descr_size && h->data_size >= 0 &&
			   h->data_offset <= fsz && h->data_size <= fsz - h->data_offset,
		   "the data area (%lld bytes at %lld) does not fit the file (%lld bytes): "
		   "truncated?",
		   (long long)h->data_size, (long long)h->data_offset, (long long)fsz))
		return 0;
	pass(c, "descriptor table", "%lld descriptors at offset %lld, data at %lld",
	     (long long)h->descr_total, (long long)h->descr_offset, (long long)h->data_offset);
	return 1;
}

/* One used descriptor: inside the file's data. 1 when sound. */
static int descr_sound(struct checker *c, const struct gg_sif *s, const struct gg_sif_descr *d,
		       size_t i)
{
	const struct gg_sif_header *h = &s->hdr;
	int64_t fsz = (int64_t)s->file_size;
	return check(c, "descriptors", d->id == i + 1, "descriptor %zu has id %u (expected %zu)",
		     i + 1, d->id, i + 1) &&
	       check(c, "descriptors",
		     d->size >= 0 && d->size_with_padding >= d->size &&
			     d->offset >= h->data_offset && d->offset <= fsz &&
			     d->size <= fsz - d->offset,
		     "object %u (%s, %lld bytes at %lld) lies outside the file's data "
		     "(%lld bytes): truncated?",
		     d->id, gg_sif_type_name(d->type), (long long)d->size, (long long)d->offset,
		     (long long)fsz) &&
	       check(c, "descriptors", d->offset + d->size <= h->data_offset + h->data_size,
		     "object %u ends after the header's data area", d->id);
}

/* The descriptors, read and checked; *used counts those in use. 1 when all
 * are sound, 0 when one is not, <0 on a read error. */
static int load_descriptors(struct gg_sif *s, struct checker *c, int64_t *used, struct gg_err *err)
{
	const struct gg_sif_header *h = &s->hdr;
	s->ndescr = (size_t)h->descr_total;
	s->descr = calloc(s->ndescr, sizeof *s->descr);
	uint8_t *raw = malloc((size_t)h->descr_size);
	if (!s->descr || !raw) {
		free(raw);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (gg_image_pread_all(s->fd, raw, (size_t)h->descr_size, h->descr_offset) < 0) {
		free(raw);
		return gg_err_sys(err, GG_EIO, errno ? errno : EIO, "reading '%s'", s->path);
	}
	int sound = 1;
	*used = 0;
	for (size_t i = 0; i < s->ndescr; i++) {
		struct gg_sif_descr *d = &s->descr[i];
		gg_sif_descr_decode(raw + i * GG_SIF_DESCR_SIZE, d);
		if (!d->used)
			continue;
		(*used)++;
		if (sound && !descr_sound(c, s, d, i))
			sound = 0;
	}
	free(raw);
	return sound;
}

static int load(const char *path, struct gg_sif **out, struct checker *c, struct gg_err *err)
{
	int rc = load_open(path, out, err);
	if (rc < 0)
		return rc;
	struct gg_sif *s = *out;
	if ((rc = load_header(s, c, err)) <= 0)
		return rc;
	int64_t used = 0;
	if ((rc = load_descriptors(s, c, &used, err)) <= 0)
		return rc;
	int apart = check_overlap(c, s, err);
	if (apart < 0)
		return apart;
	const struct gg_sif_header *h = &s->hdr;
	if (apart && check(c, "descriptors", h->descr_free == h->descr_total - used,
			   "%lld used, but the header says %lld free of %lld", (long long)used,
			   (long long)h->descr_free, (long long)h->descr_total))
		pass(c, "descriptors", "%lld objects, all inside the file, none overlapping",
		     (long long)used);
	return 0;
}

int gg_sif_open(const char *path, struct gg_sif **out, struct gg_err *err)
{
	struct checker c = {.err = err};
	struct gg_sif *s = NULL;
	int rc = load(path, &s, &c, err);
	if (rc < 0 || c.failed) {
		gg_sif_close(s);
		*out = NULL;
		if (c.failed && rc == 0)
			gg_err_prefix(err, "'%s'", path);
		return rc < 0 ? rc : err->code;
	}
	*out = s;
	return 0;
}

const struct gg_sif_descr *gg_sif_find(const struct gg_sif *s, int32_t type, const char *name)
{
	for (size_t i = 0; i < s->ndescr; i++) {
		const struct gg_sif_descr *d = &s->descr[i];
		if (d->used && d->type == type &&
		    (!name || strncmp(d->name, name, sizeof d->name) == 0))
			return d;
	}
	return NULL;
}

const struct gg_sif_descr *gg_sif_primary(const struct gg_sif *s)
{
	for (size_t i = 0; i < s->ndescr; i++) {
		const struct gg_sif_descr *d = &s->descr[i];
		int32_t fs, pt;
		char arch[3];
		if (d->used && gg_sif_partition_info(d, &fs, &pt, arch) == 0 &&
		    pt == GG_SIF_PART_PRIMSYS)
			return d;
	}
	return NULL;
}

int gg_sif_read_object(const struct gg_sif *s, const struct gg_sif_descr *d, size_t max, char **out,
		       size_t *len, struct gg_err *err)
{
	*out = NULL;
	if ((uint64_t)d->size > max)
		return gg_err_set(err, GG_EFAIL, "object %u of '%s' is too large (%lld bytes)",
				  d->id, s->path, (long long)d->size);
	char *buf = malloc((size_t)d->size + 1);
	if (!buf)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (gg_image_pread_all(s->fd, buf, (size_t)d->size, d->offset) < 0) {
		free(buf);
		return gg_err_sys(err, GG_EIO, errno ? errno : EIO, "reading '%s'", s->path);
	}
	buf[d->size] = '\0';
	*out = buf;
	if (len)
		*len = (size_t)d->size;
	return 0;
}

/* ---- verify ----------------------------------------------------------------------- */

/* A read-only sqfs_file_t over the partition. */
static int pf_read_at(sqfs_file_t *base, sqfs_u64 offset, void *buffer, size_t size)
{
	struct gg_part_file *f = (struct gg_part_file *)base;
	if (offset > f->size || size > f->size - offset)
		return SQFS_ERROR_OUT_OF_BOUNDS;
	return gg_image_pread_all(f->fd, buffer, size, (int64_t)(f->off + offset)) < 0
		       ? SQFS_ERROR_IO
		       : 0;
}

static int pf_write_at(sqfs_file_t *base, sqfs_u64 offset, const void *buffer, size_t size)
{
	(void)base;
	(void)offset;
	(void)buffer;
	(void)size;
	return SQFS_ERROR_IO;
}

static sqfs_u64 pf_get_size(const sqfs_file_t *base)
{
	return ((const struct gg_part_file *)base)->size;
}

static int pf_truncate(sqfs_file_t *base, sqfs_u64 size)
{
	(void)base;
	(void)size;
	return SQFS_ERROR_IO;
}

static void pf_destroy(sqfs_object_t *obj)
{
	(void)obj;
}

void gg_part_file_init(struct gg_part_file *pf, const struct gg_sif *s,
		       const struct gg_sif_descr *d)
{
	memset(pf, 0, sizeof *pf);
	pf->base.base.destroy = pf_destroy;
	pf->base.read_at = pf_read_at;
	pf->base.write_at = pf_write_at;
	pf->base.get_size = pf_get_size;
	pf->base.truncate = pf_truncate;
	pf->fd = s->fd;
	pf->off = (uint64_t)d->offset;
	pf->size = (uint64_t)d->size;
}

/* The directory tree: names, paths, symlink targets, no entry twice. */
static void check_tree(struct checker *c, sqfs_file_t *f, const sqfs_super_t *sb,
		       sqfs_compressor_t *cmp)
{
	char why[512];
	uint64_t entries = 0;
	if (check(c, "squashfs tree",
		  gg_sqfs_check_tree(f, sb, cmp, why, sizeof why, &entries) == 0,
		  "squashfs tree: %s", why))
		pass(c, "squashfs tree", "%llu entries: names, paths and links sound",
		     (unsigned long long)entries);
}

static void check_squashfs(struct checker *c, const struct gg_sif *s, const struct gg_sif_descr *d)
{
	struct gg_sif_verify_report *r = c->rep;
	struct gg_part_file pf;
	gg_part_file_init(&pf, s, d);

	unsigned char magic[4] = {0};
	if (!check(c, "squashfs magic",
		   d->size >= 4 && gg_image_pread_all(s->fd, magic, 4, d->offset) == 0 &&
			   memcmp(magic, "hsqs", 4) == 0,
		   "no squashfs magic 'hsqs' at the partition offset %lld", (long long)d->offset))
		return;
	sqfs_super_t sb;
	int rc = sqfs_super_read(&sb, &pf.base);
	if (!check(c, "squashfs superblock", rc == 0, "squashfs superblock: %s",
		   rc == SQFS_ERROR_OUT_OF_BOUNDS ? "truncated" : gg_sqfs_strerror(rc)))
		return;
	uint64_t used = sb.bytes_used;
	int tables_ok = used <= (uint64_t)d->size &&
			sb.inode_table_start < sb.directory_table_start &&
			sb.directory_table_start < used && sb.id_table_start < used &&
			(sb.fragment_table_start == UINT64_MAX || sb.fragment_table_start < used) &&
			(sb.xattr_id_table_start == UINT64_MAX || sb.xattr_id_table_start < used) &&
			(sb.export_table_start == UINT64_MAX || sb.export_table_start < used) &&
			sb.inode_count > 0 && sb.id_count > 0 &&
			(sb.root_inode_ref >> 16) < sb.directory_table_start - sb.inode_table_start;
	if (!check(c, "squashfs superblock", tables_ok,
		   "squashfs superblock: tables out of bounds (bytes_used %llu, partition %lld "
		   "bytes)",
		   (unsigned long long)used, (long long)d->size))
		return;
	r->sqfs_bytes_used = used;
	r->sqfs_inodes = sb.inode_count;
	r->sqfs_comp = sb.compression_id;
	r->sqfs_block_size = sb.block_size;
	r->sqfs_mkfs_time = sb.modification_time;
	pass(c, "squashfs superblock", "%s, %u inodes, %u-byte blocks, %llu of %lld bytes used",
	     sqfs_compressor_name_from_id((SQFS_COMPRESSOR)sb.compression_id), sb.inode_count,
	     sb.block_size, (unsigned long long)used, (long long)d->size);

	sqfs_compressor_config_t cfg;
	sqfs_compressor_t *cmp = NULL;
	rc = sqfs_compressor_config_init(&cfg, (SQFS_COMPRESSOR)sb.compression_id, sb.block_size,
					 SQFS_COMP_FLAG_UNCOMPRESS);
	if (!rc)
		rc = sqfs_compressor_create(&cfg, &cmp);
	if (!check(c, "squashfs ID table", rc == 0, "no decompressor for %s",
		   sqfs_compressor_name_from_id((SQFS_COMPRESSOR)sb.compression_id)))
		return;
	if (sb.flags & SQFS_FLAG_COMPRESSOR_OPTIONS)
		rc = cmp->read_options(cmp, &pf.base);
	sqfs_id_table_t *ids = sqfs_id_table_create(0);
	if (!rc && ids)
		rc = sqfs_id_table_read(ids, &pf.base, &sb, cmp);
	if (check(c, "squashfs ID table", rc == 0 && ids, "squashfs ID table: %s",
		  rc ? gg_sqfs_strerror(rc) : "out of memory")) {
		pass(c, "squashfs ID table", "%u ids, readable", sb.id_count);
		check_tree(c, &pf.base, &sb, cmp);
	}
	sqfs_destroy(ids);
	sqfs_destroy(cmp);
}

int gg_sif_verify(const char *path, struct gg_sif_verify_report *report, struct gg_err *err)
{
	memset(report, 0, sizeof *report);
	struct gg_err first = {0};
	struct checker c = {.rep = report, .err = &first};
	struct gg_sif *s = NULL;
	int rc = load(path, &s, &c, err);
	if (rc < 0) {
		gg_sif_close(s);
		return rc;
	}
	if (!c.failed) {
		const struct gg_sif_descr *prim = NULL;
		int nprim = 0, misaligned = 0;
		for (size_t i = 0; i < s->ndescr; i++) {
			const struct gg_sif_descr *d = &s->descr[i];
			int32_t fs, pt;
			char arch[3];
			if (!d->used || gg_sif_partition_info(d, &fs, &pt, arch) < 0)
				continue;
			if (d->offset % PART_ALIGN)
				misaligned = 1;
			if (pt == GG_SIF_PART_PRIMSYS) {
				nprim++;
				prim = d;
			}
		}
		if (check(&c, "partition", nprim == 1,
			  "%d primary system partitions (expected exactly one)", nprim)) {
			int32_t fs, pt;
			char arch[3];
			gg_sif_partition_info(prim, &fs, &pt, arch);
			if (check(&c, "partition", !misaligned,
				  "a partition is not 4096-aligned") &&
			    check(&c, "partition", fs == GG_SIF_FS_SQUASHFS,
				  "the primary partition holds %s, not squashfs",
				  gg_sif_fstype_name(fs)))
				pass(&c, "partition",
				     "primary system partition %u: squashfs at %lld, %lld bytes",
				     prim->id, (long long)prim->offset, (long long)prim->size);
			if (check(&c, "architecture", memcmp(arch, s->hdr.arch, 2) == 0,
				  "the header says %s, the partition %s",
				  gg_image_arch_name(s->hdr.arch), gg_image_arch_name(arch)))
				pass(&c, "architecture", "%s", gg_image_arch_name(arch));
			if (fs == GG_SIF_FS_SQUASHFS)
				check_squashfs(&c, s, prim);
		}
	}
	report->ok = !c.failed;
	gg_sif_close(s);
	return 0;
}
