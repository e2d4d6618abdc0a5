#!/bin/sh
# bench-sites.sh [BUILDDIR]: the matchmaking decision over 10 sites (issue 47):
# 2 real test sites (the one in GG_TB_DIR, A100s, and a second one with T4s,
# GG_TB_PEER_DIR, started here when it is not up: tests/e2e/lib.sh
# peer_site_up) and 8 simulated behind the fault proxy (tests/e2e/faultproxy.py,
# mode "glue2": a CE's REST version and GLUE2 information), one of the 8 down
# (connection refused: the unreachable site). Measured, RUNS runs each
# (default 7), interleaved:
#   cold    gridgpu submit --site auto --dry-run (every CE asked: the cache
#           removed before each run)                    target <= 1000 ms
#   cached  the same within the cache's minute (no CE asked)   target <= 50 ms
#   sites   gridgpu sites --refresh (the table, every CE asked)
# beside the peer: curl of every CE's GLUE2 information (GET .../info), the 10
# at once (xargs -P 10; the same TLS, the same answers), and arcinfo of the two
# real CEs one after the other. A blackhole CE (accepts, never answers) is
# measured once with --timeout-bound sites (--timeout 1s).
# Env: GRIDGPU, RUNS, FP_PORT (the first of 9 ports, default GG_TB_PORT_BASE+70),
# GG_TB_DIR, GG_TB_PEER_NS / GG_TB_PEER_PORT_BASE / GG_TB_PEER_DIR (the second site).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-7}
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
for c in curl arcinfo python3; do
	command -v "$c" >/dev/null || { echo "bench-sites: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
. "$GG_TB_DIR/env.sh"
FP_PORT=${FP_PORT:-$((${GG_TB_PORT_BASE:-9520} + 70))}
W=$(mktemp -d /tmp/gg-bench-sites.XXXXXX)
# the second real site, as the e2e tests bring it up (lib.sh's helpers need these)
GRIDGPU=$G GG_TOP=$top
export GRIDGPU
. "$top/tests/e2e/lib.sh"
export HOME=$W/home XDG_CONFIG_HOME=$W/home/.config XDG_STATE_HOME=$W/home/.local/state \
	XDG_CACHE_HOME=$W/home/.cache
export X509_USER_PROXY=$W/x509up X509_CERT_DIR=$GG_TB_CA_DIR
mkdir -p "$HOME"
fp_stop() {
	for d in "$W"/fp*; do
		[ -f "$d/pid" ] && kill "$(cat "$d/pid")" 2>/dev/null
	done
	return 0
}
cleanup() {
	fp_stop
	peer_site_stop
	rm -rf "$W" "$T_TMP"
}
trap cleanup EXIT INT TERM
peer_site_up t4 || { echo "bench-sites: the second test site did not start" >&2; exit 1; }

fp() { # DIR PORT MODE...
	_d=$1 _p=$2
	shift 2
	mkdir -p "$_d"
	python3 "$top/tests/e2e/faultproxy.py" --port "$_p" --dir "$_d" --ca-cert "$GG_TB_DIR/ca/ca.pem" \
		--ca-key "$GG_TB_DIR/ca/ca.key" --mode "$*" >"$_d.out" 2>&1 &
	for _ in $(seq 100); do [ -s "$_d/state" ] && return 0; sleep 0.1; done
	echo "bench-sites: the fault proxy on port $_p did not start: $(cat "$_d.out")" >&2
	exit 1
}

"$G" proxy init -q --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
"$G" site add a100 -q --ce "$GG_TB_CE_URL" --gpu-queue gpu --gpu-rte ENV/GPU \
	--gpu-model "$GG_TB_GPU_MODEL" --gpu-memory "$GG_TB_GPU_MEMORY_MB" --gpu-capability "$GG_TB_GPU_CAPABILITY"
peer_token_command "$W/peer-token"
"$G" site add t4 -q --ce "$(peer GG_TB_CE_URL)" --gpu-queue gpu --gpu-rte ENV/GPU \
	--gpu-model "$(peer GG_TB_GPU_MODEL)" --gpu-memory "$(peer GG_TB_GPU_MEMORY_MB)" \
	--gpu-capability "$(peer GG_TB_GPU_CAPABILITY)" --ca-dir "$(peer GG_TB_CA_DIR)" \
	--auth token --token-command "$W/peer-token"
urls="$GG_TB_CE_URL $(peer GG_TB_CE_URL)"
for i in 1 2 3 4 5 6 7 8; do
	p=$((FP_PORT + i))
	if [ "$i" = 8 ]; then
		fp "$W/fp$i" "$p" down
	else
		fp "$W/fp$i" "$p" glue2 $((i * 3)) $((i % 4))
	fi
	"$G" site add "sim$i" -q --ce "https://localhost:$p/arex" --gpu-queue gpu --gpu-rte ENV/GPU \
		--gpu-model "NVIDIA H100 80GB HBM3" --gpu-memory 81559 --gpu-capability 9.0
	urls="$urls https://localhost:$p/arex"
done
fp "$W/fp9" $((FP_PORT + 9)) blackhole

# interleaved NAME=COMMAND ...: RUNS runs of each, in turn; "NAME median runs" lines (s)
interleaved() {
	python3 - "$RUNS" "$@" <<'EOF'
import statistics, subprocess, sys, time
runs, cmds = int(sys.argv[1]), [a.split("=", 1) for a in sys.argv[2:]]
t = {n: [] for n, _ in cmds}
for _ in range(runs):
    for n, c in cmds:
        a = time.monotonic()
        subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t[n].append(time.monotonic() - a)
for n, _ in cmds:
    print(n, "%.4f" % statistics.median(t[n]), " ".join("%.3f" % v for v in t[n]))
EOF
}
ms() { python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * 1000))' "$1"; }
field() { sed -n "s/^$1 \([0-9.]*\) .*/\1/p" "$2"; }

