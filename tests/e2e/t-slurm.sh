#!/bin/sh
# Sessions on the Slurm test site (the default; A-REX in front of Slurm, one
# node with 3 whole GPUs as gres gpu:a100 and a fourth split into 7 MIG devices,
# gres gpu:1g.10gb): what a batch system adds, asserted from Slurm's side
# (scontrol/squeue inside the site's namespace) - the GPU request reaches Slurm
# as typed gres, the job sees exactly its GPUs, two sessions get different
# GPUs, --mig 1g.10gb gets exactly one MIG device (a session and a batch job),
# a profile the site lacks fails with Slurm's reason (exit 6), a request for a
# whole GPU queues while all 3 are taken (MIG devices free) and runs when one
# frees (shown as queued, the CE's INLRMS:Q, while Slurm holds it), kill
# cancels a queued job and ends a running one through Slurm (no process of the
# job left), Slurm ends a session at its walltime (status: ended by walltime),
# and a batch job whose GPU falls short of its minimums fails fast (exit 6).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ "${GRIDGPU_TESTBED_LRMS:-slurm}" != slurm ] || [ -z "${GG_TB_SLURM_CONF:-}" ]; then
	echo "1..0 # SKIP the test site runs A-REX's fork back end (GRIDGPU_TESTBED_LRMS=fork): this one needs the default, Slurm"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (ip netns exec)"; exit 0; }
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"

