#!/bin/sh
# 50 gridgpu processes at once on one store, against the real test site: 20
# requests, 15 list --sync (some --json), 10 kills of sessions being requested
# at that very moment, 5 cleans. Afterwards the store must be exactly what the
# processes' own answers say: every record file whole JSON with its required
# fields, one record per request that succeeded and was not cleaned, none for
# one that failed, a kill that said "killed" is not undone, `list --json`
# parses, the SSH configuration has one Host block per live session and nothing
# else, and no job of this run is left on the CE without a record.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
PY=/usr/bin/python3
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
REC=$XDG_STATE_HOME/gridgpu/records
SSHD=$XDG_CONFIG_HOME/gridgpu/ssh
TAG=c$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
NREQ=20 NLIST=15 NKILL=10 NCLEAN=5

on_exit() {
	# shellcheck disable=SC2046
	ce_forget $(ce_jobs_with "\"$TAG")
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1
# One session before the storm, so that list --sync and clean have work from the start.
check "a first session" "$GRIDGPU" request --name "${TAG}s00" --walltime 10m --connect-deadline 30s --no-wait

# ---- the storm ------------------------------------------------------------------------------
P=$T_TMP/p
mkdir -p "$P"
# spawn ID ARGS...: gridgpu in the background; its out, err and exit code under $P/ID.
spawn() {
	_id=$1
	shift
	("$GRIDGPU" "$@" >"$P/$_id.out" 2>"$P/$_id.err"; echo $? >"$P/$_id.rc") &
}
name() { printf '%ss%02d' "$TAG" "$1"; }
t0=$(date +%s)
i=1
while [ $i -le $NREQ ]; do
	spawn "request.$i" request --name "$(name $i)" --walltime 10m --connect-deadline 30s --no-wait
	# interleave the others between the requests so they all overlap
	[ $i -le $NKILL ] && spawn "kill.$i" kill "$(name $i)"
	[ $i -le $NLIST ] && if [ $((i % 3)) = 0 ]; then spawn "list.$i" --json list --sync; else spawn "list.$i" list --sync; fi
	[ $i -le $NCLEAN ] && spawn "clean.$i" --json clean
	i=$((i + 1))
done
wait
t1=$(date +%s)
nproc=$(ls "$P" | grep -c '\.rc$')
expect_eq "$nproc gridgpu processes ran at once and all ended ($((t1 - t0)) s)" "$nproc" $((NREQ + NLIST + NKILL + NCLEAN))

# ---- their answers --------------------------------------------------------------------------
crashed=""
for f in "$P"/*.rc; do
	rc=$(cat "$f")
	[ "$rc" -ge 128 ] && crashed="$crashed $(basename "$f" .rc):$rc"
done
expect_eq "no process died of a signal (crash, abort)" "$crashed" ""
# kills: 0 ("killed NAME") or 5 (the record did not exist yet); never another code
killed="" kill_bad=""
i=1
while [ $i -le $NKILL ]; do
	rc=$(cat "$P/kill.$i.rc")
	case $rc in
	0) grep -q "killed $(name $i)\$" "$P/kill.$i.err" && killed="$killed $(name $i)" ;;
	5) grep -q "no such session or job" "$P/kill.$i.err" || kill_bad="$kill_bad $i:5?" ;;
	*) kill_bad="$kill_bad $i:$rc($(tail -1 "$P/kill.$i.err"))" ;;
	esac
	i=$((i + 1))
done
echo "# kills that said killed:$killed"
expect_eq "every kill either killed its session or found none yet (exit 0 or 5)" "$kill_bad" ""
# requests: exit 0 and the name on stdout; or, for a session killed meanwhile,
# a one-line error
req_ok="" req_bad=""
i=1
while [ $i -le $NREQ ]; do
	if [ "$(cat "$P/request.$i.rc")" = 0 ] && [ "$(cat "$P/request.$i.out")" = "$(name $i)" ]; then
		req_ok="$req_ok $(name $i)"
	else
		echo "# request $(name $i): exit $(cat "$P/request.$i.rc"): $(tail -1 "$P/request.$i.err")"
		case " $killed " in
		*" $(name $i) "*) grep -c '^gridgpu: ' "$P/request.$i.err" | grep -qx 1 || req_bad="$req_bad $(name $i)" ;;
		*) req_bad="$req_bad $(name $i)" ;;
		esac
	fi
	i=$((i + 1))
done
echo "# requests that succeeded:$req_ok"
expect_eq "every request succeeded, or failed in one line because it was killed meanwhile" "$req_bad" ""
# list --sync: 0; the --json ones parse
list_bad=""
i=1
while [ $i -le $NLIST ]; do
	rc=$(cat "$P/list.$i.rc")
	[ "$rc" = 0 ] || list_bad="$list_bad $i:$rc($(tail -1 "$P/list.$i.err"))"
	if [ $((i % 3)) = 0 ] && ! "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$P/list.$i.out" 2>/dev/null; then
		list_bad="$list_bad $i:json"
	fi
	if grep -q "unreadable record" "$P/list.$i.err"; then list_bad="$list_bad $i:saw-partial-record"; fi
	i=$((i + 1))
done
expect_eq "every list --sync exit 0, its --json parses, it never saw a half-written record" "$list_bad" ""
# cleans: 0, and what they say they cleaned
cleaned="" clean_bad=""
i=1
while [ $i -le $NCLEAN ]; do
	rc=$(cat "$P/clean.$i.rc")
	[ "$rc" = 0 ] || clean_bad="$clean_bad $i:$rc($(tail -1 "$P/clean.$i.err"))"
	cleaned="$cleaned $("$PY" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["cleaned"]))' "$P/clean.$i.out" 2>/dev/null)"
	[ "$i" = 1 ] && json_valid clean "$P/clean.$i.out"
	i=$((i + 1))
done
echo "# cleaned:$cleaned"
expect_eq "every clean exit 0" "$clean_bad" ""

# ---- the store ------------------------------------------------------------------------------
store_check() { "$PY" "$GG_TOP/tests/e2e/store-check.py" "$REC" "$SSHD" "$@"; }
# the first session, the successful and the killed requests, minus what clean removed
if out=$(store_check "${TAG}s00$req_ok" "$cleaned" "$killed"); then
	ok "store consistent: $(ls "$REC" | grep -c '\.json$') records, each whole, one per successful request not cleaned"
else
	not_ok "store consistent ($out)"
	# what each process said about the names in question, to find the culprit
	for n in $(printf '%s' "$out" | grep -o "${TAG}s[0-9][0-9]" | sort -u); do
		grep -H -- "$n" "$P"/*.out "$P"/*.err 2>/dev/null | sed 's/^/    # /' | head -20
	done
fi
# A kill that said "killed" is final: a request finishing after it must not
# bring the session back.
undone=""
for n in $killed; do
	[ -f "$REC/$n.json" ] || continue
	s=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$REC/$n.json")
	[ "$s" = killed ] || undone="$undone $n:$s"
done
expect_eq "no session that 'kill' reported killed came back to life" "$undone" ""
# The harm a lost kill does: a session the user killed keeps its node (checked
# now, well before the sessions' 30 s connect deadline ends them anyway).
# A job the CE is still handing to the batch system (SUBMITTING: many seconds
# when the machine is loaded) acts on a kill only once that is done; until then
# the kill is on record as the CE's cancel mark, and such a job counts as
# killed, pending. A job in those states without the mark is a lost kill.
killed_alive() {
	alive="" pending=""
	for n in $killed; do
		for j in $(ce_jobs_with "\"$n\""); do
			st=$(ce_state "$j")
			case $st in
			GONE | KILLED | KILLING | FINISHED | FINISHING | FAILED) ;;
			ACCEPTING | ACCEPTED | PREPARING | PREPARED | SUBMITTING)
				if [ -e "$GG_TB_CONTROL_DIR/accepting/job.$j.cancel" ]; then
					pending="$pending $n:$st"
				else
					alive="$alive $n:$st"
				fi
				;;
			*) alive="$alive $n:$st" ;;
			esac
		done
	done
	[ -z "$alive" ]
}
poll 12 killed_alive
expect_eq "no session that 'kill' reported killed is still running on the CE (kills pending on the CE:${pending:- none})" "$alive" ""
# and the pending ones end once the CE has handed them over
killed_ended() { killed_alive && [ -z "$pending" ]; }
poll 120 killed_ended
expect_eq "every kill pending on the CE ended its job" "$alive$pending" ""
run_gg --json list
echo "$OUT" >"$T_TMP/list.json"
json_valid list "$T_TMP/list.json"
n_list=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$T_TMP/list.json" 2>/dev/null)
expect_eq "list --json parses and lists every record" "$n_list" "$(ls "$REC" | grep -c '\.json$')"
run_gg list
expect_eq "list (from the cache) shows the same number of rows" "$(printf '%s\n' "$OUT" | tail -n +2 | grep -c .)" "$n_list"

# ---- a second storm: kills and cleans of what the first one made ----------------------------------
# 10 kills (s11-s20), 10 cleans, 10 list --sync, 10 status (s01-s10, some being
# cleaned meanwhile), 10 new requests (s21-s30): 50 at once again.
before=$(ls "$REC" | sed -n 's/\.json$//p' | tr '\n' ' ')
P=$T_TMP/p2
mkdir -p "$P"
i=1
while [ $i -le 10 ]; do
	spawn "request.$i" request --name "$(name $((20 + i)))" --walltime 10m --connect-deadline 30s --no-wait
	spawn "kill.$i" kill "$(name $((10 + i)))"
	spawn "clean.$i" --json clean
	spawn "list.$i" list --sync
	spawn "status.$i" --json status "$(name $i)"
	i=$((i + 1))
done
wait
nproc=$(ls "$P" | grep -c '\.rc$')
expect_eq "second storm: $nproc processes ended" "$nproc" 50
bad="" new_ok="" cleaned=""
for f in "$P"/*.rc; do
	id=$(basename "$f" .rc) rc=$(cat "$f")
	case $id:$rc in
	request.*:0 | kill.*:0 | kill.*:5 | clean.*:0 | list.*:0 | status.*:0 | status.*:5 | status.*:6) ;;
	*) bad="$bad $id:$rc($(tail -1 "$P/$id.err"))" ;;
	esac
	case $id:$rc in request.*:0) new_ok="$new_ok $(cat "$P/$id.out")" ;; esac
	case $id in clean.*) cleaned="$cleaned $("$PY" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["cleaned"]))' "$P/$id.out" 2>/dev/null)" ;; esac
done
echo "# cleaned:$cleaned"
expect_eq "second storm: every process answered as documented (0, or 5 for a name cleaned meanwhile)" "$bad" ""
dups=$(printf '%s\n' $cleaned | sort | uniq -d | tr '\n' ' ')
expect_eq "second storm: no record was cleaned twice" "$dups" ""
if out=$(store_check "$before$new_ok" "$cleaned" ""); then
	ok "second storm: store consistent ($(ls "$REC" | grep -c '\.json$') records = before + new requests - cleaned)"
else
	not_ok "second storm: store consistent ($out)"
fi
run_gg --json list
printf '%s' "$OUT" | "$PY" -c 'import json,sys; json.load(sys.stdin)' && ok "second storm: list --json parses" ||
	not_ok "second storm: list --json parses"

# ---- the SSH configuration: one block per live session ------------------------------------------
# Bring the sessions to ready (their launchers publish within seconds).
settled() {
	"$GRIDGPU" list --sync >"$T_TMP/settle" 2>/dev/null
	[ "$(grep -c ' ready ' "$T_TMP/settle")" -ge 5 ] || ! grep -Eq ' (queued|starting) ' "$T_TMP/settle"
}
poll 40 settled
"$GRIDGPU" list --sync >/dev/null 2>&1
ssh_check() {
	"$PY" - "$REC" "$SSHD" <<'EOF'
import json, os, sys
rec, sshd = sys.argv[1:]
bad = []
hosts = []
with open(os.path.join(sshd, "config")) as f:
    for line in f:
        if line.startswith("Host "):
            hosts.append(line.split()[1])
sessions = [h for h in hosts if not h.startswith("gridgpu-hop.")]
if len(sessions) != len(set(sessions)):
    bad.append("duplicate Host blocks")
live = set()
aliases = set()
for n in os.listdir(rec):
    if n.endswith(".json"):
        r = json.load(open(os.path.join(rec, n)))
        if r["state"] == "ready" and r.get("host_key"):
            live.add(r["name"])
            aliases.add("gridgpu-" + r["uid"])
if set(sessions) != live:
    bad.append("Host blocks %s, ready sessions %s" % (sorted(sessions), sorted(live)))
pinned = set()
with open(os.path.join(sshd, "known_hosts")) as f:
    for line in f:
        if line.strip():
            pinned.add(line.split()[0])
if not aliases <= pinned:
    bad.append("host keys not pinned for %s" % sorted(aliases - pinned))
print("%d live" % len(live) if not bad else "; ".join(bad))
sys.exit(1 if bad else 0)
EOF
}
if out=$(ssh_check); then ok "ssh config: one Host block per ready session, each host key pinned ($out)"; else
	not_ok "ssh config consistent ($out)"
fi
g_bad=""
for h in $(grep '^Host ' "$SSHD/config" | awk '{print $2}'); do
	ssh -G -F "$SSHD/config" "$h" >/dev/null 2>&1 || g_bad="$g_bad $h"
done
expect_eq "ssh -G parses every block" "$g_bad" ""

# ---- the CE ---------------------------------------------------------------------------------
# Every job of this run on the CE belongs to a record, or was cleaned/killed.
# A job killed while A-REX was still taking it in keeps its early state until
# A-REX's next pass acts on the kill: wait (bounded) until it has moved on. A
# job nobody killed moves on too, to QUEUING or RUNNING, and is reported.
settled() { case $(ce_state "$1") in ACCEPTING | ACCEPTED | PREPARING | PREPARED | SUBMITTING) return 1 ;; esac; }
orph=""
for j in $(ce_jobs_with "\"$TAG"); do
	grep -lqF "\"$j\"" "$REC"/*.json 2>/dev/null && continue
	poll 120 settled "$j"
	st=$(ce_state "$j")
	case $st in GONE | KILLED | KILLING | FINISHED | FINISHING | FAILED) ;; *) orph="$orph $j:$st" ;; esac
done
expect_eq "no live job of this run on the CE without a record" "$orph" ""

run_gg clean --all
expect_eq "clean --all at the end" "$RC" 0
expect_eq "nothing left in the store" "$(ls "$REC" | grep -c '\.json$')" 0
done_testing
