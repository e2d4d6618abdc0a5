#!/bin/sh
# bench/bench-freeze.sh [BUILDDIR]: `gridgpu freeze` beside the apptainer build path,
# `mksquashfs SANDBOX x.sqfs -noappend -comp gzip` then the SIF assembled with siftool
# (definition object + partition, as apptainer does), in one run, on trees of five
# shapes (SHAPES, default all five):
#   deboot  a debootstrap of Debian 12 (minbase + python3, python3-numpy, python3-dev,
#           perl, gcc, g++, make; about 570 MB and 16k entries), made once and kept in
#           bench/cache/rootfs (git-ignored). Without root, debootstrap or a reachable
#           mirror, an equivalent tree is copied from this machine's /usr instead, and
#           the report says so.
#   pyenv, packed, huge, tiny: bench/freeze-trees.sh (a Python environment of many
#           small packages, already-compressed files, three files of 200 MiB, 500k tiny
#           files), made once in bench/cache/tree-SHAPE.
#
#   1. RUNS runs of each (default 1: mksquashfs takes most of the time, 100 s on the
#      tiny tree here; RUNS=3 gives medians), alternating, page cache warm (the tree is
#      read again before every run): wall time, CPU time (user + sys), peak RSS (GNU
#      time), output size, and the ratios.
#   2. The compression floor: every data and fragment block of gridgpu's image
#      compressed again on one thread (bench/freeze-floor.c), in CPU seconds: with
#      libdeflate at level 6 over all blocks, and with freeze's own compressor (its
#      tests, level 6, the Huffman coder for matchless blocks, nothing for hopeless
#      ones); divided by the cores, the wall time no freeze with that codec can beat.
#      And over the blocks without repeats (float weights), gridgpu's Huffman coder beside
#      libdeflate level 1 and zlib's Z_HUFFMAN_ONLY: CPU time and size.
#      The disk's floor: after each of gridgpu's runs, dd writes as many MiB as its
#      image to the same disk as freeze does (O_DIRECT, 1 MiB pieces, fdatasync); CPU s
#      over that time is the highest CPU/wall a freeze doing that work can reach here.
#   3. Bounded memory: peak RSS of gridgpu freeze on two trees with the same number of
#      files and four times the data (2000 files of 64 KiB, then of 256 KiB), and the
#      stated budget (72 MiB + 512 bytes per entry with the heap in huge pages, as the
#      gridgpu program has it: see gg_image_freeze) checked on every shape.
#   4. Copies: a 200 MiB tar (the huge shape's) and a copy of it in another directory
#      (bench/cache/copies), then the tar alone, once each: freeze compares the copy
#      with the tar instead of compressing it again (lib/image/dup.c); mksquashfs
#      compresses both and keeps one.
# Env: GRIDGPU (binary), RUNS, SHAPES, BENCH_CACHE (default bench/cache), MIRROR.
# COLD=1: the page cache dropped before every run of either tool (as root), as for a
# sandbox frozen for the first time: the disk's latency instead of the page cache's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
GRIDGPU=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-1}
SHAPES=${SHAPES:-deboot pyenv packed huge tiny}
CACHE=${BENCH_CACHE:-$top/bench/cache}
# The mirror this machine's apt uses (the first URI of its Debian sources).
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p; s/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\) .*/\2/p' \
	/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)}
