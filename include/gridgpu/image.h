/* gridgpu/image.h (lib/image): freeze a sandbox (directory, tar / docker export stream, OCI image
 * layout or docker save archive) into a SIF image with a squashfs partition written in place, and
 * read SIF images back (inspect, verify).
 *
 * Nothing here prints, exits or prompts: errors come back in struct gg_err (with the path
 * in the message), warnings and progress through callbacks. No global mutable state. */
#ifndef GRIDGPU_IMAGE_H
#define GRIDGPU_IMAGE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gridgpu/core.h"

/* ---- freeze ------------------------------------------------------------------ */

enum gg_image_format {
	GG_IMAGE_AUTO = 0, /* detect from the source */
	GG_IMAGE_DIR,      /* a sandbox directory */
	GG_IMAGE_TAR,      /* a tar stream (docker export), compressed or not */
	GG_IMAGE_OCI,      /* an OCI image layout (dir or tar) or a docker save archive */
};

/* Squashfs compressor ids (the on-disk values). */
enum gg_image_comp {
	GG_IMAGE_COMP_GZIP = 1, /* default: deflate by libdeflate, zlib framing */
	GG_IMAGE_COMP_XZ = 4,
	GG_IMAGE_COMP_LZ4 = 5,
	GG_IMAGE_COMP_ZSTD = 6,
};

enum gg_image_phase {
	GG_IMAGE_PHASE_SCAN = 1, /* walking the source (files_total grows) */
	GG_IMAGE_PHASE_DATA,     /* compressing file data */
	GG_IMAGE_PHASE_META,     /* writing inodes, directories, tables, SIF objects */
	GG_IMAGE_PHASE_DONE,
};

struct gg_image_progress {
	enum gg_image_phase phase;
	uint64_t files_done, files_total; /* regular files; total 0 = unknown */
	uint64_t bytes_done, bytes_total; /* source bytes consumed; total 0 = unknown */
	uint64_t bytes_out;               /* bytes of image written so far */
};

/* All optional. progress is called after each file and at least every few MiB, from the
 * calling thread; cancel is polled as often (non-zero: stop, remove the temp file, fail
 * with GG_EINTR); warn gets one message per problem that did not stop the freeze. */
struct gg_image_callbacks {
	void (*progress)(void *ud, const struct gg_image_progress *p);
	void (*warn)(void *ud, const char *msg);
	int (*cancel)(void *ud);
	void *ud;
	/* Called once the source has been read to its end and the image written, before
	 * the image gets the output's name (or replaces it): non-zero, with err set, fails
	 * the freeze and nothing is installed. A tar stream from another program (a
	 * session's sandbox over ssh) checks that program's exit status here. */
	int (*source_end)(void *ud, struct gg_err *err);
};

struct gg_freeze_opts {
	const char *source;          /* path; "-" reads a tar stream from input_fd */
	int input_fd;                /* used when source is "-" (the CLI passes 0) */
	enum gg_image_format format; /* GG_IMAGE_AUTO: dir, OCI layout/archive, else tar */
	const char *output;          /* the .sif to create */
	int force;                   /* replace an existing output (atomically) */
	enum gg_image_comp comp;     /* 0 = gzip */
	int level;                   /* 0 = default (gzip 6, zstd 15, xz 6, lz4: >0 = HC) */
	unsigned jobs;               /* compressor threads; 0 = all cores */
	const char *const *labels;   /* "KEY=VALUE" strings, added to the image labels */
	size_t nlabels;
	int no_reproducible;        /* random UUID and the current time instead */
	int skip_unreadable;        /* warn and leave out what cannot be read */
	int have_source_date_epoch; /* SOURCE_DATE_EPOCH given: fixed time, clamps mtimes */
	int64_t source_date_epoch;
	const char *gpus_json;    /* optional JSON value for the provenance "gpus" field */
	const char *tool_version; /* for the provenance; NULL = the library's version */
};

struct gg_freeze_result {
	enum gg_image_format format;                         /* what the source was detected as */
	uint64_t files, dirs, symlinks, specials, hardlinks; /* entries in the image */
	uint64_t data_bytes;                                 /* regular file bytes stored */
	uint64_t squashfs_size;                              /* partition size (4 KiB padded) */
	uint64_t image_size;                                 /* size of the .sif */
	char arch[16];                                       /* "amd64", ... */
	int64_t build_time;                                  /* the time recorded in the image */
	unsigned warnings;
	uint64_t duplicates; /* files that are copies of earlier ones: not compressed again */
};

