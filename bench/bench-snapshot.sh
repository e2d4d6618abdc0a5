#!/bin/sh
# bench/bench-snapshot.sh [BUILDDIR]: the snapshot a session's launcher writes as the
# session ends (libexec/gridgpu/session-launcher's snapshot(), run as the node runs
# it), beside the peer tools doing the same work on the same sandbox in the same run.
# Not a test: it prints figures.
#
# A sandbox of SIZE_MB (default 1024) MB: 4096 files, half of them text-like
# (compressible), half random, in 64 directories; the mark made; then CHANGED_MB
# (default 50) MB changed: new files (a package installed: 200 files), some of the
# image's files rewritten, a few removed. Timed, RUNS runs each (default 3), the
# page cache warm as on the node at a session's end:
#   1. gridgpu's snapshot(): the list of every entry, the changed files, zstd -1;
#   2. GNU tar --listed-incremental (level 1 after a level 0 made with the mark),
#      through zstd -1: the peer that writes the difference of a tree;
#   3. find -cnewer | tar | zstd -1: the changed files alone, without the list of
#      every entry (what the list costs).
# Issue 51's target: the snapshot under 3 s. Env: RUNS, SIZE_MB, CHANGED_MB, TMPDIR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
SIZE_MB=${SIZE_MB:-1024}
CHANGED_MB=${CHANGED_MB:-50}
for c in tar zstd find python3; do
	command -v "$c" >/dev/null || { echo "bench-snapshot: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
W=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench-snapshot.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
SD=$W/sd G=$SD/.gridgpu SB=$G/sandbox
mkdir -p "$SB"
: >"$G/sandbox-mounts"

python3 - "$SB" "$SIZE_MB" <<'PY'
import os, random, sys
top, mb = sys.argv[1], int(sys.argv[2])
rnd = random.Random(51)
n = 4096
size = mb * 1024 * 1024 // n
words = [("%x" % rnd.getrandbits(24)).encode() for _ in range(4000)]
for i in range(n):
    d = os.path.join(top, "usr/lib/d%02d" % (i % 64))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        if i % 2:
            f.write(os.urandom(size))
        else:
            b = b" ".join(rnd.choice(words) for _ in range(size // 6))
            f.write(b[:size].ljust(size, b"\n"))
PY
touch "$G/snapshot.mark"
tar --listed-incremental="$W/level0.snar" -cf /dev/null -C "$SB" . # the peer's level 0
sleep 1
python3 - "$SB" "$CHANGED_MB" <<'PY'
import os, sys
top, mb = sys.argv[1], int(sys.argv[2])
new = os.path.join(top, "usr/local/lib/python3/site-packages/pkg")
os.makedirs(new, exist_ok=True)
per = mb * 1024 * 1024 // 2 // 200
for i in range(200):
    with open(os.path.join(new, "m%03d.py" % i), "wb") as f:
        f.write((b"def f%d(x):\n    return x * %d\n" % (i, i)) * (per // 30) + os.urandom(per // 2))
left = mb * 1024 * 1024 // 2
i = 1
while left > 0:
    p = os.path.join(top, "usr/lib/d%02d/f%05d" % (i % 64, i))
    n = os.path.getsize(p)
    with open(p, "r+b") as f:
        f.write(os.urandom(min(n, 4096)))
    left -= n
    i += 2
for i in range(4000, 4010):
    os.unlink(os.path.join(top, "usr/lib/d%02d/f%05d" % (i % 64, i)))
PY
sync

# the launcher's own snapshot(), as the node runs it
{
	echo "SD='$SD' G='$G' enter=x snap_time=600 snap_max=$((8 << 30)) TIMEOUT=\$(command -v timeout)"
	echo "snap_error= snap_size=0 snap_at=0; publish() { :; }; log() { :; }"
	sed -n '/^SB=\$G\/sandbox$/,/^}$/p' "$top/libexec/gridgpu/session-launcher"
	echo 'snapshot bench; [ -z "$snap_error" ] || { echo "$snap_error" >&2; exit 1; }'
} >"$W/snap.sh"

ms() { echo $(($(date +%s%N) / 1000000)); }
run() { # NAME CMD: RUNS runs, the best and the median
	name=$1
	shift
	times=""
	i=0
	while [ $i -lt "$RUNS" ]; do
		t0=$(ms)
		sh -c "$*" >/dev/null
		times="$times $(($(ms) - t0))"
		i=$((i + 1))
	done
	echo "$times" | tr ' ' '\n' | sed '/^$/d' | sort -n |
		awk -v n="$name" '{ t[NR] = $1 } END { printf "%-44s best %6d ms  median %6d ms\n", n, t[1], t[int((NR + 1) / 2)] }'
}
cat "$SB"/usr/lib/*/* "$SB"/usr/local/lib/python3/site-packages/pkg/* >/dev/null # warm
echo "bench-snapshot: a sandbox of $(du -sm "$SB" | cut -f1) MB, $(find "$SB" -type f -cnewer "$G/snapshot.mark" | wc -l) files changed ($(find "$SB" -type f -cnewer "$G/snapshot.mark" -print0 | du -cm --files0-from=- | tail -n 1 | cut -f1) MB), $(nproc) cores"
run "gridgpu snapshot() (list + changed, zstd -1)" "sh '$W/snap.sh'"
echo "  its size: $(stat -c %s "$SD/gridgpu-snapshot.tar") bytes"
run "tar --listed-incremental level 1 | zstd -1" \
	"cp '$W/level0.snar' '$W/l1.snar' && tar --listed-incremental='$W/l1.snar' -cf - -C '$SB' . | zstd -q -1 -T0 -c >'$W/incr.tar.zst'"
echo "  its size: $(stat -c %s "$W/incr.tar.zst") bytes"
run "find -cnewer -print0 | tar -T - | zstd -1" \
	"cd '$SB' && find . -type f -cnewer '$G/snapshot.mark' -print0 | tar -cf - --null --no-recursion -T - | zstd -q -1 -T0 -c >'$W/chg.tar.zst'"
echo "  its size: $(stat -c %s "$W/chg.tar.zst") bytes"
