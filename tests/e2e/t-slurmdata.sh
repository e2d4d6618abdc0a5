#!/bin/sh
# Storage URLs with a slurm+ssh:// site (issue 49): the site is reached with
# the user's ssh key, and a job that names a storage URL takes the user's
# proxy with it, into its directory on the shared file system (0600, over the
# submit's sftp session), where the job script on the compute node fetches the
# inputs (xrdcp for root://) before the command and puts the outputs (xrdcp,
# curl for davs://) after it. Against the test site's Slurm and its real XRootD
# storage element: no proxy is one line naming 'gridgpu proxy init' and sends
# nothing; a root:// input reaches the job; its outputs reach root:// and
# davs:// and are read back with xrdcp (and by get); the proxy is 0600 while
# the job runs and gone after it, after a failed stage-in and after kill; an
# input gone from storage before the job ran fails the job with the tool's
# reason in status, its command never run. With slurm-stage = login, the
# login node fetches the inputs during the submit (one that cannot be copied
# fails it, nothing left) and puts the outputs when status first sees the job
# ended, the job staging out until then; a put that fails is its failure.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ -z "${GG_TB_SLURMSSH_CONF:-}" ] || [ ! -r "${GG_TB_SLURMSSH_CONF:-}" ] || [ -z "${GG_TB_SE_ROOT:-}" ]; then
	echo "1..0 # SKIP the test site has no slurm+ssh profile or no storage element"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (ip netns exec)"; exit 0; }
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
unset X509_USER_CERT X509_USER_KEY BEARER_TOKEN BEARER_TOKEN_FILE
DIR=$GG_TB_SLURMSSH_DIR
SE=$GG_TB_SE_ROOT
RUN=t-slurmdata-$$-$(date +%s)
# job NAME: the Slurm job id of a record (from the record alone: a status that
# asks the CE would start a login staging's puts)
job() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | jf job_id; }
state_is() { [ "$(sfield "$1" state)" = "$2" ]; }
waits_for() { [ "$(sl squeue -h -j "$1" -o %r 2>/dev/null)" = "$2" ]; }
slurm_jobs() { sl squeue -h -o %i 2>/dev/null | wc -l; }

mkdir -p "$XDG_CONFIG_HOME/gridgpu"
{ printf '[gridgpu]\nsite = slurmssh\n'; cat "$GG_TB_SLURMSSH_CONF"; } >"$XDG_CONFIG_HOME/gridgpu/config"
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" sha256sum cp sleep >/dev/null 2>&1
cd "$T_TMP" || exit 1
check "freeze the test image" "$GRIDGPU" freeze -q sandbox -o work.sif
se_mkdir "/store/data/$RUN" "/store/user/$RUN"
echo "input from storage $RUN" >"$GG_TB_SE_DATA/store/data/$RUN/in.txt"
echo "read late $RUN" >"$GG_TB_SE_DATA/store/data/$RUN/late.txt"
chown -R ggxrd: "$GG_TB_SE_DATA/store/data/$RUN"
SUM=$(sha256sum <"$GG_TB_SE_DATA/store/data/$RUN/in.txt" | cut -d' ' -f1)
IN=$SE//store/data/$RUN/in.txt

# --- no proxy: one line naming the fix, nothing sent ------------------------------------
files=$(ls -A "$DIR" | wc -l) queued=$(slurm_jobs)
expect_fail "a storage input without a proxy: exit 3, 'gridgpu proxy init' named" 3 "gridgpu proxy init" \
	submit work.sif --name np --walltime 10m --input "$IN" -- cat in.txt
expect_eq "... in one line" "$(printf '%s\n' "$ERR" | wc -l)" 1
expect_eq "... nothing sent: the shared directory as it was, no Slurm job" \
	"$(ls -A "$DIR" | wc -l) $(slurm_jobs)" "$files $queued"
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"

# --- a root:// input in, outputs to root:// and davs://; the proxy while it runs ----------
# d1 takes all the node's GPUs and waits for a file the test makes (the job's
# own loop), so that d2 waits in Slurm's queue meanwhile
run_gg submit work.sif --name d1 --gpus "$GG_TB_GPU_COUNT" --walltime 10m --input "$IN" \
	--output "res.txt=$SE//store/user/$RUN/res.txt" \
	--output "copy.txt=$GG_TB_SE_DAVS/store/user/$RUN/copy.txt" -- \
	sh -c 'while [ ! -e go ]; do sleep 0.2; done; sha256sum in.txt >res.txt; cp in.txt copy.txt'
