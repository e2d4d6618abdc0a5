#!/bin/sh
# make demo: the user's loop, end to end, against the local test site.
# Every step is printed before it runs; the demo stops at the first failure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G="$B/bin/gridgpu"
# The site: GG_TB_DIR (default /tmp/gridgpu-testbed) and, for a second site
# beside it, GG_TB_NS, GG_TB_PORT_BASE, GRIDGPU_TESTBED_LRMS (tests/testbed/lib.sh).
export GG_TB_DIR="${GG_TB_DIR:-/tmp/gridgpu-testbed}"
# A second site's sessions listen on 127.0.0.1:22000 behind hops named like
# the first's: its ssh control sockets get a TMPDIR of their own (as run-e2e).
ns=${GG_TB_NS:-$(sed -n 's/^ns=//p' "$GG_TB_DIR/run/shape" 2>/dev/null || true)}
if [ -n "$ns" ] && [ "$ns" != ggsite ]; then
	export TMPDIR="/tmp/gg-e2e-$ns"
	[ -d "$TMPDIR" ] || mkdir -m 1777 "$TMPDIR"
fi

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "Start the local test site (a real ARC CE in front of Slurm in a network namespace, two ssh jump hosts)"
started=0
if ! "$top/tests/testbed/site-status" "$GG_TB_DIR" >/dev/null 2>&1; then
	"$top/tests/testbed/site-up" "$GG_TB_DIR"
	started=1
fi
# shellcheck source=/dev/null # made by site-up
. "$GG_TB_DIR/env.sh"

demo=$(mktemp -d /tmp/gridgpu-demo.XXXXXX)
cleanup() {
	[ "$started" = 1 ] && [ -z "${GG_DEMO_KEEP_SITE:-}" ] && "$top/tests/testbed/site-down" "$GG_TB_DIR" >/dev/null 2>&1
	rm -rf "$demo"
}
trap cleanup EXIT
# A user of our own: nothing of the real user's is read or changed.
export HOME="$demo/home" XDG_CONFIG_HOME="$demo/home/.config" XDG_STATE_HOME="$demo/home/.local/state"
export X509_USER_PROXY="$demo/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
mkdir -p "$HOME"
echo "demo user's HOME: $HOME"

step "Make a 12-hour RFC 3820 proxy from the grid certificate (passphrase from a file, as a script would)"
run "$G" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --valid 12h --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
run "$G" proxy info

step "Add the site profile a site admin would hand out: CE URL and two jump hosts"
run "$G" site add testsite --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap ${GG_TB_GPU_QUEUE:+--gpu-queue "$GG_TB_GPU_QUEUE"} ${GG_TB_GPU_RTE:+--gpu-rte "$GG_TB_GPU_RTE"}
[ -z "${GG_TB_GPU_RTE:-}" ] || echo "(the site's GPU mapping: queue $GG_TB_GPU_QUEUE, runtime environment $GG_TB_GPU_RTE, which its Slurm turns into --gres=gpu:a100:N)"
echo "(runtime bwrap: the test site has no apptainer, which Debian does not ship; batch jobs"
echo " unpack the image with unsquashfs and run in it under bubblewrap)"
run "$G" site show testsite

step "Ask the CE for an interactive session (the job starts an sshd only our key can enter)"
if [ -n "${GG_TB_GPU_RTE:-}" ]; then
	run "$G" request --name dev --gpus 1 --walltime 2h --connect-deadline 10m
	# the session's Slurm job: the CE's job id from the record, Slurm's from A-REX
	jid=$("$G" --json status dev --no-sync | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
	sid=$(sed -n 's/^localid=//p' "$GG_TB_CONTROL_DIR/job.$jid.local")
	echo "(what Slurm allocated to the session's job, asked in the site with squeue and scontrol:)"
	ip netns exec "$GG_TB_NS" env SLURM_CONF="$GG_TB_SLURM_CONF" \
		squeue -h -j "$sid" -o '  Slurm job %i: partition %P, %T on %N, asked for %b'
	ip netns exec "$GG_TB_NS" env SLURM_CONF="$GG_TB_SLURM_CONF" scontrol show job -d "$sid" |
		sed -n 's/.* GRES=\([^ ]*\).*/  given: \1 (IDX: the node'"'"'s GPU indices)/p'
else
	run "$G" request --name dev --walltime 2h --connect-deadline 10m
fi

step "Connect through both jump hosts, host key pinned, and work in the session"
# shellcheck disable=SC2016 # expanded on the node
run "$G" connect dev -- 'echo "hello from $(hostname) as $(id -un), netns $(readlink /proc/self/ns/net), GPUs ${CUDA_VISIBLE_DEVICES:-none}"'
sb=demo-sandbox-$$
echo "(a small development sandbox on the node: a shell and a few tools)"
"$G" connect dev -- sh -s "$sb" <"$top/tests/e2e/mkrootfs.sh"
run "$G" connect dev -- "echo 'trained in the session, $(date -u +%H:%M:%S)' > $sb/data/result.txt; ls $sb"

step "Plain ssh works too, with the generated config"
run ssh -F "$XDG_CONFIG_HOME/gridgpu/ssh/config" dev "cat $sb/data/result.txt"

step "Freeze the sandbox into a reproducible SIF image, streamed from the session over ssh"
run "$G" freeze --session dev --path "$sb" -o "$demo/work.sif"
run "$G" inspect "$demo/work.sif"

step "Submit the image as batch work: the command runs inside the image"
run "$G" submit "$demo/work.sif" --name batch --walltime 30m -- cat /data/result.txt
run "$G" get --wait --dir "$demo/batch" batch
run cat "$demo/batch/gridgpu-job.out"
"$G" connect dev -- rm -rf "$sb" >/dev/null 2>&1 || true

step "Sessions at a glance, refreshed from the CE"
run "$G" list --sync
run "$G" status dev

step "End the session: the CE cancels the job, the ssh block and key go away"
run "$G" kill dev
run "$G" list
run "$G" clean

printf '\n\033[1;32mdemo: success — proxy, request, connect through two jump hosts, freeze from the session, submit, get, kill and clean all worked against a real ARC CE\033[0m\n'
