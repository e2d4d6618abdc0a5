#!/bin/sh
# bench/bench-submit.sh [BUILDDIR]: batch submission against the local test site,
# beside the peer tools measured in the same run. Not a test: it prints figures.
#   1. `gridgpu submit` of a trivial job vs `arcsub -T arcrest` of the same job
#      description (the same wrapper and image uploaded as inputs), RUNS runs.
#   2. Upload throughput of a 1 GiB image: `gridgpu submit` vs `curl -T` to the
#      same REST URL (the image is made once and kept in bench/cache).
# Env: GRIDGPU, RUNS (default 10), GG_TB_DIR (the site must be up: bench/run).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-10}
CACHE=${BENCH_CACHE:-$top/bench/cache}
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
. "$GG_TB_DIR/env.sh"
for c in hyperfine arcsub arcclean curl python3; do
	command -v "$c" >/dev/null || { echo "bench-submit: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
W=$(mktemp -d /tmp/gg-bench-submit.XXXXXX)
export HOME=$W/home XDG_CONFIG_HOME=$W/home/.config XDG_STATE_HOME=$W/home/.local/state
export X509_USER_PROXY=$W/x509up X509_CERT_DIR=$GG_TB_CA_DIR
mkdir -p "$HOME" "$CACHE"
cleanup() {
	"$G" clean -q --all >/dev/null 2>&1 || true
	arcclean -a -j "$W/jobs.dat" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
"$G" proxy init -q --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
"$G" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap
median() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f" % d["results"][int(sys.argv[2])]["median"])' "$1" "$2"; }
ms() { python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * 1000))' "$1"; }
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

sh "$top/tests/e2e/mkrootfs.sh" "$W/sandbox"
"$G" freeze -q "$W/sandbox" -o "$W/small.sif"
wrapper=$top/libexec/gridgpu/batch-wrapper
off=$(python3 -c 'import struct,sys
f=open(sys.argv[1],"rb"); h=f.read(128); n=struct.unpack_from("<q",h,88)[0]; o=struct.unpack_from("<q",h,96)[0]
f.seek(o)
for i in range(n):
    d=f.read(585)
    if d[4] and struct.unpack_from("<i",d,0)[0]==0x4004: print(struct.unpack_from("<q",d,17)[0]); break' "$W/small.sif")

echo "== 1. submitting a trivial job: gridgpu submit vs arcsub -T arcrest ($RUNS runs each; image $(du -h "$W/small.sif" | cut -f1))"
"$G" --site tb submit -q "$W/small.sif" --walltime 1h -- true >/dev/null # a delegation to reuse
xrsl="&(executable=\"/bin/sh\")(arguments=\"gridgpu-wrapper\" \"-o\" \"$off\" \"-r\" \"bwrap\" \"image.sif\" \"--\" \"true\")(inputfiles=(\"gridgpu-wrapper\" \"$wrapper\")(\"image.sif\" \"$W/small.sif\"))(outputfiles=(\"gridgpu-job.out\" \"\"))(stdout=\"gridgpu-job.out\")(walltime=\"60\")"
hyperfine -N -w 1 --runs "$RUNS" --export-json "$W/submit.json" \
	-n "gridgpu submit" "$G --site tb submit -q $W/small.sif --walltime 1h -- true" \
	-n "arcsub -T arcrest" "arcsub -C $GG_TB_CE_URL -T arcrest -j $W/jobs.dat -e '$xrsl'" >/dev/null 2>&1
g=$(median "$W/submit.json" 0); a=$(median "$W/submit.json" 1)
printf '  %-40s %8s ms   %sx arcsub (target <= 0.2)\n' "gridgpu submit" "$(ms "$g")" "$(ratio "$g" "$a")"
printf '  %-40s %8s ms\n' "arcsub -T arcrest" "$(ms "$a")"
"$G" clean -q --all >/dev/null 2>&1 || true
arcclean -a -j "$W/jobs.dat" >/dev/null 2>&1 || true

echo "== 2. uploading a 1 GiB image: gridgpu submit vs curl -T to the same REST URL"
big=$CACHE/big-1g.sif
if [ ! -s "$big" ]; then
	mkdir -p "$W/bigsb/data"
	cp -a "$W/sandbox/." "$W/bigsb/"
	head -c 1073741824 /dev/urandom >"$W/bigsb/data/noise"
	"$G" freeze -q --level 1 "$W/bigsb" -o "$big"
	rm -rf "$W/bigsb"
fi
size=$(stat -c %s "$big")
REST=$GG_TB_CE_URL/rest/1.0
C="curl -s --cert $X509_USER_PROXY --key $X509_USER_PROXY --capath $GG_TB_CA_DIR -H Accept:application/json"
for i in 1 2 3; do
	t0=$(date +%s.%N)
	"$G" --site tb submit -q "$big" --walltime 1h -- true >/dev/null
	t1=$(date +%s.%N)
	"$G" clean -q --all >/dev/null 2>&1 || true
	id=$($C -X POST --data-binary '&(executable="/bin/true")(inputfiles=("image.sif" ""))' "$REST/jobs?action=new" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["id"])')
	t2=$(date +%s.%N)
	$C -H 'Expect:' -T "$big" "$REST/jobs/$id/session/image.sif" -o /dev/null
	t3=$(date +%s.%N)
	$C -X POST -H 'Content-Type: application/json' -d "{\"job\":[{\"id\":\"$id\"}]}" "$REST/jobs?action=clean" >/dev/null
	python3 -c 'import sys
a,b,c,d,s=map(float,sys.argv[1:6]); g=s/(b-a)/2**20; u=s/(d-c)/2**20
print("  run %s: gridgpu submit %.0f MiB/s (whole command), curl -T %.0f MiB/s (upload alone): %.2fx curl (target >= 0.9)" % (sys.argv[6], g, u, g/u))' "$t0" "$t1" "$t2" "$t3" "$size" "$i"
done