py() { python3 -c "$@"; }
# jfield FILE KEY: a value of a JSON file
jfield() { py 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null; }
# ce_id NAME: the CE's job id of a session (from the local record)
ce_id() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | py 'import json,sys; print(json.load(sys.stdin).get("job_id",""))'; }
# slurm_id NAME: Slurm's job id of a session, as A-REX recorded it
slurm_id() { sed -n 's/^localid=//p' "$GG_TB_CONTROL_DIR/job.$(ce_id "$1").local" 2>/dev/null; }
# sfile NAME KEY: a field of the session file the launcher wrote on the node
sfile() { jfield "$GG_TB_SESSION_DIR/$(ce_id "$1")/gridgpu-session.json" "$2"; }
# state NAME: the session's state after a sync with the CE
state() { "$GRIDGPU" --json status "$1" 2>/dev/null | py 'import json,sys; print(json.load(sys.stdin).get("state",""))'; }
sstate() { sl squeue -h -j "$1" -o %T 2>/dev/null; }
# job_procs SLURMID: pids in the site whose environment says they belong to the job
job_procs() {
	for p in $(ip netns pids "$GG_TB_NS"); do
		{ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "SLURM_JOB_ID=$1" && echo "$p"
	done
}
no_job_procs() { [ -z "$(job_procs "$1")" ]; }
state_is() { [ "$(state "$1")" = "$2" ]; }
slurm_state_in() { # SLURMID STATE...: scontrol's JobState is one of them
	_s=$(sl scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	shift
	for _w; do [ "$_s" = "$_w" ] && return 0; done
	return 1
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile with the site's GPU mapping (queue $GG_TB_GPU_QUEUE, RTE $GG_TB_GPU_RTE)" \
	"$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE" --connect-deadline 10m
"$GRIDGPU" site add plain -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2"
PUB=$(gridgpu_for_others)

# --- --gpus without a mapping: refused before anything is sent ---------------
n0=$(sl squeue -h | wc -l)
expect_fail "--gpus on a site without GPU mapping: exit 2" 2 "site 'plain' has no GPU mapping" \
	--site plain request --gpus 1 --walltime 10m
expect_eq "... and Slurm got nothing" "$(sl squeue -h | wc -l)" "$n0"

# mig_uuid IDX: the MIG device behind Slurm's gres index IDX (the site's table)
mig_uuid() { awk -v i="$1" '$1 == i { print $2 }' "$GG_TB_MIG_DEVICES"; }
# mig_idx SLURMID: the gres index of the one MIG device Slurm gave the job
mig_idx() { sl scontrol show job -d "$1" | sed -n "s/.*GRES=gpu:$GG_TB_MIG_PROFILE:1(IDX:\([0-9]*\)).*/\1/p" | head -n 1; }
# gres_used: what Slurm has handed out on the node, by type
gres_used() { sl sinfo -h -N -O GresUsed:200 | head -n 1 | tr -d ' '; }

# a MIG profile the site does not have: submitted now, looked at below
run_gg request --name nomig --mig 7g.80gb --walltime 10m --no-wait
RNOMIG=$RC

# --- request --gpus 2: gres from Slurm's side, 2 GPUs in the job --------------
t0=$(now_ms)
run_gg request --name g2 --gpus 2 --walltime 30m
T_READY=$(($(now_ms) - t0))
expect_eq "request --gpus 2 reaches ready (${T_READY} ms)" "$RC" 0
SJ2=$(slurm_id g2)
job=$(sl scontrol show job "$SJ2" 2>&1)
printf '%s\n' "$job" | grep -q "TresPerNode=gres:gpu:a100:2" && printf '%s\n' "$job" | grep -q " Partition=gpu " &&
	printf '%s\n' "$job" | grep -q "JobState=RUNNING" &&
	ok "Slurm's record of job $SJ2: gres:gpu:a100:2 (whole GPUs) in partition gpu, RUNNING" || not_ok "scontrol show job $SJ2: $job"
V2=$(sfile g2 cuda_visible_devices)
expect_eq "the launcher saw 2 GPUs (CUDA_VISIBLE_DEVICES '$V2')" "$(printf '%s' "$V2" | tr ',' '\n' | grep -c .)" 2
expect_eq "... the ones Slurm gave the job" "$V2" "$(sl scontrol show job -d "$SJ2" | sed -n 's/.*GRES=gpu:a100:2(IDX:\([0-9]*\)-\([0-9]*\)).*/\1,\2/p; s/.*GRES=gpu:a100:2(IDX:\([0-9]*,[0-9]*\)).*/\1/p' | head -n 1)"
run_gg connect g2 -- "$PUB" gpus --json
expect_eq "connect -- gridgpu gpus --json: 2 of the node's 4 GPUs usable" \
	"$(printf '%s' "$OUT" | py 'import json,sys; d=json.load(sys.stdin); print(d["visible"], len(d["gpus"]))' 2>&1)" "2 4"

# --- a 1-GPU session: a whole GPU g2 does not have ---------------------------------
run_gg request --name a --gpus 1 --walltime 30m
VA=$(sfile a cuda_visible_devices)
all=$(printf '%s,%s\n' "$V2" "$VA" | tr ',' '\n' | sort)
[ "$RC" = 0 ] && [ -n "$VA" ] && [ "$(printf '%s\n' "$all" | sort -u | wc -l)" = 3 ] &&
	ok "a 1-GPU session sees another GPU than g2's ($VA; g2 has $V2)" || not_ok "disjoint GPUs: a=$VA g2=$V2"
expect_eq "Slurm: the 3 whole GPUs allocated, no MIG device" "$(gres_used)" "gpu:a100:3(IDX:0-2),gpu:$GG_TB_MIG_PROFILE:0(IDX:N/A)"

# --- request --mig 1g.10gb: exactly one MIG device -----------------------------------
run_gg request --name b --mig "$GG_TB_MIG_PROFILE" --walltime 30m
RB=$RC
SJM=$(slurm_id b)
job=$(sl scontrol show job "$SJM" 2>&1)
[ "$RB" = 0 ] && printf '%s\n' "$job" | grep -q "TresPerNode=gres:gpu:$GG_TB_MIG_PROFILE:1\$" &&
	printf '%s\n' "$job" | grep -q "JobState=RUNNING" &&
	ok "request --mig $GG_TB_MIG_PROFILE: Slurm's record of job $SJM: gres:gpu:$GG_TB_MIG_PROFILE:1, RUNNING" ||
	not_ok "request --mig (exit $RB: $ERR); scontrol show job $SJM: $job"
IB=$(mig_idx "$SJM")
VB=$(sfile b cuda_visible_devices)
case $VB in MIG-*,* | *,MIG-*) VBN=many ;; MIG-?*) VBN=one ;; *) VBN=none ;; esac
expect_eq "the launcher saw one MIG device ('$VB'), the one Slurm gave the job (gres index $IB)" \
	"$VBN $VB" "one $(mig_uuid "$IB")"
