#!/bin/sh
# bench/bench-freeze.sh [BUILDDIR]: `gridgpu freeze` beside the apptainer build path,
# `mksquashfs SANDBOX x.sqfs -noappend -comp gzip` then the SIF assembled with siftool
# (definition object + partition, as apptainer does), in one run, on one sandbox.
#
# The sandbox is a debootstrap of Debian 12 (minbase + python3, python3-numpy,
# python3-dev, perl, gcc, g++, make; about 570 MB and 16k entries), made once and kept
# in bench/cache/rootfs (git-ignored). Without root, debootstrap or a reachable mirror,
# an equivalent tree is copied from this machine's /usr (lib, share, bin, up to ~570 MB
# and ~16k files) instead, and the report says so.
#
#   1. RUNS runs of each (default 3), alternating, page cache warm: median wall time,
#      CPU time (user + sys), peak RSS (GNU time), output size, and the ratios.
#   2. Bounded memory: peak RSS of gridgpu freeze on two trees with the same number of
#      files and four times the data (2000 files of 64 KiB, then of 256 KiB).
# Env: GRIDGPU (binary), RUNS, BENCH_CACHE (default bench/cache), MIRROR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
GRIDGPU=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-3}
CACHE=${BENCH_CACHE:-$top/bench/cache}
# The mirror this machine's apt uses (the first URI of its Debian sources).
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p; s/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\) .*/\2/p' \
	/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)}
