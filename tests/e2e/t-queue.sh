#!/bin/sh
# Queued work in the user's words, on the Slurm test site (issue 53): with the
# node's 3 whole GPUs taken by a session, a 1-GPU request queues; its progress
# never goes back to an earlier state (A-REX's REST says RUNNING for a job
# Slurm still holds, its info document INLRMS:Q: shown as queued, never
# "starting" then "queued") and says why, as status and status --json give Slurm's pending
# reason (Resources) in words, read with squeue on the site's login node (the
# last jump host, a real Slurm login node), and its position in line, as
# list --sync does (its code) and list --sync --json (in full); a site
# whose last jump host has no squeue, or cannot be reached, shows the CE's
# state as before, without an error.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ "${GRIDGPU_TESTBED_LRMS:-slurm}" != slurm ] || [ -z "${GG_TB_SLURM_CONF:-}" ]; then
	echo "1..0 # SKIP the test site runs A-REX's fork back end (GRIDGPU_TESTBED_LRMS=fork): this one needs the default, Slurm"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (ip netns exec)"; exit 0; }
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"

py() { python3 -c "$@"; }
ce_id() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | py 'import json,sys; print(json.load(sys.stdin).get("job_id",""))'; }
slurm_id() { sed -n 's/^localid=//p' "$GG_TB_CONTROL_DIR/job.$(ce_id "$1").local" 2>/dev/null; }
jstatus() { "$GRIDGPU" --json status "$1" 2>/dev/null | py 'import json,sys; d=json.load(sys.stdin); print(d.get("state",""), "|", d.get("queue_reason",""))'; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE" --connect-deadline 10m

# --- the node full: a session holds the 3 whole GPUs ---------------------------
run_gg request --name full --gpus 3 --walltime 20m
expect_eq "request --gpus 3: ready, the node's whole GPUs taken" "$RC" 0

# --- a 1-GPU request queues: its progress only moves forward -------------------
# (before: "starting (CE: RUNNING)" from the REST list, then "queued (CE:
# INLRMS:Q)" once the info document said Slurm holds it)
run_gg request --name q --gpus 1 --walltime 20m --timeout 40s
SJQ=$(slurm_id q)
[ "$RC" -ne 0 ] && [ -n "$SJQ" ] && ok "request q gave up while queued (exit $RC), Slurm job $SJQ" ||
	not_ok "request q: exit $RC, slurm id '$SJQ': $ERR"
expect_eq "Slurm holds q PENDING for Resources" "$(sl squeue -h -j "$SJQ" -o '%T %r')" "PENDING Resources"
printf '%s\n' "$ERR" | grep '^  q: ' >"$T_TMP/progress"
rank() { case $1 in requested) echo 0 ;; queued) echo 1 ;; starting) echo 2 ;; ready) echo 3 ;; *) echo 9 ;; esac; }
back=$(sed 's/^  q: \([a-z]*\).*/\1/' "$T_TMP/progress" | {
	hi=0
	while read -r s; do
		r=$(rank "$s")
		[ "$r" -lt "$hi" ] && { echo "$s after a later state"; break; }
		[ "$r" -gt "$hi" ] && hi=$r
	done
})
[ -s "$T_TMP/progress" ] && [ -z "$back" ] &&
	ok "request's progress never went back ($(sed 's/^  q: \([a-z]*\) .*(CE: \([^)]*\)).*/\1 \2/' "$T_TMP/progress" | uniq | tr '\n' ';'))" ||
	not_ok "request's progress went back ($back): $(cat "$T_TMP/progress")"
grep -q '^  q: queued' "$T_TMP/progress" && ok "... and it said queued" || not_ok "never queued: $(cat "$T_TMP/progress")"
grep -q '^  q: queued (CE: INLRMS:Q), waited [0-9ms]*: waiting for free GPUs (Slurm: Resources)$' "$T_TMP/progress" &&
	ok "... and why, from Slurm: $(grep -m1 'Slurm: ' "$T_TMP/progress")" || not_ok "the wait never said why: $(cat "$T_TMP/progress")"

