#!/bin/sh
# bench/freeze-trees.sh CACHE SHAPE: make the tree of one shape for bench-freeze.sh in
# CACHE/tree-SHAPE (once; kept, git-ignored) and print its path. Every shape is made the
# same way each time: from Debian 12 packages (apt-get download, as the machine's apt
# is set up) and from a seeded random generator, so two machines get the same bytes.
#
#   pyenv   a Python environment of many small packages: 69 python3-* packages of
#           Debian 12 (numpy, scipy, pandas, sympy, plotly, botocore, django, ...)
#           unpacked side by side; about 660 MB in 47k entries.
#   packed  already-compressed files: those .deb archives (xz), every .gz of the
#           debootstrap tree (man pages, changelogs), and seeded random files of
#           4 KiB..16 MiB (log-uniform); about 510 MB in 2k entries.
#   huge    three files of 200 MiB (629 MB): a tar of the pyenv tree (compressible), float32-like
#           weights (random mantissas, few exponents) and random bytes (incompressible).
#           Scaled down from the GB-sized files of real sandboxes to keep the bench short.
#   tiny    500,000 files of 0..200 bytes of text in 1,000 directories (57 MB).
# The debootstrap tree itself is made by bench-freeze.sh (CACHE/rootfs).
set -eu
mkdir -p "$1"
CACHE=$(cd "$1" && pwd) # absolute: the steps below cd elsewhere
SHAPE=$2
T=$CACHE/tree-$SHAPE
[ -f "$T/.done" ] && { echo "$T"; exit 0; }
rm -rf "$T" "$T.tmp"
mkdir -p "$T.tmp"

PYPKGS="python3-h5py python3-six python3-tz python3-googleapi python3-numpydoc python3-requests
python3-google-auth python3-attr python3-sphinx-rtd-theme python3-s3transfer python3-dateutil
python3-parso python3-babel python3-urllib3 python3-yaml python3-jinja2 python3-llvmlite
python3-oslo.config python3-openpyxl python3-seaborn python3-boto3 python3-pytest
python3-aiohttp python3-hypothesis python3-zmq python3-tornado python3-pil python3-docutils
python3-pywt python3-ipython python3-setuptools python3-sphinx python3-tables
python3-reportlab python3-cryptography python3-pyqtgraph python3-pygments python3-lxml
python3-dask python3-xarray python3-distributed python3-jedi python3-nltk python3-sqlalchemy
python3-pip python3-nibabel python3-sunpy python3-networkx python3-dipy python3-numba
python3-sklearn python3-biopython python3-twisted python3-skimage-lib python3-sklearn-lib
python3-mne python3-pandas-lib python3-matplotlib python3-pandas python3-astropy
python3-statsmodels python3-django python3-numpy python3-skimage python3-sympy python3-mypy
python3-plotly python3-scipy python3-botocore"

debs() {
	[ -f "$CACHE/debs/.done" ] && return 0
	mkdir -p "$CACHE/debs"
	# shellcheck disable=SC2086
	(cd "$CACHE/debs" && apt-get download -q $PYPKGS >"$CACHE/debs.log" 2>&1) ||
		{ echo "freeze-trees: apt-get download failed (see $CACHE/debs.log)" >&2; exit 1; }
	touch "$CACHE/debs/.done"
}

# seeded random data: python3 - SEED KIND SIZE PATH (KIND: random, weights)
gen() {
	python3 - "$@" <<'EOF'
import random, sys
seed, kind, size, path = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
rnd = random.Random(seed)
with open(path, 'wb') as f:
    left = size
    while left:
        n = min(left, 8 << 20)
        b = bytearray(rnd.randbytes(n))
        if kind == 'weights':  # little-endian float32: top byte from a few exponents
            b[3::4] = bytes(rnd.choice((0x3c, 0x3d, 0x3e, 0xbc, 0xbd, 0xbe)) for _ in range(len(b[3::4])))
        f.write(b)
        left -= n
EOF
}

case $SHAPE in
pyenv)
	debs
	for d in "$CACHE"/debs/*.deb; do dpkg-deb -x "$d" "$T.tmp"; done
	;;
packed)
	debs
	mkdir -p "$T.tmp/debs" "$T.tmp/gz" "$T.tmp/data"
	cp "$CACHE"/debs/*.deb "$T.tmp/debs/"
	(cd "$CACHE/rootfs" && find . -name '*.gz' -type f | sort | tar cf - -T -) | tar xf - -C "$T.tmp/gz"
	python3 - "$T.tmp/data" <<'EOF'
import math, os, random, sys
d, rnd, total, i = sys.argv[1], random.Random(7), 0, 0
while total < 340 << 20:
    size = int(math.exp(rnd.uniform(math.log(4096), math.log(16 << 20))))
    sub = os.path.join(d, 'd%02d' % (i % 16))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, 'f%05d.bin' % i), 'wb') as f:
        f.write(rnd.randbytes(size))
    total += size
    i += 1
EOF
	;;
huge)
	[ -f "$CACHE/tree-pyenv/.done" ] || sh "$0" "$CACHE" pyenv >/dev/null
	tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - -C "$CACHE/tree-pyenv" . 2>/dev/null |
		head -c $((200 << 20)) >"$T.tmp/site-packages.tar"
	gen 11 weights $((200 << 20)) "$T.tmp/weights.f32"
	gen 12 random $((200 << 20)) "$T.tmp/events.bin"
	;;
tiny)
	python3 - "$T.tmp" <<'EOF'
import os, random, sys
d, rnd = sys.argv[1], random.Random(3)
words = ['alpha', 'beta', 'gamma', 'delta', 'pt', 'eta', 'phi', 'run', 'lumi', 'event',
         'jet', 'muon', 'track', 'vertex', 'energy', 'weight', '=', '0.5', '1', '42', '\n']
for i in range(1000):
    sub = os.path.join(d, 'p%03d' % i)
    os.mkdir(sub)
    for j in range(500):
        n = rnd.randrange(0, 40)
        with open(os.path.join(sub, 'm%03d.txt' % j), 'w') as f:
            f.write(' '.join(rnd.choice(words) for _ in range(n))[:200])
EOF
	;;
*) echo "freeze-trees: unknown shape '$SHAPE'" >&2; exit 2 ;;
esac
touch "$T.tmp/.done"
mv "$T.tmp" "$T"
echo "$T"
