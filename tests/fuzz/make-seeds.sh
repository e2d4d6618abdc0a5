#!/bin/sh
# Generate the binary and PEM seed corpora of the fuzz targets into
# tests/fuzz/corpus-gen/<target>/ (git-ignored: keys and certificates are made
# here at run time and never committed).
#   tests/fuzz/make-seeds.sh [--force]
# Skipped when corpus-gen/ is newer than this script (--force remakes it).
#   pem     CA, user certificate (+ chain), keys (plain, encrypted with "fuzzpass":
#           PKCS#8 and traditional), cert+key files, RFC 3820 proxies (impersonation,
#           limited, independent, with path length) with their chains
#   pkcs12  "fuzzpass" (AES), empty passphrase, no MAC, legacy RC2/3DES, with chain
#   csr     delegation requests like A-REX's (and A-REX's own when the test site's
#           environment is there), RSA 1024/2048, an EC one
#   sif     a compact layout, the standard layout (48 descriptors, data at 32768)
#           made here and by siftool, and `gridgpu freeze` output when built
#   tar     ustar, pax (long names, xattrs), GNU long names, links, devices, gzip,
#           xz, bzip2, zstd
#   oci     OCI image archives (one and two layers, whiteouts, an index of
#           manifests) and docker save archives (legacy and blob layouts)
# Needs openssl, python3, mksquashfs; siftool and the test site are optional.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$here/corpus-gen
if [ "${1:-}" != --force ] && [ -n "$(find "$out/.stamp" -newer "$0" 2>/dev/null)" ]; then
	exit 0
fi
rm -rf "$out"
mkdir -p "$out/pem" "$out/pkcs12" "$out/csr" "$out/sif" "$out/tar" "$out/oci"
chmod 700 "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/gg-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
umask 077

ossl() { openssl "$@" >/dev/null 2>&1; }

# ---- PEM: CA, user, proxies ---------------------------------------------------
cat >ca.cnf <<'EOF'
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[user]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment,dataEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
[proxy]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
proxyCertInfo = critical,language:id-ppl-inheritAll
[limited]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
proxyCertInfo = critical,language:1.3.6.1.4.1.3536.1.1.1.9
[independent]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
proxyCertInfo = critical,language:id-ppl-independent,pathlen:0
EOF
ossl req -x509 -new -newkey rsa:1024 -nodes -keyout ca.key -out ca.pem -days 7300 \
	-subj "/DC=org/DC=example/CN=Fuzz CA" -config ca.cnf -extensions ca
ossl req -new -newkey rsa:1024 -nodes -keyout user.key -out user.csr \
	-subj "/DC=org/DC=example/CN=Fuzz User" -config ca.cnf
ossl x509 -req -in user.csr -CA ca.pem -CAkey ca.key -set_serial 1001 -days 7300 \
	-extfile ca.cnf -extensions user -out user.pem
# proxy NAME ISSUER_CERT ISSUER_KEY EXTENSIONS SERIAL: subject = issuer + CN=SERIAL
proxy() {
	subj=$(openssl x509 -in "$2" -noout -subject -nameopt compat | sed 's/^subject=//')
	ossl req -new -newkey rsa:1024 -nodes -keyout "$1.key" -out "$1.csr" -subj "$subj/CN=$5" \
		-config ca.cnf
	ossl x509 -req -in "$1.csr" -CA "$2" -CAkey "$3" -set_serial "$5" -days 3650 \
		-extfile ca.cnf -extensions "$4" -out "$1.pem"
}
proxy p1 user.pem user.key proxy 2001
proxy p2 p1.pem p1.key proxy 2002
proxy lim user.pem user.key limited 2003
proxy ind user.pem user.key independent 2004
ossl ecparam -name prime256v1 -genkey -noout -out ec.key
ossl req -new -key ec.key -out ec.csr -subj "/DC=org/DC=example/CN=Fuzz EC User" -config ca.cnf
ossl x509 -req -in ec.csr -CA ca.pem -CAkey ca.key -set_serial 1002 -days 7300 \
	-extfile ca.cnf -extensions user -out ec.pem