ROOTFS=$CACHE/rootfs
[ -x "$GRIDGPU" ] || { echo "bench-freeze: $GRIDGPU is not built" >&2; exit 1; }
for c in mksquashfs siftool python3; do
	command -v "$c" >/dev/null || { echo "bench-freeze: $c is not installed (make deps)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "bench-freeze: GNU time is not installed (make deps)" >&2; exit 1; }
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
mkdir -p "$CACHE"
W=$(mktemp -d "$CACHE/run.XXXXXX") # same disk as the tree
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

# ---- the sandbox --------------------------------------------------------------------
PKGS=python3,python3-numpy,python3-dev,perl,gcc,g++,make
if [ ! -f "$CACHE/rootfs.kind" ]; then
	rm -rf "$ROOTFS" "$ROOTFS.tmp"
	if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null &&
		echo "bench-freeze: debootstrap of Debian 12 into $ROOTFS (a few minutes, once)" &&
		debootstrap --variant=minbase --include=$PKGS bookworm "$ROOTFS.tmp" "$MIRROR" \
			>"$CACHE/debootstrap.log" 2>&1; then
		rm -rf "$ROOTFS.tmp/var/cache/apt/archives/"*.deb "$ROOTFS.tmp/var/cache/apt/"*.bin \
			"$ROOTFS.tmp/var/lib/apt/lists/"* 2>/dev/null || true
		mv "$ROOTFS.tmp" "$ROOTFS"
		echo "debootstrap of Debian 12 bookworm (minbase + $PKGS)" >"$CACHE/rootfs.kind"
	else
		echo "bench-freeze: debootstrap not possible here (see $CACHE/debootstrap.log):" \
			"copying a tree from /usr instead" >&2
		rm -rf "$ROOTFS.tmp"
		python3 - "$ROOTFS" <<'EOF'
import os, shutil, sys
dst, budget, files = sys.argv[1], 570 << 20, 16000
used = n = 0
for top in ('/usr/lib', '/usr/share', '/usr/bin'):
    for dp, dns, fns in os.walk(top):
        dns.sort()
        for f in sorted(fns):
            s = os.path.join(dp, f)
            if used >= budget or n >= files:
                break
            d = dst + s
            os.makedirs(os.path.dirname(d), exist_ok=True)
            try:
                if os.path.islink(s):
                    os.symlink(os.readlink(s), d)
                elif os.path.isfile(s):
                    shutil.copy2(s, d)
                    used += os.path.getsize(s)
                else:
                    continue
            except OSError:
                continue
            n += 1
os.makedirs(dst + '/bin', exist_ok=True)
if not os.path.lexists(dst + '/bin/sh'):
    os.symlink('/usr/bin/dash', dst + '/bin/sh')
EOF
		echo "a copy of this machine's /usr (debootstrap was not possible)" >"$CACHE/rootfs.kind"
	fi
fi
bytes=$(du -sb "$ROOTFS" | cut -f1)
entries=$(find "$ROOTFS" | wc -l)
echo "bench-freeze: tree: $ROOTFS, $(cat "$CACHE/rootfs.kind")"
echo "bench-freeze: $((bytes / 1000000)) MB, $entries entries; $(nproc) CPUs; $RUNS runs each, medians;" \
	"load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (cores = CPU s / wall s: the share each got)"
tar cf - -C "$ROOTFS" . 2>/dev/null | cat >/dev/null # warm the page cache

# ---- runs ----------------------------------------------------------------------------
# measure NAME COMMAND...: one run under GNU time; appends "wall cpu rss_kb" to $W/NAME
measure() {
	name=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$W/t" "$@" >/dev/null 2>"$W/err" ||
		{ echo "bench-freeze: $name failed:" >&2; cat "$W/err" >&2; exit 1; }
	awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$W/t" >>"$W/$name"
}
cat >"$W/peer.sh" <<EOF
set -e
mksquashfs "$ROOTFS" "$W/peer.sqfs" -noappend -comp gzip -no-progress
printf 'bootstrap: localimage\nfrom: %s\n\n' "$ROOTFS" >"$W/def"
siftool new "$W/peer.sif"
siftool add "$W/peer.sif" "$W/def" --datatype 1 --groupid 1
siftool add "$W/peer.sif" "$W/peer.sqfs" --datatype 4 --parttype 2 --partfs 1 --partarch 2 --groupid 1
rm -f "$W/peer.sqfs"
EOF
: >"$W/ours"
: >"$W/peer"
i=0
while [ $i -lt "$RUNS" ]; do
	i=$((i + 1))
	rm -f "$W/ours.sif" "$W/peer.sif"
	measure ours "$GRIDGPU" freeze -q "$ROOTFS" -o "$W/ours.sif"
	ours_size=$(stat -c %s "$W/ours.sif")
	measure peer sh "$W/peer.sh"
	peer_size=$(stat -c %s "$W/peer.sif")
	echo "bench-freeze: run $i: gridgpu $(tail -1 "$W/ours" | cut -d' ' -f1) s, mksquashfs+siftool $(tail -1 "$W/peer" | cut -d' ' -f1) s"
done
"$GRIDGPU" verify -q "$W/ours.sif" || { echo "bench-freeze: gridgpu's image does not verify" >&2; exit 1; }
siftool list "$W/peer.sif" | grep -q "FS (Squashfs" || { echo "bench-freeze: the peer's image is wrong" >&2; exit 1; }

median() { # FILE COLUMN
	cut -d' ' -f"$2" "$1" | sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ow=$(median "$W/ours" 1) oc=$(median "$W/ours" 2) or=$(median "$W/ours" 3)
pw=$(median "$W/peer" 1) pc=$(median "$W/peer" 2) pr=$(median "$W/peer" 3)
echo
awk -v ow="$ow" -v oc="$oc" -v or="$or" -v os="$ours_size" -v pw="$pw" -v pc="$pc" -v pr="$pr" -v ps="$peer_size" '
BEGIN {
	printf "%-24s %9s %9s %7s %11s %13s\n", "", "wall s", "CPU s", "cores", "peak RSS", "output"
	printf "%-24s %9.2f %9.2f %7.2f %7.1f MiB %9.1f MB\n", "gridgpu freeze", ow, oc, oc / ow, or / 1024, os / 1e6
	printf "%-24s %9.2f %9.2f %7.2f %7.1f MiB %9.1f MB\n", "mksquashfs + siftool", pw, pc, pc / pw, pr / 1024, ps / 1e6
	printf "%-24s %9.3f %9.3f %7s %11.3f %13.4f\n", "ratio (gridgpu / peer)", ow / pw, oc / pc, "", or / pr, os / ps
	printf "\ntargets: wall <= 0.15x: %s (%.3f)   size <= 1.0x: %s (%.4f)   peak RSS <= 64 MiB: %s (%.1f MiB)\n",
		ow / pw <= 0.15 ? "met" : "MISSED", ow / pw, os <= ps ? "met" : "MISSED", os / ps,
		or <= 65536 ? "met" : "MISSED", or / 1024
}'

# ---- bounded memory: same number of files, four times the data --------------------------
mk_tree() { # DIR KIB
	[ -f "$1/.done" ] && return 0
	rm -rf "$1"
	python3 - "$1" "$2" <<'EOF'
import base64, os, random, sys
d, kib = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
for i in range(2000):
    sub = os.path.join(d, 'd%02d' % (i % 40))
    os.makedirs(sub, exist_ok=True)
    raw = rnd.randbytes(kib * 1024 * 3 // 4)
    with open(os.path.join(sub, 'f%04d' % i), 'wb') as f:
        f.write(base64.b64encode(raw)[:kib * 1024])
open(os.path.join(d, '.done'), 'w').close()
EOF
}
mk_tree "$CACHE/mem-64k" 64
mk_tree "$CACHE/mem-256k" 256
: >"$W/m64"
: >"$W/m256"
rm -f "$W/m.sif"
measure m64 "$GRIDGPU" freeze -q "$CACHE/mem-64k" -o "$W/m.sif"
rm -f "$W/m.sif"
measure m256 "$GRIDGPU" freeze -q "$CACHE/mem-256k" -o "$W/m.sif"
rm -f "$W/m.sif"
awk -v a="$(cut -d' ' -f3 "$W/m64")" -v b="$(cut -d' ' -f3 "$W/m256")" -v f="$or" -v e="$entries" 'BEGIN {
	printf "\nmemory: peak RSS of gridgpu freeze, 2000 files of 64 KiB (125 MiB): %.1f MiB; of 256 KiB (500 MiB): %.1f MiB (%+.1f MiB for 4x the data)\n", a / 1024, b / 1024, (b - a) / 1024
	printf "        the benchmark tree (%d entries): %.1f MiB\n", e, f / 1024
}'
