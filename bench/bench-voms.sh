#!/bin/sh
# bench/bench-voms.sh [BUILDDIR]: `gridgpu proxy init --voms testvo:/testvo/analysis`
# beside `voms-proxy-init --voms testvo:/testvo/analysis`, in one hyperfine run,
# against the same VOMS server: the local test site's (voms-server on MariaDB in
# the site's namespace, through its bridge). Same certificate, unencrypted key
# (no pass phrase to feed, as bench-proxy.sh's part 1), RSA 2048, 12 h for the
# proxy and the AC, the same vomses and .lsc files. Not a test.
#
# Both ask the server's REST interface first (GET /generate-ac), which this
# server (Debian's voms 2.1) does not answer, then the legacy XML protocol on a
# second connection: the figures include both round trips for both tools.
#
# Needs the test site up ($GG_TB_DIR/env.sh; bench/run starts it).
# Env: GRIDGPU (binary), RUNS (default 10).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
GRIDGPU=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-10}
[ -x "$GRIDGPU" ] || { echo "bench-voms: $GRIDGPU is not built" >&2; exit 1; }
for c in hyperfine python3 voms-proxy-init voms-proxy-info; do
	command -v "$c" >/dev/null || { echo "bench-voms: $c is not installed" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
[ -f "$GG_TB_DIR/env.sh" ] || { echo "bench-voms: the test site is not up ($GG_TB_DIR)" >&2; exit 1; }
# shellcheck disable=SC1091 # written by tests/testbed/site-up
. "$GG_TB_DIR/env.sh"
[ -n "${GG_TB_VOMSES:-}" ] || { echo "bench-voms: the test site has no VOMS server" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench-voms.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
# Keep the tools away from the user's own credentials and configuration.
export HOME="$W/home"
mkdir -p "$HOME"
unset X509_USER_PROXY X509_USER_CERT X509_USER_KEY BEARER_TOKEN BEARER_TOKEN_FILE
export X509_CERT_DIR="$GG_TB_CA_DIR" X509_VOMS_DIR="$GG_TB_VOMS_DIR" VOMS_USERCONF="$GG_TB_VOMSES"
CERT=$GG_TB_USER_CERT PLAIN=$GG_TB_USER_KEY_PLAIN CA=$GG_TB_CA_DIR
FQAN=/testvo/analysis
GG="$GRIDGPU proxy init --cert $CERT --key $PLAIN --out $W/gg.pem --valid 12h --bits 2048 --voms testvo:$FQAN"
VPI="voms-proxy-init -q -cert $CERT -key $PLAIN -certdir $CA -vomses $GG_TB_VOMSES -out $W/vpi.pem -valid 12:00 -bits 2048 -voms testvo:$FQAN"

echo "bench-voms: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench-voms: VOMS server localhost:$GG_TB_VOMS_PORT (test site $GG_TB_DIR); RSA 2048, 12 h, unencrypted key"
echo "bench-voms: $($GRIDGPU --version | head -n 1), $(dpkg-query -W -f '${Package} ${Version}' voms-clients 2>/dev/null || echo voms-clients)"

# Both must make what is compared: a proxy whose first FQAN is the one asked for.
$GG >/dev/null 2>&1 && $VPI >/dev/null 2>&1 || { echo "bench-voms: a tool failed before the run" >&2; exit 1; }
for f in gg vpi; do
	first=$(voms-proxy-info --all --file "$W/$f.pem" 2>/dev/null | sed -n 's/^attribute : \(.*\)\/Role=NULL\/Capability=NULL$/\1/p' | head -n 1)
	[ "$first" = "$FQAN" ] || { echo "bench-voms: $f.pem's first FQAN is '$first', not $FQAN" >&2; exit 1; }
done
echo

hyperfine -N --runs "$RUNS" --warmup 2 --style none --export-json "$W/h.json" \
	-n "gridgpu proxy init --voms" "$GG" \
	-n "voms-proxy-init --voms" "$VPI"

python3 - "$W/h.json" <<'EOF'
import json, statistics, sys

def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p * (len(xs) - 1)))))]

res = json.load(open(sys.argv[1]))["results"]
rows = [(r["command"], [t * 1000 for t in r["times"]]) for r in res]
print()
print("proxy with a VOMS AC for %s, %d runs each (hyperfine -N), wall time" %
      ("/testvo/analysis", len(rows[0][1])))
print("   %-30s %9s %19s %9s" % ("command", "median", "p10 - p90", "x peer"))
peer = statistics.median(rows[1][1])
for name, ts in rows:
    m = statistics.median(ts)
    print("   %-30s %6.1f ms %7.1f - %6.1f ms %9.2f" % (name, m, q(ts, .1), q(ts, .9), m / peer))
gg = statistics.median(rows[0][1])
print("   target: gridgpu median <= voms-proxy-init's (%.1f ms): %s (%.1f ms)" %
      (peer, "met" if gg <= peer else "NOT met", gg))
EOF