ROOTFS=$CACHE/rootfs
[ -x "$GRIDGPU" ] || { echo "bench-freeze: $GRIDGPU is not built" >&2; exit 1; }
for c in mksquashfs siftool python3 cc dpkg-deb; do
	command -v "$c" >/dev/null || { echo "bench-freeze: $c is not installed (make deps)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "bench-freeze: GNU time is not installed (make deps)" >&2; exit 1; }
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
if [ -n "${COLD:-}" ] && ! [ -w /proc/sys/vm/drop_caches ]; then
	echo "bench-freeze: COLD=1 drops the page cache, which needs root" >&2
	exit 1
fi
# prepare TREE, before each measured run of either tool: the tree read into the page
# cache again, or (COLD=1) the page cache dropped. Warming once per shape was not
# enough: this machine's page cache loses about 1 MB/s of a tree nobody reads (seen on
# the Python tree: 731 -> 632 MB cached in 106 s, 21 GB free, no reclaim in
# /proc/vmstat), so the tool run after mksquashfs's 30 s found part of it on the disk,
# and the one run after the other's read did not: gridgpu went first and paid for it
# (4.8 s against 4.2 s, CPU 9.3 against 8.0 s).
prepare() {
	if [ -n "${COLD:-}" ]; then
		sync && echo 3 >/proc/sys/vm/drop_caches
	else
		tar cf - -C "$1" . 2>/dev/null | cat >/dev/null
	fi
}
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
if [ -n "${COLD:-}" ]; then
	echo "bench-freeze: page cache dropped before every run (COLD=1)"
fi
echo "bench-freeze: $(nproc) CPUs; $RUNS runs each, medians; load average at start:" \
	"$(cut -d' ' -f1-3 /proc/loadavg) (cores = CPU s / wall s: the share each got)"
cc -std=c11 -D_GNU_SOURCE -O2 -I"$top/lib" -I"$top/include" -o "$W/floor" "$top/bench/freeze-floor.c" \
	"$B/lib/libgridgpu.a" -lsquashfs -ldeflate -lz ||
	{ echo "bench-freeze: cannot build bench/freeze-floor.c" >&2; exit 1; }

# ---- runs ----------------------------------------------------------------------------
# measure NAME COMMAND...: one run under GNU time; appends "wall cpu rss_kb" to $W/NAME
measure() {
	name=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$W/t" "$@" >/dev/null 2>"$W/err" ||
		{ echo "bench-freeze: $name failed:" >&2; cat "$W/err" >&2; exit 1; }
	awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$W/t" >>"$W/$name"
}
median() { # FILE COLUMN
	cut -d' ' -f"$2" "$1" | sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# peer_script TREE: what apptainer build does, into $W/peer.sif
peer_script() {
	printf '%s\n' 'set -e' \
		"mksquashfs '$1' '$W/peer.sqfs' -noappend -comp gzip -no-progress" \
		"printf 'bootstrap: localimage\\nfrom: %s\\n\\n' '$1' >'$W/def'" \
		"siftool new '$W/peer.sif'" \
		"siftool add '$W/peer.sif' '$W/def' --datatype 1 --groupid 1" \
		"siftool add '$W/peer.sif' '$W/peer.sqfs' --datatype 4 --parttype 2 --partfs 1 --partarch 2 --groupid 1" \
		"rm -f '$W/peer.sqfs'" >"$W/peer.sh"
}

# disk_floor BYTES: the wall time of writing that many bytes (whole MiB) to the disk the
# images go to, as freeze writes them (O_DIRECT, 1 MiB at a time, then fdatasync): no
# freeze of a tree whose image is that big can take less here. Appended to $W/disk.
disk_floor() {
	/usr/bin/time -f "%e" -o "$W/t" dd if=/dev/zero of="$W/dd" bs=1M count=$(($1 >> 20)) \
		oflag=direct conv=fdatasync 2>/dev/null ||
		{ echo "bench-freeze: dd to $W failed" >&2; exit 1; }
	cat "$W/t" >>"$W/disk"
	rm -f "$W/dd"
}

# one_shape NAME TREE: the runs, the check of both images, the floor: a line in $W/rows
one_shape() {
	shape=$1 tree=$2
	bytes=$(du -sb "$tree" | cut -f1)
	entries=$(find "$tree" | wc -l)
	echo "bench-freeze: $shape: $tree, $((bytes / 1000000)) MB, $entries entries"
	peer_script "$tree"
	: >"$W/ours"
	: >"$W/peer"
	: >"$W/sync"
	: >"$W/disk"
	i=0
	while [ $i -lt "$RUNS" ]; do
		i=$((i + 1))
		rm -f "$W/ours.sif" "$W/peer.sif"
		prepare "$tree"
		measure ours "$GRIDGPU" freeze -q "$tree" -o "$W/ours.sif"
		disk_floor "$(stat -c %s "$W/ours.sif")"
		prepare "$tree"
		measure peer sh "$W/peer.sh"
		measure sync sync "$W/peer.sif" # what freeze's fsync would cost the peer
		echo "bench-freeze: $shape run $i: gridgpu $(tail -1 "$W/ours" | cut -d' ' -f1) s," \
			"mksquashfs+siftool $(tail -1 "$W/peer" | cut -d' ' -f1) s"
	done
	"$GRIDGPU" verify -q "$W/ours.sif" || { echo "bench-freeze: gridgpu's image does not verify" >&2; exit 1; }
	siftool list "$W/peer.sif" | grep -q "FS (Squashfs" || { echo "bench-freeze: the peer's image is wrong" >&2; exit 1; }
	floor=$("$W/floor" "$W/ours.sif") || { echo "bench-freeze: freeze-floor failed" >&2; exit 1; }
	echo "$shape $bytes $entries $(median "$W/ours" 1) $(median "$W/ours" 2)" \
		"$(median "$W/ours" 3) $(stat -c %s "$W/ours.sif") $(median "$W/peer" 1)" \
		"$(median "$W/peer" 2) $(median "$W/peer" 3) $(stat -c %s "$W/peer.sif") $floor" \
		"$(median "$W/sync" 1) $(median "$W/disk" 1)" >>"$W/rows"
	rm -f "$W/ours.sif" "$W/peer.sif"
}

: >"$W/rows"
for shape in $SHAPES; do
	case $shape in
	deboot) one_shape deboot "$ROOTFS" ;;
	*) one_shape "$shape" "$(sh "$top/bench/freeze-trees.sh" "$CACHE" "$shape")" ;;
	esac