run_gg connect b -- "$PUB" gpus --json
expect_eq "connect -- gridgpu gpus --json: 1 device usable, that MIG device of profile $GG_TB_MIG_PROFILE, no whole GPU" \
	"$(printf '%s' "$OUT" | py 'import json,sys; d=json.load(sys.stdin); print(d["visible"], [(m["uuid"], m["profile"]) for g in d["gpus"] for m in g["mig"] if m["visible"]], [g["index"] for g in d["gpus"] if g["visible"]])' 2>&1)" \
	"1 [('$VB', '$GG_TB_MIG_PROFILE')] []"
expect_eq "Slurm: the 3 whole GPUs and 1 MIG device allocated" "$(gres_used)" "gpu:a100:3(IDX:0-2),gpu:$GG_TB_MIG_PROFILE:1(IDX:$IB)"

# --- freeze --session: the image records the session's GPUs, not this machine's ------
# (this machine pretends to have two H100s: a fake NVML, as in t-freeze)
FAKEGPU=$(dirname "$GRIDGPU")/../tests/fakegpu
freeze_on() { # SESSION OUT: freeze --session of a small directory, the client on "H100s"
	"$GRIDGPU" connect "$1" -- "mkdir -p fz && echo hi >fz/f" &&
		env LD_LIBRARY_PATH="$FAKEGPU" GG_FAKE_NVML="$GG_TOP/tests/fakegpu/h100x2.conf" \
			"$GRIDGPU" freeze --session "$1" --path fz -o "$2" 2>"$T_TMP/fz.err"
}
prov_gpus() { "$GRIDGPU" --json inspect "$1" | py 'import json,sys; g=json.load(sys.stdin)["provenance"]["gpus"]; print("none" if g is None else "%s %s %s" % (g["cuda_visible_devices"], g["visible"], " ".join("%s:%s:%s:%s" % (d["index"], d["name"], d["compute_capability"], d["memory_total_mb"]) for d in g["gpus"])))' 2>&1; }
check "freeze --session of the 2-GPU session" freeze_on g2 "$T_TMP/g2.sif"
want=""
for i in $(printf '%s' "$V2" | tr ',' ' '); do want="$want $i:NVIDIA A100-SXM4-40GB:8.0:40960"; done
expect_eq "its image records the session's 2 GPUs (nvidia-smi on the node), not the client's H100s" \
	"$(prov_gpus "$T_TMP/g2.sif")" "$V2 2$want"
run_gg --site tb submit "$T_TMP/g2.sif" --match-dev-gpu --dry-run -- true
printf '%s' "$OUT" | grep -q '("GRIDGPU_MIN_CUDA_CAPABILITY" "8.0")("GRIDGPU_MIN_GPU_MEMORY_MB" "40960")' &&
	ok "submit --match-dev-gpu of that image asks for the session's GPU (8.0, 40960 MiB)" || not_ok "--match-dev-gpu: $OUT $ERR"
# a record on the node that is not nvidia-smi's: a warning, the image made, no GPU in it
check "spoil g2's record of its GPUs on the node" "$GRIDGPU" connect g2 -- \
	'printf "# CUDA_VISIBLE_DEVICES=0\\n0, GPU-1, \\033[2Jevil, 1, 8.0, 1\\n" >"$GRIDGPU_SESSION_DIR/.gridgpu/gpus"'
rm -f "$T_TMP/bad.sif"
freeze_on g2 "$T_TMP/bad.sif"
RCB=$?
[ "$RCB" = 0 ] && [ -s "$T_TMP/bad.sif" ] &&
	grep -qx "gridgpu: warning: the image records no GPUs: the node's record of the session's GPUs is not nvidia-smi's (line 2)" "$T_TMP/fz.err" &&
	! grep -q "evil" "$T_TMP/fz.err" && [ "$(prov_gpus "$T_TMP/bad.sif")" = none ] &&
	ok "a spoiled record on the node: one warning line (nothing of it printed), exit 0, the image made without GPUs" ||
	not_ok "spoiled record: exit $RCB, said: $(cat "$T_TMP/fz.err")"
check "freeze --session of the MIG session" freeze_on b "$T_TMP/b.sif"
expect_eq "a MIG session's image records no GPU (nvidia-smi describes whole GPUs only), not the client's" \
	"$(prov_gpus "$T_TMP/b.sif")" "none"
grep -q "the image records no GPU: the session's is a MIG device ($GG_TB_MIG_PROFILE), which nvidia-smi" "$T_TMP/fz.err" &&
	ok "... and freeze says so" || not_ok "freeze --session b said: $(cat "$T_TMP/fz.err")"

