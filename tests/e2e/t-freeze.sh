#!/bin/sh
# gridgpu freeze / inspect / verify, against the peers: siftool reads the SIF, the
# partition it dumps is what unsquashfs and sqfsdiff (squashfs-tools-ng) see, and a
# file-by-file manifest of the extraction equals the sandbox's. Then every bad input:
# a clear error, a non-zero exit, and no .sif or temp file left behind. Needs root
# (device nodes, xattrs in trusted., owners, a tmpfs for the disk-full case).
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$T_TMP/w
mkdir -p "$W"
chmod 755 "$T_TMP" "$W" # the unreadable-file case runs as nobody
cd "$W" || exit 1

for c in siftool unsquashfs mksquashfs sqfsdiff python3 setpriv; do
	command -v "$c" >/dev/null || { not_ok "$c is installed (make deps)"; done_testing; exit 1; }
done
if [ "$(id -u)" != 0 ]; then
	echo "ok 1 # SKIP t-freeze needs root"
	echo "1..1"
	exit 0
fi

# no_leftovers DIR NAME: neither NAME nor NAME.tmp.* exists in DIR
no_leftovers() { for f in "$1/$2"*; do [ -e "$f" ] && return 1; done; return 0; }
# have FILE...: one of the (globbed) files exists
have() { for f in "$@"; do [ -e "$f" ] && return 0; done; return 1; }
# fails_clean "description" EXIT "message" OUTPUT-NAME gridgpu-args...: expect_fail + no leftovers
fails_clean() {
	d=$1 code=$2 msg=$3 out=$4; shift 4
	expect_fail "$d" "$code" "$msg" "$@"
	if no_leftovers "$W" "$out"; then ok "$d: nothing left behind"; else not_ok "$d: nothing left behind ($(echo "$W/$out"*))"; fi
}

# ---- helpers: a canonical manifest of a tree, test images -----------------------------
cat >manifest.py <<'EOF'
import hashlib, os, stat, sys
root = sys.argv[1]
rows, groups = [], {}
for dp, dns, fns in os.walk(root):
    for name in dns + fns + (['.'] if dp == root else []):
        p = root if name == '.' else os.path.join(dp, name)
        rel = os.path.relpath(p, root)
        st = os.lstat(p)
        m = st.st_mode
        extra, key = '', None
        if stat.S_ISREG(m):
            h = hashlib.sha256()
            with open(p, 'rb') as f:
                for b in iter(lambda: f.read(1 << 20), b''):
                    h.update(b)
            extra = 'size=%d sha256=%s' % (st.st_size, h.hexdigest())
            if st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                groups.setdefault(key, []).append(rel)
        elif stat.S_ISLNK(m):
            extra = 'target=' + os.readlink(p)
        elif stat.S_ISCHR(m) or stat.S_ISBLK(m):
            extra = 'dev=%d:%d' % (os.major(st.st_rdev), os.minor(st.st_rdev))
        xs = sorted(k for k in os.listxattr(p, follow_symlinks=False)
                    if k.split('.')[0] in ('user', 'trusted', 'security'))
        xa = ','.join('%s=%s' % (k, os.getxattr(p, k, follow_symlinks=False).hex()) for k in xs)
        rows.append((rel, key, 'type=%o mode=%04o owner=%d:%d mtime=%d %s xattrs=%s' % (
            stat.S_IFMT(m) >> 12, stat.S_IMODE(m), st.st_uid, st.st_gid, int(st.st_mtime), extra, xa)))
# a hard-link group is named by its smallest path, whatever the directory order
print('\n'.join(sorted('%s %s%s' % (rel, line, ' links=' + min(groups[key]) if key else '')
                       for rel, key, line in rows)))
EOF

