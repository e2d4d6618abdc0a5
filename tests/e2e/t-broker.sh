#!/bin/sh
# Matchmaking across two real test sites with different GPUs (issue 47): the
# test's own site (A100-SXM4-40GB, cc 8.0) and a second one beside it
# (peer_site_up t4: Tesla T4, 15360 MiB, cc 7.5), both declared in their
# profiles. A job needing 24 GB goes to the A100 site even listed second, and
# the T4 site's CE never sees it; sent to the T4 site alone, its GPU runtime
# environment refuses it before Slurm does (the minimums in the job
# description); with the A100 site's node held by another user's Slurm job,
# request --site auto for a session both can hold picks the T4 site; an
# unreachable site is reported and skipped within the timeout; --dry-run
# --json and sites --json validate against their schemas.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ "${GRIDGPU_TESTBED_LRMS:-slurm}" != slurm ] || [ -z "${GG_TB_SLURM_CONF:-}" ]; then
	echo "1..0 # SKIP the test site runs A-REX's fork back end: this one needs Slurm"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (ip netns exec, a second site)"; exit 0; }
if [ "${GG_TB_GPUS:-a100}" != a100 ]; then
	echo "1..0 # SKIP the test's own site must have the A100s (GRIDGPU_TESTBED_GPUS=a100)"
	exit 0
fi
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
SILENT_PID="" BLOCKER=""
on_exit() {
	[ -n "$SILENT_PID" ] && kill "$SILENT_PID" 2>/dev/null
	[ -n "$BLOCKER" ] && sl scancel "$BLOCKER" 2>/dev/null
	"$GRIDGPU" kill s16 >/dev/null 2>&1
	"$GRIDGPU" clean --all -q >/dev/null 2>&1
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
# peer_jobs_with TEXT: the T4 site's CE jobs whose description holds TEXT
peer_jobs_with() { grep -lF -- "$1" "$(peer GG_TB_CONTROL_DIR)"/job.*.description 2>/dev/null | wc -l; }
a100_jobs_with() { grep -lF -- "$1" "$GG_TB_CONTROL_DIR"/job.*.description 2>/dev/null | wc -l; }
ce_id() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | py 'print(d.get("job_id",""))'; }

check "a second test site beside the first, with 16 GB-class T4s" peer_site_up t4
expect_eq "... its node's GPUs and Slurm's gres" \
	"$(peer GG_TB_GPU_MODEL):$(peer GG_TB_GPU_CAPABILITY):$(psl sinfo -h -N -o %G | head -n 1)" "Tesla T4:7.5:gpu:t4:4"

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site add a100: the first site's GPUs declared" "$GRIDGPU" site add a100 -q --ce "$GG_TB_CE_URL" \
	--jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --runtime bwrap \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE" --gpu-model "$GG_TB_GPU_MODEL" \
	--gpu-memory "$GG_TB_GPU_MEMORY_MB" --gpu-capability "$GG_TB_GPU_CAPABILITY" \
	--gpus-per-node "$GG_TB_GPU_COUNT" --mig-profile "$GG_TB_MIG_PROFILE"
# The second site has a CA of its own: its jobs are sent with a token from its
# issuer (the user's proxy is signed by the first site's CA).
peer_token_command "$T_TMP/peer-token"
check "site add t4: the second site's GPUs declared" "$GRIDGPU" site add t4 -q --ce "$(peer GG_TB_CE_URL)" \
	--jump "$(peer GG_TB_JUMP1)" --jump "$(peer GG_TB_JUMP2)" --identity "$(peer GG_TB_SSH_KEY)" \
	--known-hosts "$(peer GG_TB_SSH_KNOWN_HOSTS)" --worker-address 127.0.0.1 --runtime bwrap \
	--gpu-queue "$(peer GG_TB_GPU_QUEUE)" --gpu-rte "$(peer GG_TB_GPU_RTE)" \
	--gpu-model "$(peer GG_TB_GPU_MODEL)" --gpu-memory "$(peer GG_TB_GPU_MEMORY_MB)" \
	--gpu-capability "$(peer GG_TB_GPU_CAPABILITY)" --gpus-per-node "$(peer GG_TB_GPU_COUNT)" \
	--ca-dir "$(peer GG_TB_CA_DIR)" --auth token --token-command "$T_TMP/peer-token"
closed=$(free_port)
"$GRIDGPU" site add closed -q --ce "https://127.0.0.1:$closed/arex" --gpu-rte ENV/GPU

