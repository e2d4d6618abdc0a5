#!/bin/sh
# bench/bench-slurmssh.sh [BUILDDIR]: batch submission to a slurm+ssh:// CE
# (Slurm through the test site's login node, issue 49), beside a plain
# `ssh login sbatch` of the same job measured in the same run. Not a test: it
# prints figures.
#   gridgpu submit IMAGE -- true   (one sftp session: a job directory made, the
#                                   wrapper, enter script and image put in it;
#                                   then one command: sbatch --hold, rename, release)
#   ssh login 'tar x; sbatch --wrap ...' < the same wrapper and image
#                                  (one ssh through the same hops, jump1 and
#                                   jump2, to the login node, OpenSSH)
# Env: GRIDGPU, RUNS (default 10), GG_TB_DIR (the site must be up: bench/run).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-10}
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
for c in hyperfine ssh tar python3; do
	command -v "$c" >/dev/null || { echo "bench-slurmssh: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
. "$GG_TB_DIR/env.sh"
[ -n "${GG_TB_SLURMSSH_CONF:-}" ] || { echo "bench-slurmssh: the test site has no slurm+ssh profile (not Slurm)" >&2; exit 1; }
W=$(mktemp -d /tmp/gg-bench-slurmssh.XXXXXX)
export HOME=$W/home XDG_CONFIG_HOME=$W/home/.config XDG_STATE_HOME=$W/home/.local/state
unset X509_USER_PROXY BEARER_TOKEN
mkdir -p "$XDG_CONFIG_HOME/gridgpu" "$W/stage"
{ printf '[gridgpu]\nsite = slurmssh\n'; cat "$GG_TB_SLURMSSH_CONF"; } >"$XDG_CONFIG_HOME/gridgpu/config"
DIR=$GG_TB_SLURMSSH_DIR
cleanup() {
	"$G" clean -q --all >/dev/null 2>&1 || true
	ssh -F "$GG_TB_SSH_CONFIG" login "rm -rf $DIR/bench.*" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
median() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f" % d["results"][int(sys.argv[2])]["median"])' "$1" "$2"; }
ms() { python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * 1000))' "$1"; }
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

sh "$top/tests/e2e/mkrootfs.sh" "$W/sandbox" >/dev/null 2>&1
"$G" freeze -q "$W/sandbox" -o "$W/stage/image.sif"
cp "$top/libexec/gridgpu/batch-wrapper" "$W/stage/gridgpu-wrapper"
# the peer: one ssh through the same hops, the same files, sbatch of the same command
cat >"$W/peer.sh" <<EOP
tar -C '$W/stage' -cf - gridgpu-wrapper image.sif |
	ssh -F '$GG_TB_SSH_CONFIG' login 'd=\$(mktemp -d $DIR/bench.XXXXXX) && tar -xf - -C "\$d" &&
		sbatch --parsable --chdir="\$d" --output="\$d/out" --time=60 --job-name=bench \
		--wrap "sh gridgpu-wrapper -r bwrap image.sif -- true"' >/dev/null
EOP

echo "== submitting a trivial job to slurm+ssh://: gridgpu submit vs ssh login sbatch ($RUNS runs each; image $(du -h "$W/stage/image.sif" | cut -f1))"
hyperfine -N -w 1 --runs "$RUNS" --export-json "$W/submit.json" \
	-n "gridgpu submit (slurm+ssh)" "$G submit -q $W/stage/image.sif --walltime 1h -- true" \
	-n "ssh login tar+sbatch" "sh $W/peer.sh" >/dev/null 2>&1
g=$(median "$W/submit.json" 0); p=$(median "$W/submit.json" 1)
printf '  %-40s %8s ms   %sx ssh+sbatch\n' "gridgpu submit (slurm+ssh)" "$(ms "$g")" "$(ratio "$g" "$p")"
printf '  %-40s %8s ms\n' "ssh login tar+sbatch" "$(ms "$p")"
