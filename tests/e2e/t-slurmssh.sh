#!/bin/sh
# The user's loop against a slurm+ssh:// CE (issue 49): the test site's Slurm
# reached through its jump hosts and its login node (an sshd of its own behind
# jump2, where Slurm's clients run), jobs staged into a directory of the file system the node
# shares, and no grid credential at all (no proxy, no token). Asserted from
# Slurm's side (scontrol in the site's namespace) and the shared directory:
# request --gpus 1 reaches ready with the gres asked as the profile maps it,
# connect runs a command on the node, kill ends the job through Slurm, clean
# leaves nothing in the shared directory; a job waiting for GPUs shows Slurm's
# reason (Resources) in status; a session with an image is changed, frozen
# (freeze --session), submitted with an input and get brings its output back;
# an image pre-placed on the shared file system (node:/PATH) is used in place;
# a job past its walltime (Slurm's TIMEOUT) is shown in the ARC path's words.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ -z "${GG_TB_SLURMSSH_CONF:-}" ] || [ ! -r "${GG_TB_SLURMSSH_CONF:-}" ]; then
	echo "1..0 # SKIP the test site has no slurm+ssh profile (its batch system is not Slurm)"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (ip netns exec)"; exit 0; }
# no grid credential anywhere: the user's ssh key is all there is
export X509_USER_PROXY="$T_TMP/no-such-proxy"
unset X509_USER_CERT X509_USER_KEY BEARER_TOKEN BEARER_TOKEN_FILE

py() { python3 -c "$@"; }
jget() { py 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1" 2>/dev/null; }
# job NAME: the Slurm job id of a record (the CE's id is Slurm's)
job() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | jget job_id; }
state() { "$GRIDGPU" --json status "$1" 2>/dev/null | jget state; }
state_is() { [ "$(state "$1")" = "$2" ]; }
slurm_state() { sl scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
slurm_ended() { case $(slurm_state "$1") in CANCELLED | COMPLETED | FAILED | TIMEOUT | '') return 0 ;; esac; return 1; }
DIR=$GG_TB_SLURMSSH_DIR

mkdir -p "$XDG_CONFIG_HOME/gridgpu"
{ printf '[gridgpu]\nsite = slurmssh\n'; cat "$GG_TB_SLURMSSH_CONF"; } >"$XDG_CONFIG_HOME/gridgpu/config"
check "the site's slurm+ssh profile is taken (site show)" "$GRIDGPU" site show slurmssh
run_gg doctor
case $OUT in *"✓ CE"*"slurm-ssh, reached with your ssh key"*) ok "doctor: the CE is reached with the ssh key" ;;
*) not_ok "doctor: the CE is reached with the ssh key: $(printf '%s' "$OUT" | grep CE)" ;; esac
case $OUT in *"proxy"*"skipped: not needed"*) ok "doctor: no proxy asked for" ;;
*) not_ok "doctor: no proxy asked for: $(printf '%s' "$OUT" | grep proxy)" ;; esac
run_gg sites --refresh
expect_eq "sites: the slurm+ssh site is reachable (squeue on its login node)" \
	"$(printf '%s\n' "$OUT" | awk '$1 == "slurmssh" { print $2 }')" yes

# --- request --gpus 1: ready, with the gres Slurm was asked ------------------------------
run_gg request --name s1 --gpus 1 --walltime 10m
expect_eq "request --gpus 1 on slurm+ssh:// without a proxy reaches ready (stderr: $(printf '%s' "$ERR" | tail -n 2))" "$RC" 0
J1=$(job s1)
case $J1 in '' | *[!0-9]*) not_ok "the session's job id is Slurm's ('$J1')" ;; *) ok "the session's job id is Slurm's ($J1)" ;; esac
expect_eq "Slurm runs it" "$(slurm_state "$J1")" RUNNING
tres=$(sl scontrol show job "$J1" 2>/dev/null | sed -n 's/.*TresPerNode=\([^ ]*\).*/\1/p')
expect_eq "sbatch asked the GPU as the profile maps it (gres, type $GG_TB_GPU_TYPE)" "$tres" "gres:gpu:$GG_TB_GPU_TYPE:1"
check "the job's directory is on the shared file system" test -s "$DIR/$J1/gridgpu-session.json"
expect_eq "the launcher ran in that Slurm job (the session file's batch_job_id)" \
	"$(jget batch_job_id <"$DIR/$J1/gridgpu-session.json")" "$J1"
# the GPU Slurm gave the job (not always 0: a job of the test before may still
# hold one while Slurm ends it)
IDX1=$(sl scontrol show job -d "$J1" 2>/dev/null | sed -n "s/.*GRES=gpu:$GG_TB_GPU_TYPE:1(IDX:\([0-9]*\)).*/\1/p" | head -n 1)
run_gg connect s1 -- 'echo "$CUDA_VISIBLE_DEVICES"'
expect_eq "connect runs a command on the node, with the job's GPU, Slurm's index ${IDX1:-?} (stderr: $(printf "%s" "$ERR" | tail -n 2))" "$OUT" "${IDX1:-unknown}"
run_gg status s1
expect_eq "status: ready" "$(state s1)" ready

