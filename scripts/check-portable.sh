#!/bin/sh
# scripts/check-portable.sh: no Linux-only interface outside the compat layer
# (lib/compat/, compat.h says why). Looks in lib/, cli/ and include/ for the calls,
# flags and paths issue 50 lists and those moved there since, comments left out.
# A line that must name /proc for a reason the compat layer cannot take (a probe with
# its fallback beside it, or text run on a Linux node) says so with "portable:" in a
# comment on that line.
# Exit 0: none found; 1: each one found is listed (file:line: text).
set -eu
cd "$(dirname "$0")/.."
WORDS='O_TMPFILE|linkat|renameat2|getrandom|sched_getaffinity|CPU_COUNT|prctl|O_PATH|pipe2|SOCK_CLOEXEC|SOCK_NONBLOCK|RWF_NOWAIT|preadv2|O_DIRECT|fallocate|syncfs|sync_file_range|O_NOATIME|MSG_NOSIGNAL|mkostemp|SCHED_BATCH|pidfd_open|fstatfs|TMPFS_MAGIC|accept4|dup3|epoll_[a-z]+|inotify_[a-z]+|signalfd|eventfd|memfd_create|copy_file_range|close_range|syscall|SYS_openat2|RESOLVE_BENEATH|[lf]?listxattr|[lf]?getxattr|malloc_usable_size|madvise|mallopt|sbrk|explicit_bzero|splice|F_SETPIPE_SZ|SPLICE_F_[A-Z]+'
# shellcheck disable=SC2016 # awk's own
found=$(find lib cli include -name '*.[ch]' ! -path 'lib/compat/*' | sort | xargs awk -v words="$WORDS" '
	FNR == 1 { incomment = 0 }
	{
		line = $0
		orig = $0
		# string literals: "P" for one that names /proc, else "S" (a "/*" in one is no comment)
		code = ""
		while (match(line, /"([^"\\]|\\.)*"/)) {
			lit = substr(line, RSTART, RLENGTH)
			code = code substr(line, 1, RSTART - 1) (lit ~ /\/proc\// ? "\"P\"" : "\"S\"")
			line = substr(line, RSTART + RLENGTH)
		}
		line = code line
		# drop comments: /* ... */ on the line, a comment carried over, // to the end
		if (incomment) {
			if (index(line, "*/")) { sub(/^.*\*\//, "", line); incomment = 0 } else next
		}
		while (match(line, /\/\*.*\*\//)) line = substr(line, 1, RSTART - 1) " " substr(line, RSTART + RLENGTH)
		if (index(line, "/*")) { sub(/\/\*.*$/, "", line); incomment = 1 }
		sub(/\/\/.*$/, "", line)
		hit = line ~ ("(^|[^A-Za-z0-9_])(" words ")([^A-Za-z0-9_]|$)")
		if (!hit && (line ~ /"P"/ || line ~ /\/proc\//) && orig !~ /portable:/) hit = 1
		if (hit) printf "%s:%d: %s\n", FILENAME, FNR, orig
	}')
if [ -n "$found" ]; then
	echo "check-portable: Linux-only interfaces outside lib/compat/ (put them behind lib/compat/compat.h):" >&2
	echo "$found" >&2
	exit 1
fi
echo "check-portable: no Linux-only call outside lib/compat/ ($(find lib cli include -name '*.[ch]' ! -path 'lib/compat/*' | wc -l) files)"