done
echo
echo "deboot: $(cat "$CACHE/rootfs.kind"); load average now $(cut -d' ' -f1-3 /proc/loadavg)"
# a row: shape bytes entries wall cpu rss size | peer wall cpu rss size |
#        blocks N raw R deflate_all S1 deflate_needed S2 probe S3 codec S4
#        matchless M huffman S5 Z5 level1 S6 Z6 zlib_huffman S7 Z7 | peer's sync s |
#        disk s
awk -v cores="$(nproc)" '
BEGIN {
	printf "%-6s %5s %6s | %6s %6s %5s %5s %6s | %6s %6s %5s %5s %6s | %6s %5s %5s %6s | %6s %6s %5s\n",
		"shape", "MB", "entries", "ours s", "CPU s", "cores", "RSS", "MB out",
		"peer s", "CPU s", "cores", "RSS", "MB out", "wall x", "CPU x", "CPU/w", "size x",
		"floor", "codec", "x codec"
}
{
	all = $17 / cores; codec = $23 / cores
	printf "%-6s %5d %6d | %6.2f %6.2f %5.2f %5.0f %6.1f | %6.2f %6.2f %5.2f %5.0f %6.1f | %6.3f %5.3f %5.2f %6.4f | %6.2f %6.2f %5.2f\n",
		$1, $2 / 1e6, $3, $4, $5, $5 / $4, $6 / 1024, $7 / 1e6, $8, $9, $9 / $8, $10 / 1024,
		$11 / 1e6, $4 / $8, $5 / $9, $5 / $4, $7 / $11, all, codec, $4 / codec
	if ($25 > 0)
		coder = coder sprintf("\n  %-6s %5d blocks: gridgpu %.3f s %.3f MB, libdeflate level 1 %.3f s %.3f MB, zlib Z_HUFFMAN_ONLY %.3f s %.3f MB",
			$1, $25, $27, $28 / 1e6, $30, $31 / 1e6, $33, $34 / 1e6)
	durable = durable sprintf("\n  %-6s %.2f s (%.0f MB)", $1, $35, $11 / 1e6)
	disk = disk sprintf("\n  %-6s %.2f s of gridgpu'"'"'s %.2f s; CPU s / disk s: %.2f", $1, $36, $4, $5 / $36)
	cpuw = $5 / $4 >= 1.8 ? "met" : "MISSED"
	if (cpuw == "MISSED" && $5 / $36 < 1.8)
		cpuw = cpuw sprintf(" (the disk: CPU s / disk s is %.2f)", $5 / $36)
	budget = 72 * 1024 + $3 * 512 / 1024
	ok = ok sprintf("\n  %-6s wall <= 0.15x: %s, CPU/wall >= 1.8: %s, size <= 1.0x: %s, RSS <= %.0f MiB: %s",
		$1, $4 / $8 <= 0.15 ? "met" : "MISSED",
		$2 < 500e6 ? "n/a (under 500 MB)" : cpuw,
		$7 <= $11 ? "met" : "MISSED", budget / 1024, $6 <= budget ? "met" : "MISSED")
}
END {
	print "\nRSS in MiB. wall x, CPU x, size x: gridgpu / peer. CPU/w: gridgpu CPU s / wall s."
	print "On a busy machine wall x is noise (each tool gets what the others leave: see cores);"
	print "CPU x is steadier, and wall x = CPU x * (peer cores / gridgpu cores)."
	print "floor: CPU s of libdeflate level 6 over every block / cores; codec: of freeze'"'"'s"
	print "own compressor (its tests, the Huffman coder for matchless blocks) / cores;"
	print "x codec: wall / codec, how close freeze came to its codec'"'"'s floor."
	if (coder != "")
		print "blocks without repeats, coded on one thread (CPU s, size):" coder
	print "freeze fsyncs its image before it renames it into place (no half-written image after"
	print "a crash); its wall includes that. mksquashfs and siftool do not: sync of their image"
	print "right after them took (wall, median):" durable
	print "the disk alone: writing as many MiB as gridgpu'"'"'s image to the same disk with O_DIRECT,"
	print "then fdatasync (dd, median): the wall no freeze can beat there. Where CPU s / disk s"
	print "is under 1.8, no freeze doing that CPU work reaches CPU/wall 1.8 on this disk:" disk
	print "targets:" ok
}' "$W/rows"

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
awk -v a="$(cut -d' ' -f3 "$W/m64")" -v b="$(cut -d' ' -f3 "$W/m256")" 'BEGIN {
	printf "\nmemory: peak RSS of gridgpu freeze, 2000 files of 64 KiB (125 MiB): %.1f MiB; of 256 KiB (500 MiB): %.1f MiB (%+.1f MiB for 4x the data)\n", a / 1024, b / 1024, (b - a) / 1024
}'