# --- both sites in gridgpu sites ----------------------------------------------------
run_gg --json sites a100 t4
json_valid sites
expect_eq "sites: both reachable, each with its GPUs, memory and capability" \
	"$(printf '%s' "$OUT" | py 'print([(s["site"], s["reachable"], s["gpu_models"], s["gpu_memory_mb"], s["capability"], s["rte_present"]) for s in d["sites"]])')" \
	"[('a100', True, ['NVIDIA A100-SXM4-40GB'], 40960, '8.0', True), ('t4', True, ['Tesla T4'], 15360, '7.5', True)]"

# --- a 24 GB job: the A100 site, listed second ------------------------------------------
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" >/dev/null 2>&1
check "freeze the test sandbox" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
run_gg --json submit "$T_TMP/work.sif" --site t4,a100 --gpus 1 --min-gpu-memory 24G --dry-run -- sh -c true
json_valid dry-run
expect_eq "submit --site t4,a100 --dry-run --json: the match chose a100, t4 dropped for its memory" \
	"$(printf '%s' "$OUT" | py 'm = d["match"]; print(m["chosen"], [(r["site"], r["fits"], r["reason"]) for r in m["ranking"]], d["items"][0]["site"])')" \
	"a100 [('a100', True, None), ('t4', False, 'its GPUs have 15360 MiB, the job needs 24576 MiB')] a100"
# the image's architecture (amd64, frozen here): a site whose nodes are another is
# dropped (armsite: the A100 site's CE declared aarch64); x86_64 is amd64
"$GRIDGPU" site set a100 arch x86_64
"$GRIDGPU" site add armsite -q --ce "$GG_TB_CE_URL" --runtime bwrap --gpu-rte ENV/GPU --arch aarch64
run_gg --json submit "$T_TMP/work.sif" --site armsite,a100 --gpus 1 --dry-run -- sh -c true
json_valid dry-run
expect_eq "submit --site armsite,a100: the amd64 image's match drops the aarch64 site, keeps the x86_64 one" \
	"$(printf '%s' "$OUT" | py 'm = d["match"]; print(m["chosen"], [(r["site"], r["fits"], r["reason"]) for r in m["ranking"]])')" \
	"a100 [('a100', True, None), ('armsite', False, 'its nodes are aarch64, the image is amd64')]"
run_gg -v request --site armsite,a100 --gpus 1 --image "$T_TMP/work.sif" --dry-run
expect_eq "request --image work.sif --site armsite,a100 --dry-run: the session's image matched too" \
	"$RC:$(printf '%s\n' "$ERR" | grep -c '^chose a100: .*(the only site that fits; 1 dropped)$'):$(printf '%s\n' "$ERR$OUT" | grep -c 'armsite.*its nodes are aarch64, the image is amd64')" "0:1:1"
"$GRIDGPU" site remove armsite >/dev/null 2>&1
run_gg submit "$T_TMP/work.sif" --site t4,a100 --name big24 --gpus 1 --min-gpu-memory 24G -- sh -c ": big24$$"
expect_eq "submit --site t4,a100 of a 24 GB job" "$RC:$OUT" "0:big24"
printf '%s\n' "$ERR" | grep -Eq '^chose a100: [0-9]+ free slots, [0-9]+ waiting \(the only site that fits; 1 dropped\)$' &&
	ok "... one line says a100 and why" || not_ok "the choice: $ERR"
expect_eq "... at the A100 site's CE, the minimums in the GPU RTE's arguments" \
	"$(grep -lF "big24$$" "$GG_TB_CONTROL_DIR"/job.*.description | xargs grep -cF '(runtimeenvironment="ENV/GPU" "1" "mem=24576")')" 1
expect_eq "... and the T4 site's CE never saw it" "$(peer_jobs_with "big24$$")" 0
big_slurm() { sed -n 's/^localid=//p' "$GG_TB_CONTROL_DIR/job.$(ce_id big24).local" 2>/dev/null; }
poll 60 test -n "$(big_slurm)"
expect_eq "... Slurm was asked for a node with the A100 feature (the RTE's --constraint)" \
	"$(sl scontrol show job "$(big_slurm)" | sed -n 's/.*\(Features=[^ ]*\).*/\1/p' | head -n 1)" "Features=a100"