# --- status: Slurm's reason, in words, with its code ---------------------------
has_reason() { jstatus q | grep -q '^queued | waiting for free GPUs (Slurm: Resources)'; }
poll 60 has_reason
run_gg status q
want='^waiting: *waiting for free GPUs (Slurm: Resources), 1st in line; it asks gres[:/]gpu:a100:1'
[ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -q '^state: *queued' && printf '%s\n' "$OUT" | grep -q "$want" &&
	ok "status q: $(printf '%s\n' "$OUT" | grep '^waiting:')" || not_ok "status q (exit $RC): $OUT"
run_gg --json status q
expect_eq "status --json q: queue_reason" \
	"$(printf '%s' "$OUT" | py 'import json,sys; r=json.load(sys.stdin)["queue_reason"]; print(r.split(";")[0])')" \
	"waiting for free GPUs (Slurm: Resources), 1st in line"
json_valid status
run_gg list --sync
printf '%s\n' "$OUT" | grep -q '^q  *tb  *session  *queued (Slurm: Resources) ' &&
	ok "list --sync: q $(printf '%s\n' "$OUT" | sed -n 's/^q  *tb  *session  *\(queued ([^)]*)\).*/\1/p')" ||
	not_ok "list --sync (exit $RC): $OUT"
run_gg --json list --sync
expect_eq "list --sync --json: q's queue_reason" \
	"$(printf '%s' "$OUT" | py 'import json,sys; print([r.get("queue_reason","").split(",")[0] for r in json.load(sys.stdin)["items"] if r["name"] == "q"])')" \
	"['waiting for free GPUs (Slurm: Resources)']"
json_valid list

# a second queued request: behind q, 2nd in line (same priority: Slurm takes the
# older first; q's reason stays Resources, r's is Priority or Resources)
run_gg request --name r --gpus 1 --walltime 20m --no-wait
r_reason() { jstatus r | grep -q '^queued | .*(Slurm: [A-Za-z]*)'; }
poll 60 r_reason
jstatus r | grep -q '(Slurm: \(Priority\|Resources\))' && ok "status r: $(jstatus r)" || not_ok "status r: $(jstatus r)"

# --- a site whose last jump host is no Slurm login node: the CE's state alone --
# jump1 alone: its logins do not see the site's Slurm (no squeue answers)
"$GRIDGPU" site add nologin -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE"
run_gg --site nologin request --name n --gpus 1 --walltime 20m --no-wait
n_queued() { jstatus n | grep -q '^queued |'; }
poll 60 n_queued
run_gg status n
[ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -q '^state: *queued' && ! printf '%s\n' "$OUT" | grep -q '^waiting:' &&
	ok "status n (login host without Slurm): queued, no reason, no error" || not_ok "status n (exit $RC): $OUT $ERR"

# --- a login host that cannot be reached: the CE's state, no error, no wait -----
"$GRIDGPU" site add down -q --ce "$GG_TB_CE_URL" --jump "${GG_TB_JUMP1%%@*}@127.0.0.1:$(free_port)" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE"
run_gg --site down request --name d --gpus 1 --walltime 20m --no-wait
d_queued() { jstatus d | grep -q '^queued |'; }
poll 60 d_queued
t0=$(now_ms)
run_gg status d
ms=$(($(now_ms) - t0))
[ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -q '^state: *queued' && ! printf '%s\n' "$OUT" | grep -q '^waiting:' &&
	[ -z "$ERR" ] && ok "status d (login host unreachable): queued, nothing more, no error (${ms} ms)" ||
	not_ok "status d (exit $RC, ${ms} ms): $OUT $ERR"

# --- the info documents remembered (lib/ce/arcinfo.c): q queued there, as of a
# run of A-REX's infoprovider; once the GPUs are free and Slurm starts q, the
# next run's documents are asked (the remembered one does not hold it queued).
# The file keeps the last run's answers for what was asked since: a sync asks
# them all.
run_gg list --sync
mem=$(ls "$T_TMP"/home/.local/state/gridgpu/ce-info-*.json 2>/dev/null | head -n 1)
expect_eq "the CE's info documents remembered: 0600, of a run, q queued with its Slurm id" \
	"$(py 'import json,os,re,sys
d=json.load(open(sys.argv[1])); j=d["jobs"].get(sys.argv[2], [0, "", ""])
print(oct(os.stat(sys.argv[1]).st_mode & 0o777), bool(re.match(r"\d{4}-\d\d-\d\dT", d.get("time", ""))),
      j[0] == 2, j[2].split("\n")[0] == sys.argv[3])' "${mem:-/nonexistent}" "$(ce_id q)" "$SJQ" 2>&1)" \
	"0o600 True True True"
run_gg kill full
q_started() { jstatus q | grep -Eq '^(starting|ready) '; }
poll 120 q_started && ok "q starts once the GPUs are free: $(jstatus q)" || not_ok "q still: $(jstatus q)"

run_gg kill q r n d
expect_eq "kill q r n d" "$RC" 0
done_testing