# --- a MIG profile the site lacks: Slurm refuses it, the user is told why --------------
nomig_ended() { case $(state nomig) in failed | finished) return 0 ;; esac; return 1; }
poll 120 nomig_ended
run_gg status nomig
want="reason: *Job submission to LRMS failed; the batch system said: sbatch: error: Batch job submission failed: Requested node configuration is not available (the job asked for a MIG device of profile 7g.80gb: the site may have none of that profile)\$"
[ "$RNOMIG" = 0 ] && [ "$RC" = 6 ] && printf '%s\n' "$OUT" | grep -q "^state: *failed" && printf '%s\n' "$OUT" | grep -q "^$want" &&
	ok "request --mig 7g.80gb: status says failed (exit 6) with Slurm's refusal and the profile" || not_ok "status nomig (exit $RC, request exit $RNOMIG): $OUT"
expect_eq "... Slurm never took it (A-REX recorded no Slurm job id)" "$(slurm_id nomig)" ""

# --- all whole GPUs taken: a request queues (6 MIG devices are free, but a whole-GPU
# request never gets one); --timeout gives up; kill removes it ----------------------
run_gg request --name q --gpus 1 --walltime 30m --timeout 15s
SJQ=$(slurm_id q)
[ "$RC" -ne 0 ] && [ "$RC" -ne 2 ] && [ -n "$SJQ" ] &&
	ok "request --timeout 15s gives up while queued (exit $RC: $(printf '%s' "$ERR" | head -n 1))" ||
	not_ok "request --timeout: exit $RC, slurm id '$SJQ': $ERR"
expect_eq "Slurm holds it PENDING for Resources" "$(sl squeue -h -j "$SJQ" -o '%T %r')" "PENDING Resources"
# A-REX's REST state for it is RUNNING (INLRMS); its info document says
# INLRMS:Q, which gridgpu shows as queued. The info document follows Slurm
# within the infoprovider's period (10 s, longer on a loaded machine).
st_ce() { "$GRIDGPU" --json status "$1" 2>/dev/null | py 'import json,sys; d=json.load(sys.stdin); print(d.get("state",""), d.get("ce_state",""))'; }
q_queued() { [ "$(st_ce q)" = "queued INLRMS:Q" ]; }
poll 120 q_queued
expect_eq "status q: queued, the CE's INLRMS:Q" "$(st_ce q)" "queued INLRMS:Q"
run_gg connect q --timeout 3s
[ "$RC" -eq 4 ] && printf '%s\n' "$ERR" | grep -q '^  q: queued (CE: INLRMS:Q), waited' &&
	ok "connect --timeout showed q as queued with the CE's word (INLRMS:Q) while Slurm held it, and gave up (exit 4)" ||
	not_ok "connect's progress for q (exit $RC): $(printf '%s' "$ERR" | tr '\r' '\n' | grep -v '^$' | tail -n 3)"
expect_eq "list: q queued" "$("$GRIDGPU" --json list --sync 2>/dev/null | py 'import json,sys; print([r["state"] for r in json.load(sys.stdin)["items"] if r.get("name") == "q"])')" "['queued']"
run_gg kill q
expect_eq "kill q" "$RC" 0
poll 60 sh -c "[ -z \"\$(ip netns exec $GG_TB_NS env SLURM_CONF=$GG_TB_SLURM_CONF squeue -h -j $SJQ -t PENDING,RUNNING)\" ]" &&
	ok "kill removed the queued job from Slurm ($(sstate "$SJQ" || true))" || not_ok "queued job $SJQ still $(sstate "$SJQ")"

# --- a queued request becomes ready when a GPU frees ------------------------------
run_gg request --name r --gpus 1 --walltime 30m --no-wait
poll 60 sh -c "[ -n \"\$(sed -n 's/^localid=//p' $GG_TB_CONTROL_DIR/job.$(ce_id r).local 2>/dev/null)\" ]"
SJR=$(slurm_id r)
poll 30 sh -c "[ \"\$(ip netns exec $GG_TB_NS env SLURM_CONF=$GG_TB_SLURM_CONF squeue -h -j $SJR -o %T)\" = PENDING ]" &&
	ok "r is PENDING in Slurm while a and g2 hold the whole GPUs" || not_ok "r: '$(sstate "$SJR")'"