# ---- copies: a file and a copy of it cost freeze the file alone (lib/image/dup.c) -------
huge=$(sh "$top/bench/freeze-trees.sh" "$CACHE" huge)
if [ ! -f "$CACHE/copies/.done" ]; then
	rm -rf "$CACHE/copies"
	mkdir -p "$CACHE/copies/a" "$CACHE/copies/b"
	cp "$huge/site-packages.tar" "$CACHE/copies/a/lib.tar"
	cp "$huge/site-packages.tar" "$CACHE/copies/b/lib.tar"
	touch "$CACHE/copies/.done"
fi
for t in both one; do
	d=$CACHE/copies
	[ $t = one ] && d=$CACHE/copies/a
	: >"$W/c-ours-$t"
	: >"$W/c-peer-$t"
	rm -f "$W/ours.sif" "$W/peer.sif"
	prepare "$d"
	measure "c-ours-$t" "$GRIDGPU" freeze -q "$d" -o "$W/ours.sif"
	peer_script "$d"
	prepare "$d"
	measure "c-peer-$t" sh "$W/peer.sh"
done
rm -f "$W/ours.sif" "$W/peer.sif"
printf '\ncopies: a 200 MiB tar and a copy of it: gridgpu %s s (%s s for the tar alone), mksquashfs+siftool %s s (%s s alone)\n' \
	"$(cut -d' ' -f1 "$W/c-ours-both")" "$(cut -d' ' -f1 "$W/c-ours-one")" \
	"$(cut -d' ' -f1 "$W/c-peer-both")" "$(cut -d' ' -f1 "$W/c-peer-one")"