sh "$top/tests/e2e/mkrootfs.sh" "$W/sandbox" >/dev/null 2>&1
"$G" freeze -q "$W/sandbox" -o "$W/work.sif"
decide="$G submit $W/work.sif --site auto --gpus 1 --dry-run -- true"
"$G" submit "$W/work.sif" --site auto --gpus 1 --dry-run -- true >"$W/ranking" 2>&1 ||
	{ echo "bench-sites: the decision failed: $(cat "$W/ranking")" >&2; exit 1; }
echo "== the decision over 10 sites (2 real, 8 simulated, sim8 down): $(grep '^chose' "$W/ranking")"
grep '^  ' "$W/ranking" | sed 's/^/  /'
# the peer: every CE's GLUE2 information with curl, the 10 at once; the
# simulated ones trust the first site's CA, the second site its own
printf '%s\n' $urls | sed 's|$|/rest/1.0/info?schema=glue2|' >"$W/urls"
peer_ca=$(peer GG_TB_CA_DIR)
peer_url=$(peer GG_TB_CE_URL)
tok=$("$W/peer-token")
cat >"$W/curl-all" <<EOF
#!/bin/sh
grep -v '$peer_url' '$W/urls' | xargs -P 10 -n 1 curl -s -o /dev/null --max-time 10 --cert '$X509_USER_PROXY' \
	--key '$X509_USER_PROXY' --capath '$GG_TB_CA_DIR' -H 'Accept: application/json' &
curl -s -o /dev/null --max-time 10 --capath '$peer_ca' -H 'Authorization: Bearer $tok' \
	-H 'Accept: application/json' '$peer_url/rest/1.0/info?schema=glue2'
wait
EOF
chmod 0700 "$W/curl-all"
cat >"$W/arcinfo-2" <<EOF
#!/bin/sh
arcinfo -I org.nordugrid.arcrest -c '$GG_TB_CE_URL' >/dev/null 2>&1
BEARER_TOKEN='$tok' X509_CERT_DIR='$peer_ca' arcinfo -I org.nordugrid.arcrest -c '$peer_url' >/dev/null 2>&1
EOF
chmod 0700 "$W/arcinfo-2"
# the peers get the answers, not a fast failure: 9 of the 10 CEs answer curl
# with their GLUE2 document (sim8 is down), arcinfo shows both real ones
n=$(sed 's/^/url = /' "$W/urls" | grep -v "$peer_url" | curl -s --max-time 10 --cert "$X509_USER_PROXY" \
	--key "$X509_USER_PROXY" --capath "$GG_TB_CA_DIR" -H 'Accept: application/json' -K - 2>/dev/null |
	grep -o '"ComputingService"' | wc -l)
[ "$n" = 8 ] || { echo "bench-sites: curl got $n GLUE2 documents of the 9 CEs of the first CA, not 8" >&2; exit 1; }
arcinfo -I org.nordugrid.arcrest -c "$GG_TB_CE_URL" 2>&1 | grep -q 'Computing service' &&
	BEARER_TOKEN=$tok X509_CERT_DIR=$peer_ca arcinfo -I org.nordugrid.arcrest -c "$peer_url" 2>&1 |
	grep -q 'Computing service' || { echo "bench-sites: arcinfo of the real CEs failed" >&2; exit 1; }
interleaved "cold=rm -f $XDG_CACHE_HOME/gridgpu/sites.json; $decide" "curl=$W/curl-all" \
	"arcinfo=$W/arcinfo-2" "sites=$G sites --refresh" >"$W/t.txt"
"$G" sites >/dev/null 2>&1 || true # the cache filled
interleaved "cached=$decide" >"$W/c.txt"
printf '  %-58s %6s ms   (target <= 1000 ms)\n' "submit --site auto --dry-run, every CE asked" "$(ms "$(field cold "$W/t.txt")")"
printf '  %-58s %6s ms   (target <= 50 ms)\n' "the same from the cache" "$(ms "$(field cached "$W/c.txt")")"
printf '  %-58s %6s ms\n' "sites --refresh (the table)" "$(ms "$(field sites "$W/t.txt")")"
printf '  %-58s %6s ms\n' "peer: curl GET info of the 10 CEs at once" "$(ms "$(field curl "$W/t.txt")")"
printf '  %-58s %6s ms\n' "peer: arcinfo of the 2 real CEs, one after the other" "$(ms "$(field arcinfo "$W/t.txt")")"
sed 's/^/    runs: /' "$W/t.txt" "$W/c.txt"
"$G" site add hole -q --ce "https://localhost:$((FP_PORT + 9))/arex" --gpu-rte ENV/GPU
a=$(date +%s%N)
"$G" sites --refresh --timeout 1s >/dev/null 2>&1 || true
b=$(date +%s%N)
printf '  %-58s %6s ms   (the timeout: 1000 ms)\n' "sites --refresh --timeout 1s with a CE that never answers" "$(((b - a) / 1000000))"