# --- sent to the T4 site alone: refused at its CE, before Slurm -----------------------
run_gg submit "$T_TMP/work.sif" --site t4 --name big24t4 --gpus 1 --min-gpu-memory 24G -- sh -c true
expect_eq "submit --site t4 of the 24 GB job (no matchmaking: sent)" "$RC" 0
t4id=$(ce_id big24t4)
t4_failed() { grep -q "ENV/GPU: no GPU of this site has 24576 MiB or more: it has t4 (cc 7.5, 15360 MiB)" "$(peer GG_TB_CONTROL_DIR)/job.$t4id.errors" 2>/dev/null; }
poll 60 t4_failed && ok "... the T4 site's GPU RTE refused it: no GPU meets 24576 MiB" ||
	not_ok "the T4 RTE's refusal: $(tail -5 "$(peer GG_TB_CONTROL_DIR)/job.$t4id.errors" 2>/dev/null)"
expect_eq "... and Slurm never had it (no local id)" \
	"$(sed -n 's/^localid=//p' "$(peer GG_TB_CONTROL_DIR)/job.$t4id.local" 2>/dev/null)" ""
poll 60 sh -c "'$GRIDGPU' status big24t4 >/dev/null 2>&1; [ \$? = 6 ]" &&
	ok "... status says it failed (exit 6)" || not_ok "status big24t4: $("$GRIDGPU" status big24t4 2>&1 | head -5)"

# --- the A100 site full: request --site auto picks the T4 site ---------------------------
BLOCKER=$(sl runuser -u "$GG_TB_JOB_USER2" -- sbatch --parsable -p gpu -n 8 \
	--gres="gpu:a100:3,gpu:$GG_TB_MIG_PROFILE:7" --chdir=/tmp -o /dev/null -J other-user --wrap 'sleep 600')
blocked() { [ "$(sl squeue -h -j "$BLOCKER" -o %T)" = RUNNING ]; }
poll 30 blocked && ok "another user ($GG_TB_JOB_USER2) holds the A100 node: all its GPUs and CPUs (Slurm job $BLOCKER)" ||
	not_ok "the other user's job $BLOCKER: $(sl squeue -h -j "$BLOCKER" 2>&1)"
gpu_free() {
	ce_get 'info?schema=glue2' | Q=$GG_TB_GPU_QUEUE py '
import os
s = d["Domains"]["AdminDomain"]["Services"]["ComputingService"]
sh = s["ComputingShare"]; sh = sh if isinstance(sh, list) else [sh]
print([x for x in sh if x["Name"] == os.environ["Q"]][0]["FreeSlots"])'
}
gpu_full() { [ "$(gpu_free)" = 0 ]; }
poll 60 gpu_full && ok "... the A100 CE's GLUE2 says its GPU queue has 0 free slots" ||
	not_ok "the A100 CE's free slots: $(gpu_free)"
run_gg sites --refresh a100 t4
expect_eq "sites --refresh: asked again" "$RC" 0
run_gg request --site auto --name s16 --gpus 1 --walltime 10m --timeout 5m
expect_eq "request --site auto for a session either site's GPUs can hold" "$RC" 0
printf '%s\n' "$ERR" | grep -Eq '^chose t4: [0-9]+ free slots, 0 waiting \(the best of 2 sites that fit; 1 dropped\)$' &&
	ok "... chose t4: the A100 site has no free slot" || not_ok "the choice: $ERR"
s16=$(ce_id s16)
expect_eq "... the session is at t4, its job at the T4 CE, none at the A100 CE" \
	"$("$GRIDGPU" --json status --no-sync s16 | py 'print(d["site"])'):$(ls "$(peer GG_TB_CONTROL_DIR)/job.$s16.description" 2>/dev/null | wc -l):$(ls "$GG_TB_CONTROL_DIR/job.$s16.description" 2>/dev/null | wc -l)" "t4:1:0"
run_gg connect s16 -- "$(gridgpu_for_others)" gpus --json
expect_eq "... and the GPU it was given is a T4" \
	"$RC:$(printf '%s' "$OUT" | py 'print(sorted({g["name"] for g in d["gpus"] if g["visible"]}), d["visible"])')" "0:['Tesla T4'] 1"
"$GRIDGPU" kill s16 >/dev/null 2>&1
sl scancel "$BLOCKER"
BLOCKER=""

# --- "can use a GPU": submit --gpus 0-1 ------------------------------------------------
# a100cpu: the A100 site's CE without its GPU mapping (a site that offers no GPU)
"$GRIDGPU" site add a100cpu -q --ce "$GG_TB_CE_URL" --runtime bwrap
run_gg --json submit "$T_TMP/work.sif" --site a100cpu,closed --gpus 0-1 --dry-run -- sh -c true
json_valid dry-run
expect_eq "--gpus 0-1 --dry-run: a site without GPUs is eligible, as a CPU job" \
	"$(printf '%s' "$OUT" | py 'm = d["match"]; x = d["items"][0]["description"]; print(m["chosen"], m["gpu"], "ENV/GPU" in x, "(\"GRIDGPU_GPUS\" \"0\")(\"CUDA_VISIBLE_DEVICES\" \"\")" in x)')" \
	"a100cpu False False True"
