#!/bin/sh
# What the work used (issue 51 part 4): a session on a whole A100 (40 GB class)
# whose GPU the test scripts to hold 3 GiB at 7% busy (the node's NVML, as
# nvidia-smi reports it). The launcher samples it: status shows the peak of
# the GPU's total and the busy fraction, CPU and memory, and suggests the
# smallest MIG slice of the site that holds the peak with a margin (the test
# site offers 1g.10gb); freeze --session records the use in the image's
# provenance; request --right-size of that image asks Slurm for that slice,
# and an image without a record of GPU use is refused.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
cd "$T_TMP" || exit 1
LOAD=${GG_TB_NODE_GPU_LOAD:-}
if [ -z "$LOAD" ] || [ -z "${GG_TB_GPU_RTE:-}" ] || [ "${GG_TB_GPUS:-}" != a100 ]; then
	ok "# SKIP the test site has no scripted A100 GPUs (GRIDGPU_TESTBED_GPUS=a100, Slurm)"
	done_testing
	exit 0
fi
sampled() { [ "$(sfield "$1" usage.gpu_samples)" -ge "$2" ] 2>/dev/null; }
session_file() { echo "$GG_TB_SESSION_DIR/$("$GRIDGPU" --json status "$1" --no-sync | jf job_id)/gridgpu-session.json"; }
t_cleanup_usage() { : >"$LOAD"; }
trap 't_cleanup_usage; t_cleanup' EXIT

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile: GPU RTE, its MIG slices ($GG_TB_MIG_PROFILE), samples every 1 s" \
	"$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap --gpu-rte "$GG_TB_GPU_RTE" --gpu-memory "$GG_TB_GPU_MEMORY_MB" \
	--mig-profile "$GG_TB_MIG_PROFILE" --usage-interval 1s
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs sh cat timeout >/dev/null 2>&1

# every whole GPU of the node holds 3 GiB at 7% busy from the start, whichever
# the session gets
for i in $(seq 0 $((GG_TB_GPU_COUNT - 1))); do echo "$i 7 3072"; done >"$LOAD"
run_gg request --name ua --image rootfs --gpus 1 --walltime 30m
expect_eq "request --gpus 1 --image rootfs: ready" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
poll_ce 90 sampled ua 3 && ok "ua: the node sampled its GPU ($(sfield ua usage.gpu_samples) samples)" ||
	not_ok "ua: no GPU samples: $("$GRIDGPU" --json status ua 2>&1 | head -c 400)"
run_gg connect ua -- 'timeout 20 sh -c "while :; do :; done"; true'
expect_eq "ua: a login works the CPU" "$RC" 0
poll_ce 30 sh -c "[ \"\$(\"$GRIDGPU\" --json status ua | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"usage\"][\"cpu_seconds\"])')\" -ge 1 ]" &&
	ok "ua: the session's CPU time is counted" || not_ok "ua: cpu_seconds $(sfield ua usage.cpu_seconds)"

run_gg status ua
printf '%s\n' "$OUT" | grep -q "^GPU use:     peak 3.0 GiB of 40 GiB, busy 7% (at most 7%)$" &&
	ok "status: peak GPU memory of the GPU's total, the busy fraction" || not_ok "status ua: $OUT"
printf '%s\n' "$OUT" | grep -q "^CPU use:     .* of CPU time, memory peak .*B$" &&
	ok "status: CPU time and memory peak" || not_ok "status ua: $OUT"
printf '%s\n' "$OUT" | grep -q "^right size:  peak 3.0 GiB, busy 7%: --mig $GG_TB_MIG_PROFILE would do$" &&
	ok "status: the suggestion is the site's 10 GB MIG slice ($GG_TB_MIG_PROFILE)" || not_ok "status ua: $OUT"
run_gg --json status ua
json_valid status
expect_eq "status --json: usage and suggested_mig" \
	"$(printf '%s' "$OUT" | jf usage.gpu_mem_peak_mib) $(printf '%s' "$OUT" | jf usage.gpu_mem_total_mib) $(printf '%s' "$OUT" | jf usage.gpu_busy_pct) $(printf '%s' "$OUT" | jf suggested_mig)" \
	"3072 40960 7 $GG_TB_MIG_PROFILE"
