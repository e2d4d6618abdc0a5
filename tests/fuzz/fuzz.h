/* Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c) and by the regression
 * runner (tests/unit/test_fuzz_regress.c), which includes every target into one
 * program. So: statics in a target carry the target's name, and the entry points
 * are declared through these macros.
 *
 *   FUZZ_INIT(name)    once per process, before the first input (optional)
 *   FUZZ_TARGET(name)  one input: (const uint8_t *data, size_t size) -> 0
 *
 * Built for libFuzzer (clang -fsanitize=fuzzer), they become LLVMFuzzerInitialize
 * and LLVMFuzzerTestOneInput. With GG_FUZZ_REGRESS defined they become
 * fuzz_init_<name> and fuzz_one_<name>, which the regression runner calls.
 *
 * Targets must not leak memory or temp files, must not touch the network, and
 * must stay bounded in time and memory for any input. A property a target checks
 * itself (a round trip, say) fails with FUZZ_CHECK, which aborts like a crash. */
#ifndef GG_FUZZ_H
#define GG_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GG_FUZZ_REGRESS
#define FUZZ_INIT(name)   static void fuzz_init_##name(void)
#define FUZZ_TARGET(name) static int fuzz_one_##name(const uint8_t *data, size_t size)
#else
#define FUZZ_INIT(name)                                    \
	static void fuzz_init_##name(void);                \
	int LLVMFuzzerInitialize(int *argc, char ***argv); \
	int LLVMFuzzerInitialize(int *argc, char ***argv)  \
	{                                                  \
		(void)argc;                                \
		(void)argv;                                \
		fuzz_init_##name();                        \
		return 0;                                  \
	}                                                  \
	static void fuzz_init_##name(void)
#define FUZZ_TARGET(name)                                             \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#endif

/* A property of the library that does not hold: report and abort (a "crash"). */
#define FUZZ_CHECK(cond, ...)                                                                  \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz: %s:%d: check failed: %s: ", __FILE__, __LINE__, \
				#cond);                                                        \
			fprintf(stderr, __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                   \
			abort();                                                               \
		}                                                                              \
	} while (0)

/* The directory for the inputs written to files: $TMPDIR (tests/fuzz/run points it
 * at a private directory it removes afterwards), else /tmp. */
static inline const char *fuzz_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

/* A NUL-terminated copy of the input (the input itself is not). Never NULL. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Write the input to a new file "<tmpdir>/<tag>.XXXXXX" with mode 0600 (a private
 * file, as the credential loaders want). path must hold 4096 bytes. The caller
 * unlinks it. Returns 0, or -1 (and the target skips the input) when the file
 * system fails. */
static inline int fuzz_write_file(const char *tag, const uint8_t *data, size_t size, char *path)
{
	snprintf(path, 4096, "%s/%s.XXXXXX", fuzz_tmpdir(), tag);
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			unlink(path);
			return -1;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, 0600) < 0 || close(fd) < 0) {
		unlink(path);
		return -1;
	}
	return 0;
}

/* A private scratch directory "<tmpdir>/<tag>.XXXXXX" (removed by fuzz_rmdir). */
static inline int fuzz_mkdir(const char *tag, char *path)
{
	snprintf(path, 4096, "%s/%s.XXXXXX", fuzz_tmpdir(), tag);
	return mkdtemp(path) ? 0 : -1;
}

#endif