ossl x509 -req -in user.csr -CA ca.pem -CAkey ca.key -set_serial 1003 -days 1 \
	-not_before 20000101000000Z -not_after 20000102000000Z -extfile ca.cnf -extensions user \
	-out expired.pem ||
	ossl x509 -req -in user.csr -CA ca.pem -CAkey ca.key -set_serial 1003 -days 0 \
		-extfile ca.cnf -extensions user -out expired.pem
ossl pkcs8 -topk8 -in user.key -v2 aes-256-cbc -passout pass:fuzzpass -out user-enc.key
ossl rsa -in user.key -aes128 -traditional -passout pass:fuzzpass -out user-trad.key
ossl pkey -in user.key -traditional -out user-rsa.key

p=$out/pem
cp ca.pem "$p/ca-cert"
cat user.pem ca.pem >"$p/user-chain"
cat user.pem user.key >"$p/user-cert-key"
cat user.pem user-rsa.key >"$p/user-cert-rsakey"
cat user.pem user-enc.key >"$p/user-cert-pkcs8-encrypted"
cat user.pem user-trad.key >"$p/user-cert-trad-encrypted"
cat p1.pem p1.key user.pem >"$p/proxy"
cat p2.pem p2.key p1.pem user.pem >"$p/proxy-of-proxy"
cat lim.pem lim.key user.pem >"$p/proxy-limited"
cat ind.pem ind.key user.pem >"$p/proxy-independent"
cat p1.pem user.key user.pem >"$p/proxy-wrong-key"
cat ec.pem ec.key >"$p/ec-cert-key"
[ -s expired.pem ] && cat expired.pem user.key >"$p/expired-cert-key"
head -c 700 "$p/proxy" >"$p/proxy-truncated"

# ---- PKCS#12 -------------------------------------------------------------------
q=$out/pkcs12
ossl pkcs12 -export -in user.pem -inkey user.key -certfile ca.pem -passout pass:fuzzpass \
	-out "$q/aes-chain.p12"
ossl pkcs12 -export -in user.pem -inkey user.key -passout pass:fuzzpass -out "$q/aes.p12"
ossl pkcs12 -export -in user.pem -inkey user.key -passout pass: -out "$q/empty-pass.p12"
ossl pkcs12 -export -in user.pem -inkey user.key -passout pass:fuzzpass -nomac \
	-out "$q/no-mac.p12" || true
ossl pkcs12 -export -legacy -in user.pem -inkey user.key -passout pass:fuzzpass \
	-out "$q/legacy-rc2.p12" || true
ossl pkcs12 -export -in user.pem -inkey user.key -passout pass:fuzzpass -keypbe NONE \
	-certpbe NONE -out "$q/no-encryption.p12" || true
ossl pkcs12 -export -in ec.pem -inkey ec.key -passout pass:fuzzpass -out "$q/ec.p12"
ossl pkcs12 -export -in user.pem -inkey user.key -passout pass:wrong -out "$q/other-pass.p12"
ossl pkcs12 -export -nokeys -in user.pem -passout pass:fuzzpass -out "$q/cert-only.p12"

# ---- delegation requests -----------------------------------------------------------
c=$out/csr
ossl req -new -newkey rsa:1024 -nodes -keyout /dev/null -subj "/" -out "$c/rsa1024-empty-subject" \
	-config ca.cnf || ossl req -new -newkey rsa:1024 -nodes -keyout /dev/null \
	-subj "/CN=delegation" -out "$c/rsa1024-empty-subject" -config ca.cnf
ossl req -new -newkey rsa:2048 -nodes -keyout /dev/null -subj "/CN=delegation" \
	-out "$c/rsa2048" -config ca.cnf
ossl req -new -key ec.key -subj "/CN=ec" -out "$c/ec-too-small" -config ca.cnf
ossl req -new -newkey rsa:1024 -nodes -keyout /dev/null -subj "/CN=x" -outform DER \
	-out "$c/der-not-pem" -config ca.cnf