expect_eq "submit with a root:// input and root:// and davs:// outputs (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
J1=$(job d1)
poll 60 test -s "$DIR/$J1/in.txt"
expect_eq "the root:// input reached the job's directory on the node" \
	"$(cat "$DIR/$J1/in.txt" 2>&1)" "input from storage $RUN"
expect_eq "the proxy is in the job's directory while it runs, 0600, the user's" \
	"$(stat -c '%a %U' "$DIR/$J1/.gridgpu-proxy" 2>&1)" "600 $(stat -c %U "$DIR")"
check "... the user's proxy itself" cmp "$X509_USER_PROXY" "$DIR/$J1/.gridgpu-proxy"
check "... never in Slurm's view of the job (its command is the script)" sh -c \
	"! ip netns exec '$GG_TB_NS' env SLURM_CONF='$GG_TB_SLURM_CONF' scontrol show job '$J1' | grep -qi 'x509\|BEGIN'"
run_gg submit work.sif --name d2 --gpus 1 --walltime 10m --input "$SE//store/data/$RUN/late.txt" -- \
	sh -c 'cat late.txt >ran.txt'
expect_eq "submit d2 (its input there at submit)" "$RC" 0
J2=$(job d2)
poll 30 waits_for "$J2" Resources
expect_eq "d2 waits in Slurm's queue (Resources)" "$(sl squeue -h -j "$J2" -o %r 2>/dev/null)" Resources
rm -f "$GG_TB_SE_DATA/store/data/$RUN/late.txt"
touch "$DIR/$J1/go"
run_gg get --wait d1
expect_eq "get --wait d1 (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
xrdcp -s -f "$SE//store/user/$RUN/res.txt" "$T_TMP/back.txt" 2>/dev/null
expect_eq "the root:// output, read back with xrdcp, was made from the input" \
	"$(cut -d' ' -f1 "$T_TMP/back.txt" 2>&1)" "$SUM"
xrdcp -s -f "$SE//store/user/$RUN/copy.txt" "$T_TMP/copy.txt" 2>/dev/null
expect_eq "the davs:// output (put with curl), read back with xrdcp" \
	"$(cat "$T_TMP/copy.txt" 2>&1)" "input from storage $RUN"
expect_eq "get brought the outputs from storage with the proxy" \
	"$(cut -d' ' -f1 d1/res.txt 2>&1) $(cat d1/copy.txt 2>&1)" "$SUM input from storage $RUN"
check "the proxy is gone from d1's directory after the job" test ! -e "$DIR/$J1/.gridgpu-proxy"

# --- an input gone from storage before the job ran: its failure, with the reason ----------
poll_ce 120 state_is d2 failed
expect_eq "d2 failed" "$(sfield d2 state)" failed
run_gg status d2
case $OUT in *"stage-in of late.txt from $SE//store/data/$RUN/late.txt: "*) ok "status d2 names the failed stage-in" ;;
*) not_ok "status d2 names the failed stage-in: $(printf '%s' "$OUT" | grep -i 'reason\|state')" ;; esac
reason=$(printf '%s\n' "$OUT" | grep -i 'stage-in' | head -n 1)
case $reason in *[Nn]o*such*file* | *"[3011]"*) ok "... with the tool's reason ($reason)" ;;
*) not_ok "... with the tool's reason: '$reason'" ;; esac
check "d2's command never ran; its proxy is gone" sh -c "[ ! -e '$DIR/$J2/ran.txt' ] && [ ! -e '$DIR/$J2/.gridgpu-proxy' ]"

# --- kill: the proxy goes with it ------------------------------------------------------
run_gg submit work.sif --name d3 --walltime 10m --input "$IN" -- sleep 600
expect_eq "submit d3" "$RC" 0
J3=$(job d3)
check "d3's proxy is there" test -e "$DIR/$J3/.gridgpu-proxy"
run_gg kill d3
expect_eq "kill d3" "$RC" 0
check "kill removed d3's proxy" test ! -e "$DIR/$J3/.gridgpu-proxy"

run_gg clean d1 d2 d3
expect_eq "clean d1 d2 d3" "$RC" 0
check "nothing left of the jobs in the shared directory" sh -c "[ ! -e '$DIR/$J1' ] && [ ! -e '$DIR/$J2' ] && [ ! -e '$DIR/$J3' ]"