# the CE's info document follows Slurm within its infoprovider period (10 s)
poll 30 state_is r queued && ok "status: r is queued ($(st_ce r))" || not_ok "status r: $(st_ce r)"
SJA=$(slurm_id a)
t0=$(now_ms)
run_gg kill a
if poll 120 state_is r ready; then
	ok "r became ready once a ended ($(($(now_ms) - t0)) ms from kill a)"
else
	not_ok "r did not become ready: $(state r), slurm $(sstate "$SJR")"
fi
VR=$(sfile r cuda_visible_devices)
expect_eq "r got the GPU a had" "$VR" "$VA"

# --- kill ends a running session through Slurm: no process left -------------------
[ -n "$(job_procs "$SJ2")" ] && ok "g2 has processes on the node (SLURM_JOB_ID=$SJ2)" || not_ok "no processes of g2 found"
run_gg kill g2
poll 60 slurm_state_in "$SJ2" CANCELLED COMPLETED && ok "Slurm ended g2's job ($SJ2)" ||
	not_ok "g2's job: $(sl scontrol show job "$SJ2" | grep -o 'JobState=[A-Z]*')"
poll 30 no_job_procs "$SJ2" && ok "no process of g2's job left on the node" || not_ok "left: $(job_procs "$SJ2")"
poll 30 no_job_procs "$SJA" && ok "no process of a's job left on the node" || not_ok "left of a: $(job_procs "$SJA")"

# --- walltime: Slurm ends the session at its limit ----------------------------------
run_gg kill b r
run_gg request --name w --gpus 1 --walltime 1m
SJW=$(slurm_id w)
expect_eq "w ready with a 1-minute walltime (Slurm TimeLimit)" "$RC:$(sl scontrol show job "$SJW" | grep -o 'TimeLimit=[0-9:]*')" "0:TimeLimit=00:01:00"
if poll 150 slurm_state_in "$SJW" TIMEOUT; then ok "Slurm ended w at its walltime (TIMEOUT)"; else not_ok "w: $(sl scontrol show job "$SJW" | grep -o 'JobState=[A-Z]*')"; fi
# the CE's word for it (A-REX: "LRMS error: (271) Job timeout", from Slurm's
# TIMEOUT) becomes the reason; a session's walltime is its planned end
poll 60 state_is w finished && ok "status: w has finished" || not_ok "w: $(state w) after its walltime"
run_gg status w
printf '%s\n' "$OUT" | grep -q '^reason: *ended by walltime: its walltime (1m) ran out and the batch system stopped the job (CE: LRMS error: ([0-9]*) Job timeout)$' && [ "$RC" = 0 ] &&
	ok "status w: ended by walltime, with the CE's words (exit 0)" || not_ok "status w (exit $RC): $(printf '%s' "$OUT" | grep -i 'reason\|state')"
poll 60 no_job_procs "$SJW" && ok "no process of w left after its walltime" || not_ok "left of w: $(job_procs "$SJW")"
# --- a batch job whose GPU minimums the node's GPUs do not meet fails fast -------
# The wrapper asks the driver's nvidia-smi (NVML) about the GPUs Slurm gave the
# job before it unpacks the image or runs the command: 200G > the A100's 40 GB.
"$GRIDGPU" site add batch -q --ce "$GG_TB_CE_URL" --runtime bwrap \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE"
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox"
"$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
(cd "$T_TMP" && "$GRIDGPU" --site batch submit work.sif --name big --gpus 1 --min-gpu-memory 200G \
	--walltime 10m -- sh -c 'echo the command ran') >/dev/null 2>"$T_TMP/big.err" || not_ok "submit big: $(cat "$T_TMP/big.err")"
(cd "$T_TMP" && "$GRIDGPU" --site batch submit work.sif --name fits --gpus 1 --min-gpu-memory 40G \
	--min-capability 8.0 --walltime 10m -- sh -c 'echo the command ran') >/dev/null 2>"$T_TMP/fits.err" || not_ok "submit fits: $(cat "$T_TMP/fits.err")"
# shellcheck disable=SC2016 # $CUDA_VISIBLE_DEVICES is the job's, on the node
(cd "$T_TMP" && "$GRIDGPU" --site batch submit work.sif --name migjob --mig "$GG_TB_MIG_PROFILE" \
	--walltime 10m -- sh -c 'echo "slurm=$SLURM_JOB_GPUS"; echo "cvd=$CUDA_VISIBLE_DEVICES"') >/dev/null 2>"$T_TMP/migjob.err" || not_ok "submit migjob: $(cat "$T_TMP/migjob.err")"