/* Freeze opts->source into opts->output. On failure nothing is left behind: the temp
 * file (OUTPUT.tmp.XXXXXX in the output's directory) is removed. Error codes: GG_EUSAGE
 * for bad options, GG_EINTR when cancelled, GG_EIO / GG_EFAIL otherwise.
 * Memory, whatever the size of the data: 128 KiB per block in flight (64 per compressor
 * thread, at least 128, at most 512) and as much again for the fragment blocks among
 * them (kept until written, to compare the files' tails with), 1 MiB of fragment blocks
 * written, about 2 MiB per compressor thread, 4 MiB of files read ahead, 12 MiB of the
 * image on its way to the disk, 512 KiB to compare copies of files, and about 512 bytes
 * per entry with a name of up to 32 bytes (the tree about 250 of them; while the scan
 * runs, the listings of the next directories to scan up to 200 more; while the data is
 * read, the sizes two files of a block or more share up to 48 and the table of the
 * files' tails up to 32): up to 2 threads, 64 MiB + 512 bytes per entry holds. With
 * gg_image_heap_huge_pages (the gridgpu program's choice), 72 MiB + 512 bytes per entry:
 * a buffer partly used (a block of a small file, a read-ahead slot) is then in memory
 * whole, in 2 MiB pages (measured: 3 to 24 MiB more on the benchmark's trees, the most
 * on its 500k tiny files: 226 -> 250 MiB, within 72 MiB + 512 bytes per entry). */
GG_API int gg_image_freeze(const struct gg_freeze_opts *opts, const struct gg_image_callbacks *cb,
			   struct gg_freeze_result *res, struct gg_err *err);

/* Opt-in for a program that freezes, process-wide: the C library's allocator serves
 * allocations below 32 MiB from the heap, which is grown once by 256 MiB of address
 * space (nothing touched), never trimmed, and advised for transparent huge pages
 * (madvise). Where a page fault is dear (a virtual machine) a freeze then spends far
 * less time faulting its blocks in. Call before the first freeze, from one thread;
 * -1 when the allocator or the kernel refuses a step, or when the process has a limit
 * on address space or data (RLIMIT_AS, RLIMIT_DATA), which the reserve would count
 * against: then nothing is changed. Freezing works either way. */
GG_API int gg_image_heap_huge_pages(void);

/* Name of a compressor ("gzip", ...) and back (0 when unknown). */
GG_API const char *gg_image_comp_name(enum gg_image_comp comp);
GG_API enum gg_image_comp gg_image_comp_parse(const char *name);
GG_API const char *gg_image_format_name(enum gg_image_format f);
/* "amd64" for "02", "unknown" for anything else unknown. */
GG_API const char *gg_image_arch_name(const char *code);
/* The architecture a SIF's header says ("amd64", "arm64") into arch; 0 when
 * path is not a SIF that reads, or its architecture is not known. */
GG_API int gg_image_sif_arch(const char *path, char arch[16]);

/* ---- SIF ---------------------------------------------------------------------- */

#define GG_SIF_HEADER_SIZE  128
#define GG_SIF_DESCR_SIZE   585
#define GG_SIF_DESCR_OFFSET 4096
#define GG_SIF_DESCR_TOTAL  48
#define GG_SIF_GROUP_MASK   0xF0000000u
#define GG_SIF_LAUNCH       "#!/usr/bin/env run-singularity\n"
#define GG_SIF_GO_ZERO_TIME (-62135596800LL) /* what deterministic images carry */

enum gg_sif_type {
	GG_SIF_DEFFILE = 0x4001,
	GG_SIF_ENVVAR = 0x4002,
	GG_SIF_LABELS = 0x4003,
	GG_SIF_PARTITION = 0x4004,
	GG_SIF_SIGNATURE = 0x4005,
	GG_SIF_GENERIC_JSON = 0x4006,
	GG_SIF_GENERIC = 0x4007,
	GG_SIF_CRYPTO_MSG = 0x4008,
	GG_SIF_SBOM = 0x4009,
	GG_SIF_OCI_ROOT_INDEX = 0x400A,
	GG_SIF_OCI_BLOB = 0x400B,
};
enum gg_sif_fstype {
	GG_SIF_FS_SQUASHFS = 1,
	GG_SIF_FS_EXT3,
	GG_SIF_FS_IMMUOBJ,
	GG_SIF_FS_RAW,
	GG_SIF_FS_ENC_SQUASHFS,
	GG_SIF_FS_GOCRYPTFS
};
enum gg_sif_parttype {
	GG_SIF_PART_SYSTEM = 1,
	GG_SIF_PART_PRIMSYS,
	GG_SIF_PART_DATA,
	GG_SIF_PART_OVERLAY
};

struct gg_sif_header {
	char launch[32]; /* NUL-padded launch script */
	char magic[10];  /* "SIF_MAGIC" */
	char version[3]; /* "01" */
	char arch[3];    /* "02" */
	uint8_t id[16];  /* UUID, all zero when deterministic */
	int64_t created, modified;
	int64_t descr_free, descr_total, descr_offset, descr_size;
	int64_t data_offset, data_size;
};