say_gpus='echo "GRIDGPU_GPUS=$GRIDGPU_GPUS CUDA_VISIBLE_DEVICES=[$CUDA_VISIBLE_DEVICES]"'
run_gg submit "$T_TMP/work.sif" --site t4 --name opt1 --gpus 0-1 -- sh -c "$say_gpus"
expect_eq "submit --site t4 --gpus 0-1: a free GPU slot, a GPU job" \
	"$RC:$(printf '%s\n' "$ERR" | grep -c '^--gpus 0-1: t4 as a GPU job (a free slot in its GPU queue)$')" "0:1"
run_gg submit "$T_TMP/work.sif" --site a100cpu --name opt0 --gpus 0-1 -- sh -c "$say_gpus"
expect_eq "submit --site a100cpu --gpus 0-1: no GPU there, a CPU job" \
	"$RC:$(printf '%s\n' "$ERR" | grep -c '^--gpus 0-1: a100cpu as a CPU job (no site that fits has a free GPU slot)$')" "0:1"
(cd "$T_TMP" && "$GRIDGPU" get --wait --timeout 3m opt1 >/dev/null 2>&1 &&
	"$GRIDGPU" get --wait --timeout 3m opt0 >/dev/null 2>&1)
expect_eq "... the GPU job learns it has one GPU" "$(cat "$T_TMP/opt1/gridgpu-job.out" 2>&1)" \
	"GRIDGPU_GPUS=1 CUDA_VISIBLE_DEVICES=[0]"
expect_eq "... the CPU job learns it has none" "$(cat "$T_TMP/opt0/gridgpu-job.out" 2>&1)" \
	"GRIDGPU_GPUS=0 CUDA_VISIBLE_DEVICES=[]"
expect_fail "request --gpus 0-1: submit's alone, exit 2" 2 "--gpus 0-1: only submit takes it" \
	request --site a100 --gpus 0-1 --dry-run

# --- an unreachable site: reported and skipped within the timeout ----------------------
silent=$(free_port)
python3 -c 'import socket,sys,time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); print("up", flush=True); time.sleep(300)' "$silent" >"$T_TMP/silent.out" &
SILENT_PID=$!
poll 10 grep -q up "$T_TMP/silent.out" || not_ok "the silent server listens"
"$GRIDGPU" site add silent -q --ce "https://127.0.0.1:$silent/arex" --gpu-rte ENV/GPU
t0=$(now_ms)
run_gg --json submit "$T_TMP/work.sif" --site auto --gpus 1 --min-capability 7.5 --dry-run -- sh -c true
took=$(($(now_ms) - t0))
expect_eq "submit --site auto --dry-run with a CE that never answers and one on a closed port" "$RC" 0
json_valid dry-run
expect_eq "... both dropped with their reason" \
	"$(printf '%s' "$OUT" | py 'r = {x["site"]: x for x in d["match"]["ranking"]}; print(r["silent"]["fits"], r["silent"]["reason"].endswith("no answer within 10.0 s"), r["closed"]["fits"], r["closed"]["reason"].startswith("not reachable"), sorted(x["site"] for x in d["match"]["ranking"] if x["fits"]))')" \
	"False True False True ['a100', 't4']"
[ "$took" -lt 13000 ] && ok "... within the 10 s timeout ($took ms)" || not_ok "the match took $took ms"
run_gg --json request --site auto --gpus 1 --dry-run
json_valid dry-run
expect_eq "request --site auto --dry-run --json: the match and the description" \
	"$(printf '%s' "$OUT" | py 'print(d["match"]["chosen"] in ("a100", "t4"), "ENV/GPU" in d["description"])')" "True True"

# --- no site can: nothing sent anywhere -------------------------------------------------
run_gg submit "$T_TMP/work.sif" --site auto --name cc9 --gpus 1 --min-capability 9.0 -- sh -c ": cc9$$"
expect_eq "submit --site auto for capability 9.0: no site can, exit 2" "$RC" 2
expect_eq "... neither CE got a job" "$(a100_jobs_with "cc9$$"):$(peer_jobs_with "cc9$$")" "0:0"
done_testing