# A-REX's own answer to POST /delegations?action=new, when the test site is up
env_sh=${GG_TB_DIR:-/tmp/gridgpu-testbed}/env.sh
if [ -r "$env_sh" ]; then
	# shellcheck source=/dev/null
	(. "$env_sh" && curl -sS --max-time 20 -o "$c/arex-6.17" --cert "$GG_TB_USER_CERT" \
		--key "$GG_TB_USER_KEY_PLAIN" --capath "$GG_TB_CA_DIR" -X POST \
		"$GG_TB_REST_URL/delegations?action=new" 2>/dev/null) || rm -f "$c/arex-6.17"
	grep -q 'BEGIN CERTIFICATE REQUEST' "$c/arex-6.17" 2>/dev/null || rm -f "$c/arex-6.17"
fi

# ---- tar, OCI, SIF (python3) ---------------------------------------------------------
umask 022
mkdir -p rootfs/bin rootfs/etc rootfs/usr/lib
printf '#!/bin/sh\necho hello\n' >rootfs/bin/hello
chmod 755 rootfs/bin/hello
printf 'root:x:0:0:root:/root:/bin/sh\n' >rootfs/etc/passwd
ln -s hello rootfs/bin/sh
mksquashfs rootfs part.sqfs -noappend -all-root -no-xattrs -quiet >/dev/null 2>&1
mksquashfs rootfs part-nopad.sqfs -noappend -all-root -no-xattrs -nopad -comp gzip -quiet \
	>/dev/null 2>&1

OUT=$out python3 - <<'PY'
import gzip, bz2, lzma, hashlib, io, json, os, struct, tarfile

out = os.environ["OUT"]

