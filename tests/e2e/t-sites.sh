#!/bin/sh
# gridgpu sites against the real test site: the CE's free and total slots as its
# GLUE2 information says them (checked against the CE asked with curl), the GPUs
# the profile declares, then the GPUs a session at the site was really given (the
# site's fake nvidia-smi, recorded by freeze --session), which win over an older
# profile; the age and origin of each fact; the CE's answer kept for a minute;
# a CE on a closed port and one that never answers are rows with their reason,
# within the timeout; --json validates against its schema.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
SILENT_PID=""
on_exit() {
	[ -n "$SILENT_PID" ] && kill "$SILENT_PID" 2>/dev/null
	"$GRIDGPU" kill s1 m1 >/dev/null 2>&1
	"$GRIDGPU" clean --all -q >/dev/null 2>&1
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
site_py() { # SITE EXPR: EXPR of the site's object s in the last --json output
	printf '%s' "$OUT" | py "s=[x for x in d['sites'] if x['site']=='$1'][0]; print($2)"
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
# The profile declares a T4: what an admin wrote once, older than what a session sees.
check "site add with the GPU keys" "$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" \
	--jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE" --gpu-model "Tesla T4" \
	--gpu-memory 16384 --gpu-capability 7.5 --gpus-per-node 4 --mig-profile 1g.10gb --arch x86_64
closed=$(free_port)
"$GRIDGPU" site add closed -q --ce "https://127.0.0.1:$closed/arex"
# A CE that takes the connection and never says a word (a hung server).
silent=$(free_port)
python3 -c 'import socket,sys,time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); print("up", flush=True); time.sleep(300)' "$silent" >"$T_TMP/silent.out" &
SILENT_PID=$!
poll 10 grep -q up "$T_TMP/silent.out" || not_ok "the silent server listens"
"$GRIDGPU" site add silent -q --ce "https://127.0.0.1:$silent/arex"

# --- the table -------------------------------------------------------------------
# The CE's own word, asked with curl: the gpu share's free slots, the total slots,
# the waiting jobs. Asked before and after gridgpu: a job of an earlier test may
# end between the two, and gridgpu's answer is then one or the other.
ce_word() {
	ce_get 'info?schema=glue2' | Q=$GG_TB_GPU_QUEUE py '
import os
s = d["Domains"]["AdminDomain"]["Services"]["ComputingService"]
sh = s["ComputingShare"]; sh = sh if isinstance(sh, list) else [sh]
g = [x for x in sh if x["Name"] == os.environ["Q"]][0]
print("%s/%s %s" % (g["FreeSlots"], s["ComputingManager"]["TotalSlots"], int(s["WaitingJobs"]) + int(s["PreLRMSWaitingJobs"])))'
}
want0=$(ce_word)
t0=$(now_ms)
run_gg sites --timeout 3s
took=$(($(now_ms) - t0))
want1=$(ce_word)
expect_eq "sites: exit 0 with two sites unreachable" "$RC" 0
[ "$took" -ge 2900 ] && [ "$took" -lt 8000 ] &&
	ok "the silent CE is given up at the timeout, the others not held up ($took ms for 3s)" ||
	not_ok "sites took $took ms with --timeout 3s"
printf '%s\n' "$OUT" | grep -Eq '^SITE +REACHABLE +GPU +MEMORY +CC +FREE/TOTAL +WAITING +RTE +LAST SEEN$' &&
	ok "the table's header" || not_ok "header: $OUT"
row=$(printf '%s\n' "$OUT" | grep '^tb ')
row_is() { printf '%s\n' "$row" | grep -Eq "^tb +yes +Tesla T4 +16384 MiB +7\.5 +${1% *} +${1#* } +ENV/GPU +(just now|[0-9]+s ago)$"; }
want=$want0
row_is "$want0" || want=$want1
row_is "$want" &&
	ok "tb's row: reachable, the profile's GPU, the CE's free/total and waiting ($want), the RTE present" ||
	not_ok "tb's row: '$row' (the CE says $want0, then $want1)"
printf '%s\n' "$OUT" | grep -Eq '^closed +no +- +- +- +-/- +- +- +never$' && ok "the closed port's site is a row" || not_ok "closed's row: $OUT"
printf '%s\n' "$OUT" | grep -q "^  closed: not reachable: https://127.0.0.1:$closed/arex/rest: cannot connect" &&
	ok "... with the reason" || not_ok "closed's reason: $OUT"
printf '%s\n' "$OUT" | grep -q "^  silent: not reachable: https://127.0.0.1:$silent/arex: no answer within 3.0 s$" &&
	ok "the silent CE's row says it did not answer within the timeout" || not_ok "silent's reason: $OUT"
printf '%s\n' "$OUT" | grep -Eq '^  tb: CE information (just now|[0-9]+s ago); site profile (just now|[0-9]+s ago)$' &&
	ok "tb's sources, newest first, with their ages" || not_ok "tb's sources: $OUT"

# --- kept a minute; --refresh asks again; --json ------------------------------------
t0=$(now_ms)
run_gg --json sites tb closed silent
took=$(($(now_ms) - t0))
json_valid sites
expect_eq "the second run takes the CEs' answers kept from the first" \
	"$(printf '%s' "$OUT" | py 'print([[x["cached"] for x in s["sources"] if x["origin"] == "ce"][0] for s in d["sites"]])')" \
	"[True, True, True]"
[ "$took" -lt 1000 ] && ok "... without waiting for the silent CE again ($took ms)" || not_ok "kept answers took $took ms"
expect_eq "--json: tb's facts and where they come from" \
	"$(site_py tb 's["reachable"], s["gpu_models"], s["gpus_from"], s["gpu_memory_mb"], s["capability"], s["gpus_per_node"], s["mig_profiles"], s["arch"], s["rte_present"], "%s/%s" % (s["free_slots"], s["total_slots"])')" \
	"True ['Tesla T4'] profile 16384 7.5 4 ['1g.10gb'] x86_64 True ${want% *}"
expect_eq "--json: each source with origin, time and age" \
	"$(site_py tb '[(x["origin"], x["age_seconds"] < 60, x["time"][-1]) for x in s["sources"]]')" \
	"[('ce', True, 'Z'), ('profile', True, 'Z')]"
expect_eq "--json: the unreachable sites" \
	"$(site_py silent 's["reachable"], s["reason"].endswith("no answer within 3.0 s"), s["last_seen"]')" "False True None"
run_gg sites --refresh tb
printf '%s\n' "$OUT" | grep -Eq '^  tb: CE information just now; site profile' && ! printf '%s\n' "$OUT" | grep -q '(kept)' &&
	ok "--refresh asks the CE again" || not_ok "--refresh: $OUT"

# --- what a session at the site saw ---------------------------------------------------
run_gg --site tb request --name s1 --gpus 1 --walltime 10m
expect_eq "a 1-GPU session at tb" "$RC" 0
run_gg freeze -q --session s1 --path /usr/share/common-licenses -o "$T_TMP/s1.sif"
expect_eq "freeze --session reads the session's GPUs" "$RC" 0
run_gg --json sites tb
json_valid sites
expect_eq "the GPUs the session was given (the node's nvidia-smi) win over the older profile" \
	"$(site_py tb 's["gpu_models"], s["gpus_from"], s["gpu_memory_mb"], s["capability"], s["gpus_per_node"]')" \
	"['NVIDIA A100-SXM4-40GB'] session 40960 8.0 4"
expect_eq "... a source of its own, naming the session" \
	"$(site_py tb '[(x["origin"], x.get("session"), [g["name"] for g in x.get("gpus", [])]) for x in s["sources"] if x["origin"] != "ce"]')" \
	"[('session', 's1', ['NVIDIA A100-SXM4-40GB']), ('profile', None, [])]"
run_gg sites tb
printf '%s\n' "$OUT" | grep -Eq '^tb +yes +NVIDIA A100-SXM4-40GB +40960 MiB +8\.0 ' &&
	printf '%s\n' "$OUT" | grep -Eq '^  tb: (.*; )?GPUs of session s1 (just now|[0-9]+s ago); (.*; )?site profile ' &&
	ok "the table shows the session's GPUs and where they come from" || not_ok "after the session: $OUT"

# --- submit --site A,B / auto: where the requirements fit ------------------------------
# small is the same CE, declared with 16 GB T4s: a 24 GB job must not go there,
# even listed first; tb's GPUs are the 40 GB A100s the session saw.
"$GRIDGPU" site add small -q --ce "$GG_TB_CE_URL" --gpu-rte "$GG_TB_GPU_RTE" --runtime bwrap \
	--gpu-model "Tesla T4" --gpu-memory 16384 --gpu-capability 7.5
"$GRIDGPU" site set tb runtime bwrap >/dev/null
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" >/dev/null 2>&1
check "freeze the test sandbox" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
# "nothing sent": no record made (one is written before anything is sent); the
# site's Slurm queue as a whole is no measure (an earlier test's job that A-REX
# hands over late appeared in it once)
nrec() { ls "$XDG_STATE_HOME/gridgpu/records" 2>/dev/null | grep -c '\.json$'; }
n0=$(nrec)
run_gg submit "$T_TMP/work.sif" --site small,tb --gpus 1 --min-gpu-memory 24G --dry-run -- sh -c true
expect_eq "submit --site small,tb --dry-run" "$RC" 0
printf '%s\n' "$OUT" | grep -qx '  1\. tb: [0-9]* free slots, [0-9]* waiting' &&
	printf '%s\n' "$OUT" | grep -qx '  -  small: dropped: its GPUs have 16384 MiB, the job needs 24576 MiB' &&
	ok "--dry-run shows the ranking: tb, and small dropped with the reason" || not_ok "ranking: $OUT"
printf '%s\n' "$ERR" | grep -Eq '^chose tb: [0-9]+ free slots, [0-9]+ waiting \(the only site that fits; 1 dropped\)$' &&
	ok "... one line says which site and why" || not_ok "the choice: $ERR"
printf '%s\n' "$OUT" | grep -q '^# job 1 of 1 → site tb,' && ok "... the job described for tb" || not_ok "described: $OUT"
expect_eq "... and nothing sent" "$(nrec):$("$GRIDGPU" list --jobs 2>&1 | grep -c '^m1 ')" "$n0:0"
run_gg submit "$T_TMP/work.sif" --site small,tb --name m1 --gpus 1 --min-gpu-memory 24G -- sh -c true
expect_eq "submit --site small,tb: a 24 GB job" "$RC:$OUT" "0:m1"
run_gg --json status --no-sync m1
expect_eq "... went to tb, listed second" "$(printf '%s' "$OUT" | py 'print(d["site"])')" tb
run_gg submit "$T_TMP/work.sif" --site auto --gpus 1 --min-capability 9.0 -- sh -c true
expect_eq "submit --site auto for capability 9.0: no site can, exit 2" "$RC" 2
printf '%s\n' "$ERR" | grep -q '  -  tb: dropped: its GPUs.* capability is 8.0, the job needs 9.0' &&
	printf '%s\n' "$ERR" | grep -q '  -  closed: dropped: not reachable' &&
	printf '%s\n' "$ERR" | grep -q 'no site can take the job' &&
	ok "... each site dropped with its reason" || not_ok "auto, none fits: $ERR"
run_gg --json list --jobs
expect_eq "... and nothing sent: m1 is the one job" "$(printf '%s' "$OUT" | py 'print([j["name"] for j in d["items"]])')" "['m1']"
n1=$(nrec) # with m1's
# request --site A,B / auto: the session too goes where it fits
run_gg request --site closed,small --gpus 1 --dry-run
expect_eq "request --site closed,small --dry-run: small, nothing sent" \
	"$RC:$(printf '%s\n' "$ERR" | grep -c '^chose small: '):$(nrec)" "0:1:$n1"
printf '%s\n' "$OUT" | grep -qx '  -  closed: dropped: not reachable.*' &&
	ok "... the ranking shows closed dropped, with the reason" || not_ok "request ranking: $OUT"
"$GRIDGPU" site set -q small mig-profile 1g.10gb
run_gg request --site small,closed --mig 3g.40gb --dry-run
expect_eq "request --site small,closed for a MIG profile neither offers: exit 2, nothing sent" \
	"$RC:$(printf '%s\n' "$ERR" | grep -c 'no site can take the session'):$(nrec)" "2:1:$n1"
expect_fail "--site with a mistyped name in the list: exit 2" 2 "--site 'smal': no such site; did you mean 'small'?" \
	submit "$T_TMP/work.sif" --site smal,tb -- true

# --- bad input ----------------------------------------------------------------------------
expect_fail "a site that is not one of yours: exit 5" 5 "no site 'nope'" sites nope
expect_fail "--timeout without a unit: exit 2" 2 "--timeout" sites --timeout 3
expect_fail "--timeout 0: exit 2" 2 "--timeout '0s': expected 1s to 10m" sites --timeout 0s
: >"$T_TMP/none.conf"
run_gg --config "$T_TMP/none.conf" sites
expect_eq "no site profile yet: exit 2, saying how to add one" "$RC:$ERR" "2:gridgpu: sites: no sites: add one with 'gridgpu site add'"
done_testing