# --- a job waiting for GPUs: Slurm's reason shown --------------------------------------
run_gg request --name s2 --gpus "$GG_TB_GPU_COUNT" --walltime 10m --no-wait
expect_eq "request --gpus $GG_TB_GPU_COUNT --no-wait (the node has one of them taken)" "$RC" 0
J2=$(job s2)
waits_for() { [ "$(sl squeue -h -j "$1" -o %r 2>/dev/null)" = "$2" ]; }
poll 30 waits_for "$J2" Resources
expect_eq "Slurm holds it for Resources" "$(sl squeue -h -j "$J2" -o %r 2>/dev/null)" Resources
run_gg status s2
case $OUT in *"waiting:"*"Slurm: Resources"*) ok "status shows Slurm's reason" ;;
*) not_ok "status shows Slurm's reason: $(printf '%s' "$OUT" | head -n 4)" ;; esac
run_gg --json status s2
expect_eq "... and --json says queued" "$(printf '%s' "$OUT" | jget state)" queued

# --- kill and clean: through Slurm, nothing left -----------------------------------------
run_gg kill s1 s2
expect_eq "kill s1 s2" "$RC" 0
poll 30 slurm_ended "$J1"
check "Slurm ended the running job" slurm_ended "$J1"
check "Slurm ended the queued job" slurm_ended "$J2"
expect_eq "... cancelled" "$(slurm_state "$J2")" CANCELLED
run_gg clean s1 s2
expect_eq "clean s1 s2" "$RC" 0
check "nothing left of the jobs in the shared directory" sh -c "[ ! -e '$DIR/$J1' ] && [ ! -e '$DIR/$J2' ]"
check "no half-made job directory left either" sh -c "! ls -A '$DIR' | grep -q '^\.new-'"
run_gg list
expect_eq "list: nothing" "$(printf '%s' "$OUT" | grep -c 's[12] ')" 0

# --- the development loop: an image on the node, changed, frozen, submitted, got ------------
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" sleep >/dev/null 2>&1
cd "$T_TMP" || exit 1
run_gg request --name dev --gpus 1 --image sandbox --walltime 10m
expect_eq "request --image sandbox reaches ready (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
run_gg connect dev -- 'echo installed-in-session >/marker'
expect_eq "connect changes the session's sandbox" "$RC" 0
run_gg freeze --session dev -o work.sif
expect_eq "freeze --session over the same hops (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
run_gg kill dev
run_gg clean dev
# a job longer than its walltime (checked at the end: Slurm ends it meanwhile)
run_gg submit work.sif --name tw --walltime 1m -- sleep 600
expect_eq "submit tw with a 1-minute walltime (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
JW=$(job tw)
echo "hello from the laptop" >input.txt
run_gg submit work.sif --name j1 --walltime 10m --input input.txt --output result.txt -- \
	sh -c 'cat input.txt /marker >result.txt; echo done-here'
expect_eq "submit a frozen image to slurm+ssh:// (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
JJ=$(job j1)
run_gg get --wait j1
expect_eq "get --wait j1" "$RC" 0
expect_eq "the output came back, made with the session's change" "$(cat j1/result.txt 2>/dev/null | tr '\n' ' ')" "hello from the laptop installed-in-session "
expect_eq "the job's stdout came back" "$(cat j1/gridgpu-job.out 2>/dev/null)" done-here
check "get brings the declared outputs only (no image, no input)" sh -c '[ ! -e j1/image.sif ] && [ ! -e j1/input.txt ]'
expect_eq "Slurm ran it to the end" "$(slurm_state "$JJ")" COMPLETED
run_gg clean j1
check "clean j1 removes its directory" test ! -e "$DIR/$JJ"

# --- an image pre-placed on the shared file system: used in place, not uploaded -------------
mkdir -p "$GG_TB_DIR/shared/images"
cp work.sif "$GG_TB_DIR/shared/images/placed-$$.sif"
chmod -R a+rX "$GG_TB_DIR/shared/images"
run_gg submit "node:$GG_TB_DIR/shared/images/placed-$$.sif" --name j2 --walltime 10m -- cat /marker
expect_eq "submit node:/PATH to slurm+ssh:// (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
JN=$(job j2)
check "... the image was not uploaded into the job's directory" sh -c "! ls '$DIR/$JN' | grep -q 'sif\$'"
run_gg get --wait j2
expect_eq "... and the job ran on it" "$(cat j2/gridgpu-job.out 2>/dev/null)" installed-in-session
run_gg clean j2
rm -f "$GG_TB_DIR/shared/images/placed-$$.sif"

# --- walltime: Slurm's TIMEOUT in the words the ARC path uses ---------------------------------
slurm_timeout() { [ "$(slurm_state "$1")" = TIMEOUT ]; }
expect_eq "Slurm gave tw its walltime (TimeLimit)" \
	"$(sl scontrol show job "$JW" 2>/dev/null | grep -o 'TimeLimit=[0-9:]*')" TimeLimit=00:01:00
poll 150 slurm_timeout "$JW"
expect_eq "Slurm ended tw at its walltime" "$(slurm_state "$JW")" TIMEOUT
poll 30 state_is tw failed
run_gg status tw
if printf '%s\n' "$OUT" | grep -q '^reason: *ended by walltime: its walltime (1m) ran out and the batch system stopped the job (Slurm: TIMEOUT)$'; then
	ok "status tw: ended by walltime, in the ARC path's words with Slurm's"
else
	not_ok "status tw (exit $RC): $(printf '%s' "$OUT" | grep -i 'reason\|state')"
fi
expect_eq "... a batch job stopped at its walltime has failed" "$(state tw)" failed
run_gg clean tw

done_testing