# The sandbox: every entry kind squashfs can hold.
mk_sandbox() {
	d=$1
	mkdir -p "$d/bin" "$d/etc" "$d/usr/lib" "$d/dev" "$d/tmp" "$d/ünï cødé" "$d/.singularity.d/env" "$d/empty"
	cp /bin/dash "$d/bin/sh"
	cp /bin/ls "$d/bin/suid" && chmod 4755 "$d/bin/suid"
	cp /bin/true "$d/bin/sgid" && chmod 2711 "$d/bin/sgid"
	chmod 1777 "$d/tmp"
	printf 'hello\n' >"$d/etc/hello"
	ln "$d/etc/hello" "$d/etc/hard1"
	ln "$d/etc/hello" "$d/usr/lib/hard2"
	ln -s hello "$d/etc/rel-link"
	ln -s /etc/hello "$d/etc/abs-link"
	ln -s ../../nowhere "$d/usr/lib/dangling"
	printf 'x' >"$d/ünï cødé/fïlé ñame"
	head -c 300000 /dev/urandom >"$d/usr/lib/random.bin"
	seq 1 200000 >"$d/usr/lib/numbers.txt"
	# a copy (stored once, with its own mode, owner and xattr), and a file of the same
	# size whose bytes differ in the middle (not a copy)
	cp "$d/usr/lib/numbers.txt" "$d/etc/numbers-copy.txt" && chmod 600 "$d/etc/numbers-copy.txt"
	cp "$d/usr/lib/numbers.txt" "$d/usr/numbers-z.txt" # fed last: a copy with an xattr
	seq 1 200000 | sed 's/^99999$/99998/' >"$d/etc/numbers-near.txt"
	# float32 weights: no repeats for LZ77, so freeze Huffman codes them (huffman.c)
	python3 -c 'import random, struct, sys; r = random.Random(7)
sys.stdout.buffer.write(b"".join(struct.pack("<f", r.gauss(0, 0.05)) for _ in range(150000)))' \
		>"$d/usr/lib/weights.f32"
	truncate -s 64M "$d/sparse"
	printf 'middle' | dd of="$d/sparse" bs=1 seek=33554432 conv=notrunc 2>/dev/null
	truncate -s 1M "$d/hole-at-end"
	: >"$d/empty-file"
	mknod "$d/dev/null" c 1 3
	mknod "$d/dev/loop9" b 7 9
	mknod "$d/dev/big" c 4095 1048575
	mkfifo "$d/fifo"
	python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('$d/sock')"
	python3 - "$d" <<'EOF'
import os, sys
d = sys.argv[1]
os.setxattr(d + '/etc/hello', 'user.colour', b'blue')
os.setxattr(d + '/etc/hello', 'trusted.empty', b'')
os.setxattr(d + '/bin', 'security.big', b'v' * 3000)
os.setxattr(d + '/etc/rel-link', 'trusted.onlink', b'x', follow_symlinks=False)
os.chown(d + '/usr/lib/numbers.txt', 100000, 200000)
os.chown(d + '/etc/rel-link', 1234, 5678, follow_symlinks=False)
os.chown(d + '/etc/numbers-copy.txt', 7, 8)
os.setxattr(d + '/etc/numbers-copy.txt', 'user.copy', b'yes')
os.setxattr(d + '/usr/numbers-z.txt', 'trusted.copy', b'z' * 100)
os.utime(d + '/empty-file', (0, 0))
os.utime(d + '/usr/lib/random.bin', (2**31 - 1, 2**31 - 1))
os.utime(d + '/hole-at-end', (2**32 - 1, 2**32 - 1))
EOF
	printf '#!/bin/sh\nexec "$@"\n' >"$d/.singularity.d/runscript"
	chmod 755 "$d/.singularity.d/runscript"
	printf '{"maintainer":"physicist"}' >"$d/.singularity.d/labels.json"
	printf 'export GG_TEST=1\n' >"$d/.singularity.d/env/90-environment.sh"
}
mk_sandbox sb
touch -h -d @1700000000 sb sb/* 2>/dev/null

# ---- a freeze, read by the peers ---------------------------------------------------
run_gg freeze sb -o a.sif
expect_eq "freeze a sandbox exits 0" "$RC" 0
[ -f a.sif ] && ok "a.sif written" || not_ok "a.sif written"
expect_eq "a.sif has apptainer's mode 0755" "$(stat -c %a a.sif)" 755
no_leftovers "$W" a.sif.tmp && ok "no temp file after success" || not_ok "no temp file after success"

list=$(siftool list a.sif 2>&1)
echo "$list" | grep -q '|1 *|NONE *|.*|Def.FILE' && ok "siftool list: Def.FILE in group 1" || not_ok "siftool list: Def.FILE in group 1 ($list)"
[ "$(echo "$list" | grep -c '|1 *|NONE *|.*|JSON.Generic')" = 2 ] && ok "siftool list: two JSON objects in group 1" || not_ok "siftool list: two JSON objects in group 1"
echo "$list" | grep -q '^4 *|1 *|NONE *|32768-.*|FS (Squashfs/\*System/amd64)' && ok "siftool list: primary squashfs partition at 32768" || not_ok "siftool list: primary squashfs partition ($list)"
info=$(siftool info 4 a.sif 2>&1)
echo "$info" | grep -q "Partition Type: *\*System" && echo "$info" | grep -q "Filesystem Type: *Squashfs" &&
	echo "$info" | grep -q "Group ID: *1" && ok "siftool info: partition type, filesystem, group" || not_ok "siftool info ($info)"
siftool header a.sif | grep -q "Primary Architecture: *amd64" && ok "siftool header: amd64" || not_ok "siftool header: amd64"
siftool header a.sif | grep -q "Descriptors Free: *44" && ok "siftool header: 4 objects of 48" || not_ok "siftool header: 4 objects of 48"
siftool dump 3 a.sif | python3 -c 'import json,sys; m=json.load(sys.stdin); a=m["data"]["attributes"]; assert a["labels"]["maintainer"]=="physicist"; assert a["environment"]["/.singularity.d/env/90-environment.sh"]=="export GG_TEST=1"; assert a["runscript"].startswith("#!/bin/sh")' && ok "inspect-metadata.json: labels, environment, runscript" || not_ok "inspect-metadata.json"
siftool dump 2 a.sif | python3 -c 'import json,sys; p=json.load(sys.stdin); assert p["source"]["kind"]=="dir" and p["source"]["path"].endswith("/sb"); assert "gpus" in p and p["reproducible"]' && ok "gridgpu-provenance.json: source, gpus field" || not_ok "gridgpu-provenance.json"

siftool dump 4 a.sif >part.sqfs
off=$(siftool list a.sif | awk -F'|' '/FS \(/ {split($4, r, "-"); print r[1]+0}')
expect_eq "siftool dump gives the bytes at the partition offset" "$(cmp -s part.sqfs "$(printf '%s' a.sif)" -i 0:"$off" -n "$(stat -c %s part.sqfs)" && echo same)" same
unsquashfs -s part.sqfs | grep -q "Compression gzip" && ok "unsquashfs: a gzip squashfs" || not_ok "unsquashfs: a gzip squashfs"
(cd sb && find . | sed 's|^\./||; s|^\.$||' | grep -v '^$' | sort) >names.sb
unsquashfs -l -n part.sqfs | sed 's|^squashfs-root/\?||' | grep -v '^$' | sort >names.sqfs
expect_eq "unsquashfs -l lists the sandbox's names" "$(diff names.sb names.sqfs && echo same)" same

python3 manifest.py sb >m.sb
unsquashfs -q -n -d x part.sqfs >/dev/null 2>&1
python3 manifest.py x >m.x
if diff m.sb m.x >m.diff; then ok "file by file: type, mode, owner, mtime, size, sha256, links, devices, xattrs"
else not_ok "file by file comparison"; head -20 m.diff | sed 's/^/#   /'; fi
rm -rf x
unsquashfs -q -n -o "$off" -d x2 a.sif >/dev/null 2>&1
python3 manifest.py x2 >m.x2
expect_eq "unsquashfs straight from the .sif at the offset" "$(diff m.sb m.x2 >/dev/null && echo same)" same
rm -rf x2
mkdir -p mnt
if mount -t squashfs -o loop,ro,offset="$off" a.sif mnt 2>/dev/null; then
	python3 manifest.py mnt >m.mnt
	umount mnt
	expect_eq "the kernel mounts it (loop, offset) and sees the same tree" "$(diff m.sb m.mnt >/dev/null && echo same)" same
else
	ok "# SKIP kernel loop mount not available here"
fi

mksquashfs sb ref.sqfs -noappend -comp gzip -no-progress >/dev/null 2>&1
if sqfsdiff -a part.sqfs -b ref.sqfs -T >sqfsdiff.out 2>&1; then ok "sqfsdiff -T against mksquashfs: same contents, owners, modes, times"
else not_ok "sqfsdiff against mksquashfs"; head -20 sqfsdiff.out | sed 's/^/#   /'; fi

run_gg freeze sb -o b.sif
cmp -s a.sif b.sif && ok "two freezes are byte-identical" || not_ok "two freezes are byte-identical"
run_gg freeze -j 1 sb -o j1.sif
cmp -s a.sif j1.sif && ok "the thread count does not change a byte" || not_ok "the thread count does not change a byte"
# Tails (lib/image/pack.c): 1,500 small files of noise (stored as they are) and 300 of
# text (compressed), then copies of some of them fed after 20 and more fragment blocks
# (read back from the image to be compared), copies of tails of files bigger than a
# block, near-copies (same size, one byte off), a file of zeros. Each copy takes no
# room; every file is itself after unsquashfs; one thread or two, the same bytes.
python3 - tails <<'PYEOF'
import os, random, sys
d, r = sys.argv[1], random.Random(11)
os.makedirs(d + '/a'); os.makedirs(d + '/zz')
noise = [r.randbytes(2000) for _ in range(1500)]
text = [' '.join(r.choice(('grid', 'gpu', 'node', 'job', 'site')) for _ in range(400)).encode() for _ in range(300)]
for i, b in enumerate(noise): open('%s/a/n%04d' % (d, i), 'wb').write(b)
for i, b in enumerate(text): open('%s/a/t%04d' % (d, i), 'wb').write(b)
big = r.randbytes(3 * 131072) + noise[7]
open(d + '/a/big', 'wb').write(big)
for i in range(0, 1500, 10): open('%s/zz/n%04d' % (d, i), 'wb').write(noise[i])
for i in range(0, 300, 10): open('%s/zz/t%04d' % (d, i), 'wb').write(text[i])
open(d + '/zz/tail-of-big', 'wb').write(noise[7])
near = bytearray(noise[3]); near[999] ^= 1
open(d + '/zz/near', 'wb').write(bytes(near))
open(d + '/zz/zeros', 'wb').write(bytes(5000))
open(d + '/zz/big-copy-tail', 'wb').write(r.randbytes(131072) + noise[20])
PYEOF
run_gg freeze tails -o tails.sif
expect_eq "tails: frozen" "$RC" 0
siftool dump 4 tails.sif >tails.sqfs
unsquashfs -q -n -d tx tails.sqfs >/dev/null 2>&1
expect_eq "tails: every file is itself after unsquashfs" "$(diff -r tails tx >/dev/null && echo same)" same
rm -rf tx
# the same without zz/: zz/ adds 2,000 bytes of noise (near), a block of it, zeros and
# 156 names; its 182 copies stored again would add 300,000 bytes and more
mkdir -p tails0 && cp -a tails/a tails0/
run_gg freeze tails0 -o tails0.sif
sz=$(($(siftool dump 4 tails.sif | wc -c) - $(siftool dump 4 tails0.sif | wc -c)))
[ "$sz" -lt $((2000 + 131072 + 40000)) ] && ok "tails: the copies take no room ($sz bytes for zz/)" || not_ok "tails: the copies take no room ($sz bytes for zz/)"
run_gg freeze -j 1 tails -o tails-j1.sif
cmp -s tails.sif tails-j1.sif && ok "tails: one thread or two, the same bytes" || not_ok "tails: one thread or two, the same bytes"
run_gg freeze --comp zstd tails -o tails-z.sif # read back with zstd
siftool dump 4 tails-z.sif >tails.sqfs
unsquashfs -q -n -d tz tails.sqfs >/dev/null 2>&1
expect_eq "tails, zstd: every file is itself after unsquashfs" "$(diff -r tails tz >/dev/null && echo same)" same
rm -rf tz tails.sqfs
# The read-ahead keeps as many files open as the soft limit on open files leaves room
# for: under a low limit freeze still works (fewer files ahead, or the feeding thread
# opens each itself), and the image is the same.
mkdir -p many && i=0 && while [ $i -lt 300 ]; do printf 'file %d\n' $i >many/f$i; i=$((i + 1)); done
run_gg freeze many -o many.sif
expect_eq "300 files, no limit: frozen" "$RC" 0
for n in 40 100; do
	if (ulimit -n $n && "$GRIDGPU" freeze many -o many-$n.sif) >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	then ok "300 files under 'ulimit -n $n': frozen"
	else not_ok "300 files under 'ulimit -n $n': $(head -c 200 "$T_TMP/.stderr")"; fi
	cmp -s many.sif many-$n.sif && ok "... the same image as without the limit" || not_ok "... the same image as without the limit ($n)"
done
run_gg freeze --no-reproducible sb -o c.sif
cmp -s a.sif c.sif && not_ok "--no-reproducible gives a random UUID" || ok "--no-reproducible gives a random UUID"
siftool header c.sif | grep -q "^ID: *[0-9a-f]\{8\}-" && ok "siftool header shows the UUID" || not_ok "siftool header shows the UUID"
SOURCE_DATE_EPOCH=1600000000 "$GRIDGPU" freeze sb -o d1.sif 2>/dev/null
hello_mtime=$(stat -c %Y sb/etc/hello)
touch sb/etc/hello
SOURCE_DATE_EPOCH=1600000000 "$GRIDGPU" freeze sb -o d2.sif 2>/dev/null
cmp -s d1.sif d2.sif && ok "SOURCE_DATE_EPOCH clamps mtimes: touching a file changes nothing" || not_ok "SOURCE_DATE_EPOCH reproducibility"
unsquashfs -s -o "$off" d1.sif | grep -q "Sep 13 .*2020" && ok "SOURCE_DATE_EPOCH is the mkfs time" || not_ok "SOURCE_DATE_EPOCH is the mkfs time"
touch -d "@$hello_mtime" sb/etc/hello

# the GPUs of the node, through a fake NVML (built by make into BUILD/tests/fakegpu)
FAKE=${GG_FAKEGPU_DIR:-$(cd "$(dirname "$GRIDGPU")/.." && pwd)/tests/fakegpu}
if [ -f "$FAKE/libnvidia-ml.so.1" ]; then
	spec=$HERE/../fakegpu/h100x2.conf
	for n in 1 2; do
		env GG_FAKE_NVML="$spec" LD_LIBRARY_PATH="$FAKE" "$GRIDGPU" freeze -q sb -o "gpu$n.sif"
	done
	siftool dump 2 gpu1.sif | python3 -c 'import json,sys; g=json.load(sys.stdin)["gpus"]; assert [d["name"] for d in g["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2' &&
		ok "frozen on a GPU node: the provenance lists its GPUs" || not_ok "frozen on a GPU node: the provenance lists its GPUs"
	cmp -s gpu1.sif gpu2.sif && ok "... and two freezes there are still byte-identical" || not_ok "two freezes on a GPU node are byte-identical"
	run_gg inspect gpu1.sif
	echo "$OUT" | grep -q "gpus: *2, driver" && echo "$OUT" | grep -q "NVIDIA H100 80GB HBM3, compute capability 9.0" &&
		ok "inspect shows the GPUs" || not_ok "inspect shows the GPUs ($OUT)"
else
	not_ok "the fake NVML is built in $FAKE (make e2e builds it)"
fi

# labels, JSON, inspect, verify
run_gg --json freeze sb -o l.sif --label team=lhcb --label 'note=a b=c'
json_valid freeze
echo "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["arch"]=="amd64" and r["files"]>10 and r["hardlinks"]==2 and r["duplicates"]==2' && ok "freeze --json reports counts (two copies of a file)" || not_ok "freeze --json ($OUT)"
run_gg inspect l.sif
echo "$OUT" | grep -q "team: lhcb" && echo "$OUT" | grep -q "note: a b=c" && ok "inspect shows --label labels" || not_ok "inspect shows labels ($OUT)"
echo "$OUT" | grep -q "FS (Squashfs/\*System/amd64)" && ok "inspect lists the partition" || not_ok "inspect lists the partition"
echo "$OUT" | grep -q "gpus: *none recorded" && ok "inspect shows the provenance" || not_ok "inspect shows the provenance"
run_gg inspect --json l.sif
json_valid inspect
echo "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["labels"]["team"]=="lhcb"; assert r["provenance"]["source"]["kind"]=="dir"; assert len(r["objects"])==4; assert r["squashfs"]["compression"]=="gzip"' && ok "inspect --json" || not_ok "inspect --json ($OUT)"
run_gg verify a.sif
expect_eq "verify a good image exits 0" "$RC" 0
echo "$OUT" | grep -q "^ok   squashfs superblock" && ok "verify checks the squashfs superblock" || not_ok "verify output ($OUT)"
run_gg verify --json a.sif
json_valid verify
echo "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["ok"] and all(c["ok"] for c in r["checks"])' && ok "verify --json" || not_ok "verify --json"
cp a.sif bad1.sif && printf 'XXXX' | dd of=bad1.sif bs=1 seek=32768 conv=notrunc 2>/dev/null
expect_fail "verify: a broken squashfs magic" 1 "hsqs" verify bad1.sif
cp a.sif bad2.sif && truncate -s 40000 bad2.sif
expect_fail "verify: a truncated image" 1 "truncated" verify bad2.sif
cp a.sif bad3.sif && printf 'NOT_MAGIC' | dd of=bad3.sif bs=1 seek=32 conv=notrunc 2>/dev/null
expect_fail "verify: not a SIF" 1 "not a SIF" verify bad3.sif
expect_fail "inspect: not a SIF" 1 "not a SIF" inspect bad3.sif
expect_fail "inspect: missing file (exit 2, not 5: that is for sessions and jobs)" 2 "no such file" inspect nothere.sif
expect_fail "verify: two images" 2 "expected one IMAGE.sif" verify a.sif b.sif

# compressors
run_gg freeze --comp zstd --level 3 sb -o z.sif
expect_eq "--comp zstd exits 0" "$RC" 0
echo "$ERR" | grep -q "might not work" && ok "--comp zstd warns" || not_ok "--comp zstd warns"
unsquashfs -q -n -o "$off" -d xz1 z.sif >/dev/null 2>&1 && python3 manifest.py xz1 >m.z && diff m.sb m.z >/dev/null && ok "zstd image round-trips" || not_ok "zstd image round-trips"
rm -rf xz1
for lvl in 1 9 12; do
	run_gg freeze --level $lvl sb -o lv$lvl.sif
	unsquashfs -q -n -o "$off" -d xl lv$lvl.sif >/dev/null 2>&1 && python3 manifest.py xl >m.l && diff m.sb m.l >/dev/null && ok "gzip --level $lvl round-trips" || not_ok "gzip --level $lvl round-trips"
	rm -rf xl
done
fails_clean "--level 13 is refused" 2 "--level" lv13.sif freeze --level 13 sb -o lv13.sif
fails_clean "--comp lzo is refused" 2 "--comp" lzo.sif freeze --comp lzo sb -o lzo.sif
run_gg freeze --comp lz4 --level 9 sb -o l4.sif
expect_eq "lz4 takes any level, as gridgpu-freeze(1) says (high compression)" "$RC" 0
run_gg verify -q l4.sif
expect_eq "the lz4 image verifies" "$RC" 0
# unsquashfs 4.5 refuses a metadata block compressed longer than it inflates to (libsquashfs's
# lz4 made one of the id table): both lz4 modes unpack, and the bwrap runtime uses unsquashfs
run_gg freeze --comp lz4 sb -o l4f.sif
for f in l4 l4f; do
	unsquashfs -q -n -o "$off" -d xl4 $f.sif >/dev/null 2>&1 && python3 manifest.py xl4 >m.l4 && diff m.sb m.l4 >/dev/null &&
		ok "lz4 image ($f) round-trips through unsquashfs" || not_ok "lz4 image ($f) round-trips: $(unsquashfs -q -n -o "$off" -d xl4e $f.sif 2>&1 | head -n 2)"
	rm -rf xl4 xl4e
done
rm -f l4.sif l4f.sif

# ---- tar, stdin, OCI, docker save ---------------------------------------------------
tar --xattrs --xattrs-include='*' --numeric-owner -C sb -cf sb.tar . 2>/dev/null
run_gg freeze sb.tar -o t.sif
siftool dump 4 t.sif >t.sqfs
unsquashfs -q -n -d xt t.sqfs >/dev/null 2>&1
python3 manifest.py xt | grep -v '^sock ' >m.t
grep -v '^sock ' m.sb >m.sb-nosock
expect_eq "tar input: the same tree (tar cannot hold the socket)" "$(diff m.sb-nosock m.t >/dev/null && echo same)" same
rm -rf xt
gzip -c sb.tar >sb.tar.gz
"$GRIDGPU" freeze - -o s.sif <sb.tar.gz 2>/dev/null
siftool dump 4 s.sif | cmp -s - t.sqfs && ok "gzip'd tar on stdin: the same partition" || not_ok "gzip'd tar on stdin: the same partition"
siftool dump 2 s.sif | grep -q '"digest":"sha256:'"$(sha256sum sb.tar.gz | cut -c1-64)"'"' && ok "provenance holds the input's sha256" || not_ok "provenance holds the input's sha256"
# a pipe by its name, as bash's <(tar c ...) gives it (/dev/fd/63), or /dev/stdin
cat sb.tar.gz | "$GRIDGPU" freeze /dev/stdin -o p.sif 2>/dev/null
siftool dump 4 p.sif | cmp -s - t.sqfs && ok "a pipe named /dev/stdin: the same partition" || not_ok "a pipe named /dev/stdin"

cat >mkoci.py <<'EOF'
import gzip, hashlib, io, json, os, sys, tarfile
out = sys.argv[1]
def add(t, name, data=None, typ=tarfile.REGTYPE, mode=0o644, link=''):
    ti = tarfile.TarInfo(name); ti.type = typ; ti.mode = mode; ti.mtime = 1700000000; ti.linkname = link
    if data is not None:
        ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
def layer(entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode='w', format=tarfile.PAX_FORMAT) as t:
        for e in entries: add(t, *e)
    return b.getvalue()
sh = open('/bin/dash', 'rb').read()
raw = [layer([('bin', None, tarfile.DIRTYPE, 0o755), ('bin/sh', sh, tarfile.REGTYPE, 0o755),
              ('etc', None, tarfile.DIRTYPE, 0o755), ('etc/a', b'a1\n'), ('etc/b', b'b1\n'),
              ('opt', None, tarfile.DIRTYPE, 0o755), ('opt/x', b'x\n'), ('opt/y', b'y\n'),
              ('data', None, tarfile.DIRTYPE, 0o755), ('data/blob', os.urandom(1 << 20))]),
       layer([('etc/.wh.b', b''), ('etc/a', b'a2\n', tarfile.REGTYPE, 0o600), ('opt/z', b'z\n'),
              ('opt/.wh..wh..opq', b''), ('data/.wh.blob', b''), ('new', None, tarfile.DIRTYPE, 0o755),
              ('new/file', b'new\n'), ('new/hl', None, tarfile.LNKTYPE, 0o644, 'new/file'),
              ('new/sl', None, tarfile.SYMTYPE, 0o777, '../etc/a')])]
gz = [gzip.compress(r, mtime=0) for r in raw]
sha = lambda b: hashlib.sha256(b).hexdigest()
cfg = json.dumps({'architecture': 'amd64', 'os': 'linux', 'config': {'Env': ['PATH=/bin'], 'Labels': {'org.example.layered': 'yes'}},
                  'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + sha(r) for r in raw]}}).encode()
man = json.dumps({'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
                  'config': {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': 'sha256:' + sha(cfg), 'size': len(cfg)},
                  'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar+gzip', 'digest': 'sha256:' + sha(g), 'size': len(g)} for g in gz]}).encode()
idx = json.dumps({'schemaVersion': 2, 'manifests': [{'mediaType': 'application/vnd.oci.image.manifest.v1+json',
                  'digest': 'sha256:' + sha(man), 'size': len(man), 'annotations': {'org.opencontainers.image.ref.name': 'test:1'}}]}).encode()
files = {'oci-layout': b'{"imageLayoutVersion":"1.0.0"}', 'index.json': idx}
for b in gz + [cfg, man]: files['blobs/sha256/' + sha(b)] = b
os.makedirs(out + '/blobs/sha256')
for n, b in files.items(): open(os.path.join(out, n), 'wb').write(b)
def tarit(path, members):
    with tarfile.open(path, 'w') as t:
        for n, b in members.items():
            ti = tarfile.TarInfo(n); ti.size = len(b); t.addfile(ti, io.BytesIO(b))
tarit(out + '.oci.tar', files)
d, names = {}, []
for r in raw:
    d[sha(r) + '/layer.tar'] = r; names.append(sha(r) + '/layer.tar')
d[sha(cfg) + '.json'] = cfg
d['manifest.json'] = json.dumps([{'Config': sha(cfg) + '.json', 'RepoTags': ['test:1'], 'Layers': names}]).encode()
tarit(out + '.docker.tar', d)
EOF
python3 mkoci.py img
cat >m.oci.want <<'EOF'
.:-
bin/sh:755
data:-
etc/a:600:a2
new/file:644:new
new/hl:644:new
new/sl:->../etc/a
opt/z:644:z
EOF
for src in img img.oci.tar img.docker.tar; do
	run_gg freeze "$src" -o oci.sif
	if [ "$RC" != 0 ]; then not_ok "freeze $src ($ERR)"; continue; fi
	unsquashfs -q -n -o "$off" -d xo oci.sif >/dev/null 2>&1
	got=$(cd xo && find . -mindepth 1 | sort | while read -r f; do f=${f#./}
		if [ -L "$f" ]; then echo "$f:->$(readlink "$f")"; elif [ -d "$f" ]; then :; elif [ "$f" = bin/sh ]; then echo "$f:$(stat -c %a "$f")"; else echo "$f:$(stat -c %a "$f"):$(cat "$f")"; fi; done)
	want=$(grep -v ':-$' m.oci.want)
	expect_eq "freeze $src: layers applied, whiteouts and the opaque dir honoured" "$got" "$want"
	[ "$(stat -c %i xo/new/file)" = "$(stat -c %i xo/new/hl)" ] && ok "freeze $src: the hard link survives" || not_ok "freeze $src: the hard link survives"
	siftool list oci.sif | grep -q "JSON.Generic" && siftool dump 3 oci.sif | grep -q '"org.example.layered":"yes"' && ok "freeze $src: the image config's labels" || not_ok "freeze $src: the image config's labels"
	rm -rf xo oci.sif
done
# the deleted 1 MiB blob never reached the image
run_gg freeze img -o oci.sif
[ "$(siftool list oci.sif | awk -F'|' '/FS/ {split($4,r,"-"); print r[2]-r[1]}')" -lt 500000 ] && ok "data deleted by an upper layer costs nothing" || not_ok "data deleted by an upper layer costs nothing"

# ---- bad input ------------------------------------------------------------------------
fails_clean "missing sandbox: a usage error, as every missing file named (gridgpu(1))" 2 "No such file or directory" m.sif freeze nosuch -o m.sif
fails_clean "no -o" 2 "-o IMAGE.sif is required" m.sif freeze sb
: >exists.sif
fails_clean "output exists" 1 "use --force" exists.sif.tmp freeze sb -o exists.sif
expect_eq "the existing output is untouched" "$(stat -c %s exists.sif)" 0
run_gg freeze --force sb -o exists.sif
cmp -s exists.sif a.sif && ok "--force replaces it" || not_ok "--force replaces it"
no_leftovers "$W" exists.sif.tmp && ok "--force leaves no temp" || not_ok "--force leaves no temp"

# unreadable files: run as nobody, who cannot read them
mk_small() { mkdir -p "$1/etc"; printf 'ok\n' >"$1/etc/ok"; cp /bin/dash "$1/sh"; chmod -R a+rX "$1"; }
mk_small ur
printf 'secret\n' >ur/etc/secret && chmod 000 ur/etc/secret
mkdir ur/closed && chmod 000 ur/closed
mkdir -p out && chmod 777 out
NGRIDGPU=$(gridgpu_for_others)
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$NGRIDGPU" "$@" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"; RC=$?; ERR=$(cat "$T_TMP/.stderr"); }
as_nobody freeze ur -o out/u.sif
[ "$RC" = 1 ] && echo "$ERR" | grep -q "ur/closed\|ur/etc/secret" && ok "unreadable: fails naming the path" || not_ok "unreadable: fails naming the path (rc $RC: $ERR)"
echo "$ERR" | grep -q "Permission denied (freeze as a user who may read it, or leave out what cannot be read with --skip-unreadable)$" && ok "unreadable: the error says the ways on" || not_ok "unreadable: no way on ($ERR)"
no_leftovers "$W/out" u.sif && ok "unreadable: nothing left behind" || not_ok "unreadable: nothing left behind"
as_nobody freeze --skip-unreadable ur -o out/u.sif
[ "$RC" = 0 ] && echo "$ERR" | grep -q "warning: .*secret.*left out" && ok "--skip-unreadable goes on with a warning" || not_ok "--skip-unreadable ($RC: $ERR)"
unsquashfs -l -o "$off" out/u.sif | grep -q "secret\|closed" && not_ok "--skip-unreadable leaves them out" || ok "--skip-unreadable leaves them out"
chmod 755 ur/closed
mkdir -p closedsb && chmod 700 closedsb
as_nobody freeze closedsb -o out/c.sif
[ "$RC" = 1 ] && echo "$ERR" | grep -q "closedsb.*Permission denied" && ok "unreadable sandbox: a clear error" || not_ok "unreadable sandbox ($RC: $ERR)"
no_leftovers "$W/out" c.sif && ok "unreadable sandbox: nothing left behind" || not_ok "unreadable sandbox: nothing left behind"

# tar traversal, corrupt and truncated archives
cat >mktar.py <<'EOF'
import io, os, sys, tarfile
kind, out = sys.argv[1], sys.argv[2]
with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:
    def f(name, data=b'x', typ=tarfile.REGTYPE, link='', uid=0):
        ti = tarfile.TarInfo(name); ti.type = typ; ti.linkname = link; ti.uid = uid; ti.gid = 0
        if typ == tarfile.REGTYPE: ti.size = len(data); t.addfile(ti, io.BytesIO(data))
        else: t.addfile(ti)
    if kind == 'dotdot': f('ok'); f('../escape')
    if kind == 'abs': f('/etc/passwd')
    if kind == 'symlink': f('etc', typ=tarfile.SYMTYPE, link='/etc'); f('etc/passwd')
    if kind == 'hardlink': f('x', typ=tarfile.LNKTYPE, link='../../etc/shadow')
    if kind == 'ids':
        for i in range(65537): f('f%d' % i, b'', uid=1000 + i)
    if kind == 'big': f('big', os.urandom(300000))
EOF
python3 mktar.py dotdot dotdot.tar; fails_clean "tar with ../ is rejected" 1 "'..' in a name" tr.sif freeze dotdot.tar -o tr.sif
python3 mktar.py abs abs.tar; fails_clean "tar with an absolute name is rejected" 1 "absolute names" tr.sif freeze abs.tar -o tr.sif
python3 mktar.py symlink sl.tar; fails_clean "tar writing through a symlink is rejected" 1 "symbolic link" tr.sif freeze sl.tar -o tr.sif
python3 mktar.py hardlink hl.tar; fails_clean "tar hard link out of the tree is rejected" 1 "'..'" tr.sif freeze hl.tar -o tr.sif
python3 mktar.py ids ids.tar; fails_clean "more than 65536 distinct uid/gid" 1 "65536 distinct" tr.sif freeze ids.tar -o tr.sif
python3 mktar.py big big.tar
head -c 100000 big.tar >trunc.tar; fails_clean "truncated tar" 1 "runcated" tr.sif freeze trunc.tar -o tr.sif
gzip -c big.tar | head -c 2000 >trunc.tar.gz; fails_clean "truncated tar.gz" 1 "freeze trunc.tar.gz" tr.sif freeze trunc.tar.gz -o tr.sif
cp big.tar corrupt.tar && printf 'garbage!' | dd of=corrupt.tar bs=1 seek=148 conv=notrunc 2>/dev/null
fails_clean "corrupt tar header" 1 "freeze corrupt.tar" tr.sif freeze corrupt.tar -o tr.sif
head -c 300 /dev/urandom >noise.bin; fails_clean "not an archive" 1 "freeze noise.bin" tr.sif freeze --format tar noise.bin -o tr.sif
: >empty.tar; fails_clean "empty input" 1 "empty input" tr.sif freeze empty.tar -o tr.sif
fails_clean "--format dir on a file" 2 "not a directory" tr.sif freeze --format dir big.tar -o tr.sif
fails_clean "--format oci from stdin" 2 "standard input" tr.sif freeze --format oci - -o tr.sif
cp -r img badimg && for b in badimg/blobs/sha256/*; do [ "$(stat -c %s "$b")" -gt 100000 ] && printf 'Z' | dd of="$b" bs=1 seek=50 conv=notrunc 2>/dev/null; done
fails_clean "OCI layer that fails its digest" 1 "digest" tr.sif freeze badimg -o tr.sif
head -c 5000 img.docker.tar >trunc.docker.tar
fails_clean "truncated docker archive" 1 "freeze trunc.docker.tar" tr.sif freeze --format oci trunc.docker.tar -o tr.sif
gzip -c img.docker.tar >img.docker.tar.gz
fails_clean "compressed docker archive: a hint" 2 "decompress it first" tr.sif freeze img.docker.tar.gz -o tr.sif

# disk full mid-write: a 4 MiB tmpfs and 12 MiB of incompressible data
mkdir -p small big && head -c 12582912 /dev/urandom >big/random && cp /bin/dash big/sh
if mount -t tmpfs -o size=4m gg-e2e-full small 2>/dev/null; then
	run_gg freeze big -o small/full.sif
	[ "$RC" = 1 ] && echo "$ERR" | grep -q "writing 'small/full.sif': No space left on device" &&
		! echo "$ERR" | grep -q '\.tmp\.' && ok "disk full: fails with ENOSPC, naming the image, not a temp file" ||
		not_ok "disk full ($RC: $ERR)"
	[ -z "$(ls small)" ] && ok "disk full: nothing left on the full disk" || not_ok "disk full: left $(ls small)"
	umount small
else
	not_ok "mount a tmpfs for the disk-full case (needs root)"
fi
# the same on ext4, where freeze reserves disk space 64 MiB ahead of its writes: a
# 200 MiB file system (the reservation is given back: the image is the one made here),
# then a 24 MiB one too small for 30 MiB of random data (exit 1, nothing left)
run_gg freeze big -o ref-big.sif
mkdir -p ext
for fs in 200 24; do
	rm -f ext.img && truncate -s ${fs}M ext.img && mkfs.ext4 -q -F ext.img 2>/dev/null &&
		mount -o loop ext.img ext 2>/dev/null || { ok "# SKIP loop-mounted ext4 not available here"; break; }
	if [ "$fs" = 200 ]; then
		run_gg freeze big -o ext/r.sif
		[ "$RC" = 0 ] && cmp -s ext/r.sif ref-big.sif && ok "ext4: the image, no reserved space left over" || not_ok "ext4 image ($RC: $ERR)"
	else
		head -c 31457280 /dev/urandom >big/random2
		run_gg freeze big -o ext/full.sif
		rm -f big/random2
		[ "$RC" = 1 ] && echo "$ERR" | grep -q "writing 'ext/full.sif': No space left on device" &&
			! echo "$ERR" | grep -q '\.tmp\.' && ok "ext4 disk full: fails with ENOSPC, naming the image" ||
			not_ok "ext4 disk full ($RC: $ERR)"
		[ -z "$(ls ext | grep -v lost+found)" ] && ok "ext4 disk full: nothing left" || not_ok "ext4 disk full: left $(ls ext)"
	fi
	umount ext
done
rm -f ext.img ref-big.sif

# Ctrl-C and SIGTERM mid-write: a big sandbox, the signal once some of the image is
# written (to an unnamed O_TMPFILE file: nothing of it shows in the directory)
wrote() { [ "$(awk '/^wchar/ {print $2}' "/proc/$1/io" 2>/dev/null || echo 0)" -gt 4000000 ]; }
mkdir -p huge && head -c 150000000 /dev/urandom | base64 >huge/data.txt && cp /bin/dash huge/sh
for sig in INT TERM; do
	"$GRIDGPU" freeze -q -j 1 huge -o sig.sif 2>sig.err &
	pid=$!
	i=0
	while ! wrote "$pid" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
	wrote "$pid" && ok "SIG$sig: the image is being written" || not_ok "SIG$sig: the image is being written"
	[ -z "$(ls "$W" | grep '^sig\.sif')" ] && ok "SIG$sig: nothing of it shows in the directory yet" || not_ok "SIG$sig: $(ls "$W" | grep '^sig')"
	kill -"$sig" "$pid"
	wait "$pid"
	rc=$?
	expect_eq "SIG$sig: exit 130" "$rc" 130
	grep -q "interrupted" sig.err && ok "SIG$sig: says interrupted" || not_ok "SIG$sig: says interrupted ($(cat sig.err))"
	no_leftovers "$W" sig.sif && ok "SIG$sig: no .sif, no temp file" || not_ok "SIG$sig: leftovers $(echo "$W"/sig.sif*)"
done
# the same on a tar coming slowly through a pipe (blocked in read when the signal comes)
# the writer sends the tar, then waits (at most 30 s) until the reader goes away
python3 -c 'import select, sys
sys.stdout.buffer.write(open("sb.tar", "rb").read()); sys.stdout.flush()
p = select.poll(); p.register(1, select.POLLERR); p.poll(30000)' | "$GRIDGPU" freeze -q - -o pipe.sif 2>pipe.err &
pid=$!
i=0
# wait until freeze has read the whole tar and blocks on the pipe
while ! [ "$(awk '/^rchar/ {print $2}' "/proc/$pid/io" 2>/dev/null || echo 0)" -gt "$(stat -c %s sb.tar)" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT "$pid" 2>/dev/null
wait "$pid"
expect_eq "SIGINT while blocked reading stdin: exit 130" "$?" 130
no_leftovers "$W" pipe.sif && ok "SIGINT while reading stdin: nothing left" || not_ok "SIGINT while reading stdin: leftovers"

# Endless and inflated input (issue 20, class 3). /dev/zero is an empty archive and then
# zeros: at most 1 MiB after the end marker is read, then a clear error.
"$GRIDGPU" freeze -q - -o zero.sif </dev/zero 2>zero.err
expect_eq "freeze - </dev/zero: ends, exit 1" "$?" 1
grep -q "after the end of the tar archive" zero.err && ok "/dev/zero: says what is wrong" || not_ok "/dev/zero: $(cat zero.err)"
no_leftovers "$W" zero.sif && ok "/dev/zero: nothing left" || not_ok "/dev/zero: leftovers"
# a 10 KiB sparse tar declaring 1 TiB: refused, not minutes of zeros
mkdir -p sparse && truncate -s 1T sparse/big && printf end >>sparse/big
tar --sparse -C sparse -cf sparse.tar big && rm -f sparse/big
fails_clean "a 10 KiB tar declaring a 1 TiB sparse file" 1 "sparse file holes of 1.0 TiB" sp.sif freeze sparse.tar -o sp.sif
# an 8 GiB file whose data is /dev/zero: SIGINT/SIGTERM once it is being read
python3 -c 'import sys, tarfile
t = tarfile.TarInfo("zeros"); t.size = 8 << 30
sys.stdout.buffer.write(t.tobuf(tarfile.GNU_FORMAT))' >zhead.tar
read_mib() { [ "$(awk '/^rchar/ {print $2}' "/proc/$1/io" 2>/dev/null || echo 0)" -gt $(($2 << 20)) ]; }
exited() { st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -z "$st" ] || [ "$st" = Z ]; }
for sig in INT TERM; do
	{ cat zhead.tar; cat /dev/zero; } | "$GRIDGPU" freeze -q - -o zs.sif 2>zs.err &
	pid=$!
	poll 30 read_mib "$pid" 64 && ok "SIG$sig on /dev/zero data: being read" || not_ok "SIG$sig on /dev/zero data: being read"
	kill -"$sig" "$pid"
	poll 5 exited "$pid" && ok "SIG$sig on /dev/zero data: stops" || { not_ok "SIG$sig on /dev/zero data: still running"; kill -9 "$pid"; }
	wait "$pid"
	expect_eq "SIG$sig on /dev/zero data: exit 130" "$?" 130
	no_leftovers "$W" zs.sif && ok "SIG$sig on /dev/zero data: nothing left" || not_ok "SIG$sig on /dev/zero data: leftovers"
done

done_testing