# --- slurm-stage = login: the login node copies, the node never does ---------------------
check "site set slurm-stage login" "$GRIDGPU" site set slurmssh slurm-stage login
run_gg submit work.sif --name l1 --walltime 10m --input "$IN" \
	--output "res.txt=$SE//store/user/$RUN/lres.txt" -- sh -c 'sha256sum in.txt >res.txt'
expect_eq "login: submit with a root:// input and output (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
L1=$(job l1)
check "login: the job script on the node copies nothing" sh -c "! grep -q 'xrdcp\|curl' '$DIR/$L1/gridgpu-job.sh'"
poll 60 sh -c "[ \"\$(head -c 12 '$DIR/$L1/.gridgpu-exit' 2>/dev/null)\" = 0 ]"
expect_eq "login: the input was there when the job ran (its sha256 over it)" \
	"$(cut -d' ' -f1 "$DIR/$L1/res.txt" 2>&1)" "$SUM"
expect_eq "login: the proxy waits for the outputs, 0600" "$(stat -c %a "$DIR/$L1/.gridgpu-proxy" 2>&1)" 600
poll 30 sh -c "! ip netns exec '$GG_TB_NS' env SLURM_CONF='$GG_TB_SLURM_CONF' squeue -h -j '$L1' | grep -q ."
run_gg --json status l1
case "$(printf '%s' "$OUT" | jf staging) $(printf '%s' "$OUT" | jf state)" in
"staging out queued" | "staging out running") ok "login: the job ended, its outputs not yet put: it reads as staging out, not finished" ;;
*) not_ok "login: the job ended, its outputs not yet put: it reads as staging out, not finished ($(printf '%s' "$OUT" | jf staging) $(printf '%s' "$OUT" | jf state))" ;; esac
run_gg get --wait l1
expect_eq "login: get --wait l1 (stderr: $(printf '%s' "$ERR" | tail -n 1))" "$RC" 0
xrdcp -s -f "$SE//store/user/$RUN/lres.txt" "$T_TMP/lback.txt" 2>/dev/null
expect_eq "login: the output put from the login node, read back with xrdcp" \
	"$(cut -d' ' -f1 "$T_TMP/lback.txt" 2>&1)" "$SUM"
check "login: the proxy is gone once the outputs are put" test ! -e "$DIR/$L1/.gridgpu-proxy"
# an output that cannot be put (a directory the storage cannot write): the job's failure
se_mkdir "/store/user/$RUN/ro"
chmod 0555 "$GG_TB_SE_DATA/store/user/$RUN/ro"
run_gg submit work.sif --name l2 --walltime 10m --output "r.txt=$SE//store/user/$RUN/ro/r.txt" -- sh -c 'echo x >r.txt'
expect_eq "login: submit l2" "$RC" 0
L2=$(job l2)
poll_ce 90 state_is l2 failed
run_gg status l2
case $OUT in *"stage-out of r.txt to $SE//store/user/$RUN/ro/r.txt: "*) ok "login: a put that fails is the job's failure, with its reason ($(printf '%s' "$OUT" | grep -o 'stage-out.*' | head -n 1))" ;;
*) not_ok "login: a put that fails is the job's failure: $(printf '%s' "$OUT" | grep -i 'reason\|state')" ;; esac
check "login: l2's proxy is gone" test ! -e "$DIR/$L2/.gridgpu-proxy"
# an input the login node cannot copy (a directory): the submit fails, one line, nothing left
files=$(ls -A "$DIR" | wc -l) queued=$(slurm_jobs)
expect_fail "login: an input that cannot be copied fails the submit with the tool's reason" 6 \
	"stage-in of d from $SE//store/data/$RUN: " submit work.sif --name l3 --walltime 10m --input "$SE//store/data/$RUN:d" -- cp d x
expect_eq "login: ... in one line, nothing left (no directory, no Slurm job)" \
	"$(printf '%s\n' "$ERR" | wc -l) $(ls -A "$DIR" | wc -l) $(slurm_jobs)" "1 $files $queued"
run_gg clean l1 l2
expect_eq "clean l1 l2" "$RC" 0
check "nothing left of l1 and l2" sh -c "[ ! -e '$DIR/$L1' ] && [ ! -e '$DIR/$L2' ]"
rm -rf "${GG_TB_SE_DATA:?}/store/data/$RUN" "${GG_TB_SE_DATA:?}/store/user/$RUN"
done_testing