struct gg_sif_descr {
	int32_t type; /* enum gg_sif_type */
	uint8_t used;
	uint32_t id;    /* slot + 1 */
	uint32_t group; /* raw: group | 0xF0000000; 0xF0000000 = none */
	uint32_t link;
	int64_t offset, size, size_with_padding;
	int64_t created, modified, uid, gid;
	char name[128]; /* NUL-padded */
	uint8_t extra[384];
};

GG_API int gg_sif_partition_info(const struct gg_sif_descr *d, int32_t *fstype, int32_t *parttype,
				 char arch[3]);
/* "Def.FILE", "JSON.Generic", "FS", ... (siftool's names); "Unknown" otherwise. */
GG_API const char *gg_sif_type_name(int32_t type);
GG_API const char *gg_sif_fstype_name(int32_t fs);
GG_API const char *gg_sif_parttype_name(int32_t pt);

/* Reader. gg_sif_open checks the structure (magic, version, table bounds, used/free
 * counts, IDs, every object inside the file and after the table) and fails naming the
 * first problem. */
struct gg_sif {
	char *path;
	int fd;
	uint64_t file_size;
	struct gg_sif_header hdr;
	struct gg_sif_descr *descr; /* hdr.descr_total entries; unused ones have used == 0 */
	size_t ndescr;
};
GG_API int gg_sif_open(const char *path, struct gg_sif **out, struct gg_err *err);
GG_API void gg_sif_close(struct gg_sif *s);
/* First used descriptor of a type (and name, when not NULL), or NULL. */
GG_API const struct gg_sif_descr *gg_sif_find(const struct gg_sif *s, int32_t type,
					      const char *name);
/* The primary system partition, or NULL. */
GG_API const struct gg_sif_descr *gg_sif_primary(const struct gg_sif *s);
/* Read an object (at most max bytes, else GG_EFAIL); NUL-terminated, *len without it. */
GG_API int gg_sif_read_object(const struct gg_sif *s, const struct gg_sif_descr *d, size_t max,
			      char **out, size_t *len, struct gg_err *err);

/* Whether the image would find the program name a job runs, as the container does: a
 * name without '/' on the default PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:
 * /usr/bin:/sbin:/bin), an absolute path as it is, symbolic links followed inside the
 * image, ending at an executable regular file. 1: found, or cannot be known (a path
 * relative to the job's directory; a name while the image's environment scripts set
 * PATH); 0: not in the image; < 0: the image cannot be read. */
GG_API int gg_image_has_program(const char *sif, const char *name, struct gg_err *err);
/* The PATH gg_image_has_program searches: apptainer's and the batch wrapper's default. */
#define GG_IMAGE_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* One finding of gg_sif_verify. */
struct gg_sif_check {
	char what[64];
	int ok;
	char detail[256];
};
struct gg_sif_verify_report {
	struct gg_sif_check checks[32];
	size_t nchecks;
	int ok; /* every check passed */
	uint64_t sqfs_bytes_used;
	uint32_t sqfs_inodes;
	uint16_t sqfs_comp;
	uint32_t sqfs_block_size;
	int64_t sqfs_mkfs_time;
};
/* Check the structure: header, descriptors, partition bounds and alignment, exactly one
 * primary system partition, header arch = partition arch, squashfs superblock sane
 * (magic, version, block size, tables in bounds, bytes_used inside the partition), the
 * ID table readable. Returns 0 when the file could be examined (report->ok says whether
 * it passed), an error when it could not be opened or is not a SIF at all. */
GG_API int gg_sif_verify(const char *path, struct gg_sif_verify_report *report, struct gg_err *err);

/* ---- what inspect shows -------------------------------------------------------- */

/* The image's id as a UUID ("8f1c...-..."); out >= 37 bytes. */
GG_API char *gg_sif_id_str(const uint8_t id[16], char *out, size_t len);
/* The JSON object named name (a GG_SIF_GENERIC_JSON one, at most 16 MiB), parsed;
 * NULL when there is none or it is not JSON. New reference. */
GG_API json_t *gg_sif_read_json(const struct gg_sif *s, const char *name);
/* The image's labels (data.attributes.labels of inspect-metadata.json), or NULL.
 * New reference. */
GG_API json_t *gg_sif_labels(const struct gg_sif *s);
/* What `gridgpu inspect --json` shows of the file: {"size", "header" (version,
 * arch, id, created, modified as ISO 8601 or null, descriptor counts, data
 * offset and size), "objects" (each used descriptor: id, group, link, type, name,
 * offset, size, and fstype, parttype, arch for a partition), and "squashfs"
 * (compression, inodes, block_size, bytes_used, mkfs_time) when rep is not
 * NULL}. New reference; NULL when out of memory. */
GG_API json_t *gg_sif_json(const struct gg_sif *s, const struct gg_sif_verify_report *rep);

#endif