def tar_bytes(entries, fmt=tarfile.PAX_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for e in entries:
            ti, data = e
            ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    # small seeds fuzz faster: drop tarfile's padding to 10 KiB records, keep the
    # two zero blocks that end an archive
    v = b.getvalue().rstrip(b"\0")
    return v + b"\0" * (-len(v) % 512) + b"\0" * 1024

def f(name, data=b"", mode=0o644, **kw):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = mode
    for k, v in kw.items(): setattr(ti, k, v)
    return (ti, data)

def d(name, mode=0o755):
    ti = tarfile.TarInfo(name); ti.type = tarfile.DIRTYPE; ti.mode = mode
    return (ti, None)

def ln(name, target, hard=False):
    ti = tarfile.TarInfo(name); ti.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    ti.linkname = target
    return (ti, None)

def dev(name, kind, major=1, minor=3):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.devmajor = major; ti.devminor = minor
    ti.mode = 0o666
    return (ti, None)

ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x02\x00\x3e\x00" + b"\0" * 44
basic = [d("./"), d("bin"), f("bin/hello", b"#!/bin/sh\necho hello\n", 0o755),
         ln("bin/sh", "hello"), d("etc"), f("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"),
         f("usr/bin/tool", ELF, 0o755)]
labels = [d(".singularity.d"), d(".singularity.d/env"),
          f(".singularity.d/labels.json", b'{"org.example.a":"1"}'),
          f(".singularity.d/runscript", b"#!/bin/sh\nexec /bin/hello\n", 0o755),
          f(".singularity.d/env/90-environment.sh", b"export A=1\n")]
special = [ln("etc/passwd-hard", "etc/passwd", hard=True), dev("dev/null", tarfile.CHRTYPE),
           dev("dev/loop0", tarfile.BLKTYPE, 7, 0), dev("run/fifo", tarfile.FIFOTYPE),
           f("long/" + "n" * 120 + "/" + "x" * 120, b"long name\n"),
           ln("lnk-" + "l" * 110, "../" * 3 + "etc/passwd")]
xattr = f("bin/cap", b"cap", 0o755, pax_headers={"SCHILY.xattr.security.capability": "\x01\x00\x00\x02",
                                                  "SCHILY.xattr.user.note": "hi",
                                                  "SCHILY.xattr.system.bad": "x"})

t = os.path.join(out, "tar")
open(f"{t}/ustar", "wb").write(tar_bytes(basic, tarfile.USTAR_FORMAT))
open(f"{t}/pax-special", "wb").write(tar_bytes(basic + special + [xattr] + labels))
open(f"{t}/gnu-longnames", "wb").write(tar_bytes(basic + special, tarfile.GNU_FORMAT))
open(f"{t}/gzip", "wb").write(gzip.compress(tar_bytes(basic + labels), mtime=0))
open(f"{t}/xz", "wb").write(lzma.compress(tar_bytes(basic)))
open(f"{t}/bzip2", "wb").write(bz2.compress(tar_bytes(basic)))
open(f"{t}/empty", "wb").write(b"\0" * 1024)
open(f"{t}/dotdot-rejected", "wb").write(tar_bytes([f("../evil", b"x"), f("/abs", b"y")]))
open(f"{t}/dir-over-file", "wb").write(tar_bytes([f("a", b"file"), d("a"), f("a/b", b"x"),
                                                  ln("c", "a/b", hard=True), f("c", b"replaced")]))
try:
    import subprocess
    subprocess.run(["zstd", "-q", "-f", "-o", f"{t}/zstd", "-"], input=tar_bytes(basic),
                   check=True, capture_output=True)
except Exception:
    pass

# ---- OCI / docker archives ----
def sha(b): return hashlib.sha256(b).hexdigest()

layer1 = tar_bytes(basic + labels)
layer2 = tar_bytes([f("etc/.wh.passwd", b""), d("usr"), f("usr/.wh..wh..opq", b""),
                    f("usr/new", b"upper\n"), f("bin/hello", b"#!/bin/sh\necho upper\n", 0o755)])
layer2gz = gzip.compress(layer2, mtime=0)

def oci_archive(layers, index_of_index=False, annotate=True):
    blobs = {}
    def blob(b):
        h = sha(b); blobs[h] = b; return h
    cfg = json.dumps({"architecture": "amd64", "os": "linux",
                      "config": {"Env": ["PATH=/usr/bin:/bin"], "Entrypoint": ["/bin/hello"],
                                 "Labels": {"org.opencontainers.image.title": "fuzz"}},
                      "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(l) for l, _ in layers]}},
                     sort_keys=True).encode()
    ch = blob(cfg)
    ls = []
    for data, mt in layers:
        ls.append({"mediaType": mt, "digest": "sha256:" + blob(data), "size": len(data)})
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                 "digest": "sha256:" + ch, "size": len(cfg)},
                      "layers": ls}).encode()
    mh = blob(man)
    desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + mh,
            "size": len(man), "platform": {"architecture": "amd64", "os": "linux"}}
    if annotate:
        desc["annotations"] = {"org.opencontainers.image.ref.name": "fuzz:latest"}
    manifests = [desc]
    if index_of_index:
        other = dict(desc); other["platform"] = {"architecture": "arm64", "os": "linux"}
        sub = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                          "manifests": [other, desc]}).encode()
        manifests = [{"mediaType": "application/vnd.oci.image.index.v1+json",
                      "digest": "sha256:" + blob(sub), "size": len(sub)}]
    index = json.dumps({"schemaVersion": 2, "manifests": manifests}).encode()
    ents = [f("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), f("index.json", index),
            d("blobs"), d("blobs/sha256")]
    ents += [f("blobs/sha256/" + h, b) for h, b in blobs.items()]
    return tar_bytes(ents, tarfile.USTAR_FORMAT)

TAR = "application/vnd.oci.image.layer.v1.tar"
o = os.path.join(out, "oci")
open(f"{o}/oci-one-layer", "wb").write(oci_archive([(layer1, TAR)]))
open(f"{o}/oci-two-layers-gzip", "wb").write(oci_archive([(layer1, TAR), (layer2gz, TAR + "+gzip")]))
open(f"{o}/oci-index-of-index", "wb").write(oci_archive([(layer1, TAR)], index_of_index=True))

def docker_save(legacy):
    cfg = json.dumps({"architecture": "amd64", "os": "linux",
                      "config": {"Cmd": ["/bin/sh"], "Labels": {"a": "b"}}}).encode()
    ch = sha(cfg)
    if legacy:
        cname, l1, l2 = ch + ".json", "l1/layer.tar", "l2/layer.tar"
    else:
        cname, l1, l2 = "blobs/sha256/" + ch, "blobs/sha256/" + sha(layer1), "blobs/sha256/" + sha(layer2)
    man = json.dumps([{"Config": cname, "RepoTags": ["fuzz:latest"], "Layers": [l1, l2]}]).encode()
    ents = [f("manifest.json", man), f(cname, cfg), f(l1, layer1), f(l2, layer2),
            f("repositories", b'{"fuzz":{"latest":"' + ch.encode() + b'"}}')]
    return tar_bytes(ents, tarfile.USTAR_FORMAT)

open(f"{o}/docker-save-legacy", "wb").write(docker_save(True))
open(f"{o}/docker-save-blobs", "wb").write(docker_save(False))
# the outer tar with pax headers and a symlinked blob, as some tools write
blobs = tarfile.open(fileobj=io.BytesIO(docker_save(False)))
open(f"{o}/docker-save-pax", "wb").write(tar_bytes(
    [f("manifest.json", blobs.extractfile("manifest.json").read()),
     f("x" * 120 + ".json", b'{"config":{}}', pax_headers={"comment": "pax"}),
     ln("layer-link.tar", blobs.getnames()[2])] +
    [f(n, blobs.extractfile(n).read()) for n in blobs.getnames()[1:]]))

# ---- SIF ----
def sif(part, ndescr, standard, objs=()):
    """objs: (type, name, data); the partition is the last object."""
    HDR, DSZ = 128, 585
    doff = 4096 if standard else HDR
    data_off = doff + ndescr * DSZ
    if standard:
        data_off = 32768
    descrs, blob, pos = [], b"", data_off
    items = list(objs) + [(0x4004, "", part)]
    for i, (typ, name, data) in enumerate(items):
        if typ == 0x4004 and standard and pos % 4096:
            pad = 4096 - pos % 4096; blob += b"\0" * pad; pos += pad
        extra = struct.pack("<ii3s", 1, 2, b"02") if typ == 0x4004 else b""
        descrs.append(struct.pack("<iBIIIqqqqqqq128s384s", typ, 1, i + 1, 0xF0000001, 0, pos, len(data),
                                  len(data), 0, 0, 0, 0, name.encode(), extra))
        blob += data; pos += len(data)
    hdr = struct.pack("<32s10s3s3s16sqqqqqqqq", b"#!/usr/bin/env run-singularity\n", b"SIF_MAGIC\0",
                      b"01\0", b"02\0", b"\0" * 16, 0, 0, ndescr - len(items), ndescr, doff, ndescr * DSZ,
                      data_off, len(blob))
    table = b"".join(descrs) + b"\0" * ((ndescr - len(descrs)) * DSZ)
    head = hdr + b"\0" * (doff - HDR) + table
    head += b"\0" * (data_off - len(head))
    return head + blob

s = os.path.join(out, "sif")
part = open("part.sqfs", "rb").read()
small = open("part-nopad.sqfs", "rb").read()
meta = [(0x4001, "", b"bootstrap: docker\nfrom: fuzz\n"),
        (0x4006, "inspect-metadata.json", b'{"labels":{"a":"b"}}')]
open(f"{s}/compact", "wb").write(sif(small, 3, False, meta))
open(f"{s}/compact-one", "wb").write(sif(small, 1, False))
open(f"{s}/standard", "wb").write(sif(part, 48, True, meta))
open(f"{s}/not-squashfs", "wb").write(sif(b"hsqs" + b"\0" * 92, 2, False))
PY

if command -v siftool >/dev/null 2>&1 && siftool new sift.sif >/dev/null 2>&1 &&
	siftool add --datatype 4 --parttype 2 --partfs 1 --partarch 2 sift.sif part.sqfs \
		>/dev/null 2>&1; then
	cp sift.sif "$out/sif/siftool"
fi
gridgpu=$top/build/bin/gridgpu
if [ -x "$gridgpu" ] &&
	SOURCE_DATE_EPOCH=1700000000 "$gridgpu" freeze -q rootfs -o frozen.sif >/dev/null 2>&1; then
	cp frozen.sif "$out/sif/gridgpu-freeze"
fi

n=$(find "$out" -type f | wc -l)
touch "$out/.stamp"
echo "make-seeds: $n seeds in ${out#"$top"/}"
