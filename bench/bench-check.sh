#!/bin/sh
# bench/bench-check.sh [BUILDDIR]: gridgpu check on a session at the local test site,
# beside the command run by hand in the same run. Not a test: it prints figures.
#
# A session like the demo's (a small sandbox: a shell and a few tools, runtime
# bwrap), its sandbox frozen into work.sif, then, RUNS runs each (default 5,
# hyperfine):
#   1. the command alone in the session, over the generated ssh config (OpenSSH,
#      a control master up: what `ssh dev CMD` costs a user);
#   2. `gridgpu check work.sif --session dev -- CMD`, the image kept on the node
#      (after the first run): the command runs twice, in the session and in the
#      image through the batch wrapper, which unpacks the image for bubblewrap;
#   3. the first check of a new image (it is sent to the node): once.
# CMD is `sleep SECS` (SLEEP, default 1), so "beyond the command's own run time"
# is the check's time less 2 x SLEEP (issue 46's target: under 5 s).
# Env: GRIDGPU, RUNS, SLEEP, GG_TB_DIR (the site; bench/run starts it).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-5}
SLEEP=${SLEEP:-1}
for c in hyperfine ssh python3; do
	command -v "$c" >/dev/null || { echo "bench-check: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
: "${GG_TB_DIR:?the test site must be up (bench/run starts it)}"
. "$GG_TB_DIR/env.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench-check.XXXXXX")
export HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config" XDG_STATE_HOME="$W/home/.local/state" \
	XDG_CACHE_HOME="$W/home/.cache" X509_USER_PROXY="$W/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
mkdir -p "$HOME"
cleanup() {
	"$G" kill -q dev >/dev/null 2>&1 || true
	"$G" clean -q >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM

"$G" proxy init -q --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
"$G" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap
sh "$top/tests/e2e/mkrootfs.sh" "$W/sb" sleep grep sort >/dev/null 2>&1
"$G" request -q --name dev --image "$W/sb" --walltime 1h >/dev/null
"$G" freeze -q --session dev -o "$W/work.sif"
cp "$W/work.sif" "$W/other.sif"
printf 'gridgpu bench check' >>"$W/other.sif" # another SHA-256: sent again
cfg=$XDG_CONFIG_HOME/gridgpu/ssh/config
size=$(($(wc -c <"$W/work.sif") / 1024))

hyperfine -N -w 1 --runs "$RUNS" --export-json "$W/check.json" \
	-n "ssh dev sleep $SLEEP" "ssh -F $cfg dev sleep $SLEEP" \
	-n "gridgpu check (image kept)" "$G -q check $W/work.sif --session dev -- sleep $SLEEP" >/dev/null
t0=$(date +%s%N)
"$G" -q check "$W/other.sif" --session dev -- sleep "$SLEEP" >/dev/null
first=$(( ($(date +%s%N) - t0) / 1000000 ))
python3 - "$W/check.json" "$SLEEP" "$first" "$size" "$RUNS" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["results"]
sl, first, size, runs = float(sys.argv[2]), int(sys.argv[3]) / 1000, sys.argv[4], sys.argv[5]
ssh, chk = d[0]["median"], d[1]["median"]
print("gridgpu check on a session at the test site (%s KiB image, medians of %s)" % (size, runs))
print("  %-40s %7.3f s" % ("ssh dev sleep %g (the command alone)" % sl, ssh))
print("  %-40s %7.3f s" % ("gridgpu check, image kept on the node", chk))
print("  %-40s %7.3f s" % ("gridgpu check, a new image sent", first))
print("  beyond the command's own run time (2 x %g s): %.3f s kept, %.3f s new (target < 5 s)"
      % (sl, chk - 2 * sl, first - 2 * sl))
PY