t0=$(now_ms)
big_ended() { case $(state big) in failed | finished) return 0 ;; esac; return 1; }
poll 120 big_ended
T_BIG=$(($(now_ms) - t0))
# the minimums go to the site's GPU RTE ("ENV/GPU" "1" "mem=204800"), which
# refuses a job no GPU of the site meets before Slurm sees it (issue 47)
expect_eq "the site's GPU RTE refused big before Slurm: no Slurm job (failed in ${T_BIG} ms as seen by status)" \
	"$(slurm_id big)" ""
run_gg status big
want="ENV/GPU: no GPU of this site has 204800 MiB or more: it has a100 (cc 8.0, 40960 MiB), $GG_TB_MIG_PROFILE (cc 8.0, 9856 MiB)"
[ "$RC" = 6 ] && printf '%s\n' "$OUT" | grep -q "^state: *failed" && printf '%s\n' "$OUT" | grep -qF "; the batch system said: $want" &&
	ok "status big: failed (exit 6), the reason is the RTE's: the minimum and the site's GPUs" || not_ok "status big (exit $RC): $OUT"
run_gg list --jobs
printf '%s\n' "$OUT" | grep -q '^big .*failed' && ok "list --jobs: big failed" || not_ok "list --jobs: $OUT"
run_gg get --wait --timeout 2m --dir "$T_TMP/big" big
[ "$RC" = 6 ] && ! grep -q "the command ran" "$T_TMP/big/gridgpu-job.out" 2>/dev/null &&
	ok "get big: exit 6, the command never ran" || not_ok "get big (exit $RC): $(cat "$T_TMP/big/gridgpu-job.out" 2>&1)"
run_gg get --wait --timeout 3m --dir "$T_TMP/fits" fits
[ "$RC" = 0 ] && grep -qx "the command ran" "$T_TMP/fits/gridgpu-job.out" &&
	grep -q "^gridgpu-wrapper: the GPUs given ([0-2]) meet the job's minimums" "$T_TMP/fits/gridgpu-job.err" &&
	ok "fits (40G, cc 8.0 on an A100): checked, then the command ran" || not_ok "fits (exit $RC): $(cat "$T_TMP/fits/gridgpu-job.err" 2>&1 | tail -3)"

# --- submit --mig: a batch job with exactly one MIG device ----------------------------
run_gg get --wait --timeout 3m --dir "$T_TMP/migjob" migjob
SJMJ=$(slurm_id migjob)
job=$(sl scontrol show job "$SJMJ" 2>&1)
[ "$RC" = 0 ] && printf '%s\n' "$job" | grep -q "TresPerNode=gres:gpu:$GG_TB_MIG_PROFILE:1\$" &&
	printf '%s\n' "$job" | grep -q "JobState=COMPLETED" &&
	ok "submit --mig $GG_TB_MIG_PROFILE: Slurm ran migjob ($SJMJ) with gres:gpu:$GG_TB_MIG_PROFILE:1, COMPLETED" ||
	not_ok "migjob (get exit $RC: $ERR): $(printf '%s\n' "$job" | grep -o 'JobState=[A-Z]*\|TresPerNode=[^ ]*' | tr '\n' ' ')"
# (an ended job's scontrol record has lost its gres index: the job's
# SLURM_JOB_GPUS is Slurm's word for it)
CM=$(sed -n 's/^cvd=//p' "$T_TMP/migjob/gridgpu-job.out" 2>/dev/null)
IM=$(sed -n 's/^slurm=//p' "$T_TMP/migjob/gridgpu-job.out" 2>/dev/null)
case $CM in MIG-*,* | *,MIG-*) CMN=many ;; MIG-?*) CMN=one ;; *) CMN=none ;; esac
expect_eq "... the command saw one MIG device ('$CM'), the one Slurm gave the job (SLURM_JOB_GPUS=$IM)" \
	"$CMN $CM" "one $(mig_uuid "$IM")"
expect_eq "... of profile $GG_TB_MIG_PROFILE on the node" \
	"$(grep -c "^mig profile=$GG_TB_MIG_PROFILE uuid=$CM " "$GG_TB_NODE_GPUS")" 1

run_gg clean --all
done_testing