SF=$(session_file ua)
USAGE_FILE=$(dirname "$SF")/gridgpu-usage
[ -f "$USAGE_FILE" ] && [ ! -e "$(dirname "$SF")/.gridgpu-usage.tmp" ] && grep -q "^gpu_mem_peak_mib 3072$" "$USAGE_FILE" &&
	[ "$(wc -l <"$USAGE_FILE")" -le 20 ] &&
	ok "the job's directory: gridgpu-usage, peaks and sums (no log, no temp file left)" ||
	not_ok "usage file: $(cat "$USAGE_FILE" 2>&1 | tr '\n' ' ')"

# --- freeze --session: the image's provenance records it ---
run_gg freeze --session ua -o ua.sif
expect_eq "freeze --session ua" "$RC" 0
run_gg inspect --json ua.sif
expect_eq "the image's provenance: usage (peak MiB, of MiB, busy %)" \
	"$(printf '%s' "$OUT" | jf provenance.usage.gpu_mem_peak_mib) $(printf '%s' "$OUT" | jf provenance.usage.gpu_mem_total_mib) $(printf '%s' "$OUT" | jf provenance.usage.gpu_busy_pct)" \
	"3072 40960 7"
json_valid inspect
run_gg inspect ua.sif
printf '%s\n' "$OUT" | grep -q "^  used:       GPU peak 3.0 GiB of 40 GiB, busy 7%; CPU .*, memory peak .*B$" &&
	ok "inspect shows the use the image records" || not_ok "inspect ua.sif: $OUT"

# --- request --right-size: Slurm is asked for the slice ---
run_gg request --name ub --image ua.sif --gpus 2 --right-size --walltime 30m --no-wait
expect_eq "request --right-size --gpus 2 (the suggestion instead)" "$RC" 0
printf '%s\n' "$ERR" | grep -q "peak 3.0 GiB, busy 7%: --mig $GG_TB_MIG_PROFILE would do (--right-size: taken)" &&
	ok "request says the line it took" || not_ok "request stderr: $ERR"
expect_eq "ub's record asks for MIG $GG_TB_MIG_PROFILE, no whole GPU" "$(sfield ub mig)|$(sfield ub gpus)" "$GG_TB_MIG_PROFILE|"
slurm_id() { _b=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("batch_job_id", ""))' "$(session_file ub)" 2>/dev/null) && [ -n "$_b" ]; }
poll_ce 120 slurm_id && ok "ub: its Slurm job ($_b)" || not_ok "ub: no Slurm job: $(sfield ub state)"
job=$(sl scontrol show job "$_b" 2>&1)
printf '%s\n' "$job" | grep -q "TresPerNode=gres:gpu:$GG_TB_MIG_PROFILE:1\$" &&
	ok "Slurm's record of ub: gres:gpu:$GG_TB_MIG_PROFILE:1 (the slice, not 2 GPUs)" || not_ok "scontrol show job $_b: $job"

# --- submit: the line with --match-dev-gpu, the slice with --right-size ---
run_gg submit ua.sif --right-size --match-dev-gpu --dry-run -- true
expect_eq "submit --right-size --match-dev-gpu --dry-run" "$RC" 0
printf '%s\n' "$ERR" | grep -q "peak 3.0 GiB, busy 7%: --mig $GG_TB_MIG_PROFILE would do (--right-size: taken)" &&
	printf '%s\n' "$OUT" | grep -q "\"$GG_TB_MIG_PROFILE\"" && ! printf '%s\n' "$OUT" | grep -q "gpu:a100" &&
	ok "submit --right-size: the job asks the site's GPU RTE for $GG_TB_MIG_PROFILE" ||
	not_ok "submit --right-size --dry-run: $ERR / $(printf '%s' "$OUT" | grep -i -e gpu -e mig | head -5)"

# --- an image without a record of GPU use: refused, nothing sent ---
run_gg list --json
before=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))' 2>/dev/null)
expect_fail "request --right-size of an image without a record of its use: exit 5" 5 "--right-size" \
	request --name uc --image rootfs --right-size --walltime 30m
run_gg list --json
expect_eq "... no record made" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))' 2>/dev/null)" "$before"

run_gg kill ua ub
expect_eq "kill ua ub" "$RC" 0
done_testing
