#!/bin/sh
# request --race 2 over two real test sites (the test's own, ra, with the user's
# proxy; a second one beside it, rb, with its own CA and token issuer): the first
# session ready wins and takes the name and the ssh config block; the other's job
# is gone from its CE (the first site's asked with curl, the second's by its
# control directory) and from its Slurm (squeue in that site), its record and key
# forgotten. Then Ctrl-C, and the client SIGKILLed once both jobs are submitted:
# list --sync settles the race to one session (or none) and leaves nothing at the
# CEs, in either Slurm or in the ssh config.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config
REC=$XDG_STATE_HOME/gridgpu/records
BG=""
on_exit() {
	[ -n "$BG" ] && kill -9 "$BG" 2>/dev/null
	[ -n "$FP_PID" ] && kill "$FP_PID" 2>/dev/null
	"$GRIDGPU" list --sync >/dev/null 2>&1
	for n in $("$GRIDGPU" list 2>/dev/null | awk 'NR > 1 {print $1}'); do "$GRIDGPU" kill "$n" >/dev/null 2>&1; done
	"$GRIDGPU" clean --all -q >/dev/null 2>&1
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
racers() { ls "$REC" 2>/dev/null | grep -c '^race-.*\.json$'; }
# both racers' records name their CE job (the store is polled, no sleep); they
# are copied to $SNAP at once, read from there: the race may end, and its
# racers' records go, within a second on a warm site
SNAP=$T_TMP/snap
both_submitted() {
	[ "$(grep -l '"job_id"' "$REC"/race-*.json 2>/dev/null | wc -l)" = 2 ] || return 1
	rm -rf "$SNAP" && mkdir "$SNAP" && cp "$REC"/race-*.json "$SNAP/" 2>/dev/null
	[ "$(grep -l '"job_id"' "$SNAP"/race-*.json 2>/dev/null | wc -l)" = 2 ]
}
rec_field() { py "print(d.get('$2', ''))" <"$1"; }
# A-REX names the Slurm job after the CE job's name, gridgpu-UID: '-' made '_',
# cut to 15 characters
slurm_has() { # [SITE] UID: that site's Slurm has the job (ra: the first site)
	[ $# = 2 ] || set -- ra "$1"
	case $1 in ra) sl squeue -h -o %j ;; *) psl squeue -h -o %j ;; esac |
		grep -qx "$(printf 'gridgpu_%.7s' "$2")"
}
slurm_none() { ! slurm_has "$@"; }
# synced_to N: after a list --sync, N records and no racer. A loser whose CE has
# not finished killing it when the race ends (A-REX cleans only an ended job)
# stays marked lost, and the next sync finishes it (gridgpu-request(1)).
synced_to() {
	"$GRIDGPU" list --sync >/dev/null 2>&1
	[ "$(ls "$REC" | grep -c '\.json$'):$(racers)" = "$1:0" ]
}
# gone_synced SITE JOB: gone_at after a sync (which finishes a lost racer)
gone_synced() { "$GRIDGPU" list --sync >/dev/null 2>&1; gone_at "$@"; }
# gone_at SITE JOB: the job is gone from that site's CE (the second site's CE
# takes only its own issuer's tokens: its control directory is read instead)
gone_at() {
	case $1 in
	ra) ce_gone "$2" ;;
	*) ! ls "$(peer GG_TB_CONTROL_DIR)/job.$2.description" >/dev/null 2>&1 ;;
	esac
}

# A fault proxy (tests/e2e/faultproxy.py) in front of the second site's CE: the
# loser's CE made slow on purpose. fp_mode DIR MODE...: switch it, wait until
# it is in force; fp_event DIR SECS REGEX: an event logged since.
PY=/usr/bin/python3
FP_PID=""
fp_start() { # DIR PORT UPSTREAM CONTROL_DIR
	mkdir -p "$1" && echo pass >"$1/mode"
	"$PY" "$(dirname "$0")/faultproxy.py" --port "$2" --dir "$1" --upstream "$3" \
		--control-dir "$4" >"$1/stderr" 2>&1 &
	FP_PID=$!
	poll 30 test -s "$1/state"
}
lost_marked() { # every racer record left is marked lost
	[ "$(racers)" = "$(grep -lE '"race_lost": *1([^0-9]|$)' "$REC"/race-*.json 2>/dev/null | wc -l)" ]
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site add ra (the test site's CE)" "$GRIDGPU" site add ra -q --ce "$GG_TB_CE_URL" \
	--jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --connect-deadline 10m
check "a second test site beside the first" peer_site_up t4
peer_token_command "$T_TMP/peer-token"
check "site add rb (the second site's CE, its own CA, a token)" "$GRIDGPU" site add rb -q \
	--ce "$(peer GG_TB_CE_URL)" --jump "$(peer GG_TB_JUMP1)" --jump "$(peer GG_TB_JUMP2)" \
	--identity "$(peer GG_TB_SSH_KEY)" --known-hosts "$(peer GG_TB_SSH_KNOWN_HOSTS)" \
	--worker-address 127.0.0.1 --connect-deadline 10m --ca-dir "$(peer GG_TB_CA_DIR)" \
	--auth token --token-command "$T_TMP/peer-token"

# --- usage --------------------------------------------------------------------------
expect_fail "--race with --no-wait is refused" 2 "does not go with --no-wait" request --site ra,rb --race 2 --no-wait
expect_fail "--race without sites to choose from is refused" 2 "--site auto or --site A,B" request --site ra --race 2
expect_fail "--race 9 is out of range" 2 "--race" request --site auto --race 9
[ "$(racers)" = 0 ] && ok "nothing recorded by the refused races" || not_ok "records: $(ls "$REC")"

# --- a race to the end ------------------------------------------------------------
"$GRIDGPU" --json request --site ra,rb --race 2 --name fast --walltime 1h >"$T_TMP/race.json" 2>"$T_TMP/race.err" &
BG=$!
poll 120 both_submitted && ok "both racers recorded with their CE jobs" || not_ok "racers: $(ls "$REC")"
J1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" job_id) U1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" uid)
J2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" job_id) U2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" uid)
R1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" race) R2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" race)
K1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" key) K2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" key)
[ -n "$R1" ] && [ "$R1" = "$R2" ] && ok "both marked with one race id ($R1)" || not_ok "race ids '$R1' '$R2'"
! gone_at ra "$J1" && ! gone_at rb "$J2" && ok "each racer's job is at its own site's CE" ||
	not_ok "racers' jobs: ra $J1 ($(ce_state "$J1")), rb $J2"
wait "$BG"
RC=$? BG=""
expect_eq "request --race 2: exit 0" "$RC" 0
json_valid request "$T_TMP/race.json"
OUT=$(cat "$T_TMP/race.json")
won=$(printf '%s' "$OUT" | py "print(d['name'], d['state'], d['race_outcome']['won'], len(d['race_outcome']['lost']))")
case $won in
"fast ready ra 1") WS=ra LS=rb WJ=$J1 LJ=$J2 LU=$U2 WK=$K1 LK=$K2 ;;
"fast ready rb 1") WS=rb LS=ra WJ=$J2 LJ=$J1 LU=$U1 WK=$K2 LK=$K1 ;;
*) WS=ra LS=rb WJ="" LJ="" LU="" WK="" LK="" ;;
esac
[ -n "$WJ" ] && ok "the winner is 'fast', ready, one loser ($won)" || not_ok "race: $won"
expect_eq "the winner's record is its racer's job" "$(rec_field "$REC/fast.json" job_id)" "$WJ"
printf '%s\n' "$(printf '%s' "$OUT" | py "print(d['race_outcome']['why'])")" | grep -Eq '^r[ab] won the race: ready first, after [0-9]+s \(r[ab] was [a-z]+: killed and cleaned\)$' &&
	ok "one line says which site won and why" || not_ok "why: $OUT"
lost_marked && ok "the race is settled: every racer left is marked lost" || not_ok "racers: $(ls "$REC")"
poll 120 synced_to 1 && ok "one record left, no racer (after a sync at most)" ||
	not_ok "records: $(ls "$REC")"
grep -qx "Host fast" "$CFG" && ! grep -q "race-" "$CFG" && ok "the ssh config has fast's block, none of a racer" ||
	not_ok "ssh config: $(grep '^Host' "$CFG")"
poll 120 gone_synced "$LS" "$LJ" && ok "the loser's job is gone from its CE ($LS)" || not_ok "loser $LJ at $LS"
poll 60 slurm_none "$LS" "$LU" && ok "... and from its Slurm (squeue)" || not_ok "$LS's Slurm still has gridgpu-$LU"
! gone_at "$WS" "$WJ" && slurm_has "$WS" "$(rec_field "$REC/fast.json" uid)" &&
	ok "the winner runs at its CE and in its Slurm ($WS)" || not_ok "winner $WJ at $WS"
[ -n "$LK" ] && [ ! -e "$LK" ] && [ ! -e "$LK.pub" ] && [ -e "$WK" ] && ok "the loser's session key is removed, the winner's kept" ||
	not_ok "keys: loser '$LK' winner '$WK'"
check "ssh -F config fast true" ssh -F "$CFG" -o BatchMode=yes fast true
run_gg kill fast
run_gg clean fast
expect_eq "kill and clean the winner" "$RC" 0

# --- Ctrl-C and SIGKILL in the middle of a race -----------------------------------------
# Ctrl-C in the middle of a race: settled at once, one session kept ------------------
"$GRIDGPU" request --site ra,rb --race 2 --name soft --walltime 1h >"$T_TMP/i.out" 2>&1 &
BG=$!
poll 120 both_submitted && ok "SIGINT race: both racers submitted" || not_ok "racers: $(ls "$REC")"
IJ1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" job_id) IJ2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" job_id)
kill -INT "$BG"
wait "$BG"
RC=$? BG=""
expect_eq "request --race interrupted: exit 130" "$RC" 130
grep -q "interrupted: the race is settled: session soft at r[ab] keeps starting" "$T_TMP/i.out" &&
	ok "... it says which session it kept" || not_ok "interrupted: $(cat "$T_TMP/i.out")"
head -1 "$T_TMP/i.out" | grep -Eq '^racing (ra, rb|rb, ra) for the session \(best ranked first\): the first ready wins$' &&
	! grep -q "^chose " "$T_TMP/i.out" && ok "... its first line names the sites it races, before anything is sent" ||
	not_ok "the racing line: $(cat "$T_TMP/i.out")"
poll 120 synced_to 1 && expect_eq "one record left, named as asked (after a sync at most)" \
	"$(ls "$REC" | grep '\.json$')" "soft.json" || not_ok "records: $(ls "$REC")"
IW=$(rec_field "$REC/soft.json" job_id)
if [ "$IW" = "$IJ1" ]; then IL=$IJ2 ILS=rb; else IL=$IJ1 ILS=ra; fi
poll 120 gone_synced "$ILS" "$IL" && ok "the other racer's job is gone from its CE ($ILS)" || not_ok "$IL at $ILS"
run_gg kill soft
run_gg clean soft
expect_eq "kill and clean the kept session" "$RC" 0

# --- SIGKILL in the middle of a race ---------------------------------------------------
"$GRIDGPU" request --site ra,rb --race 2 --name hard --walltime 1h >"$T_TMP/k.out" 2>&1 &
BG=$!
poll 120 both_submitted && ok "SIGKILL race: both racers submitted" || not_ok "racers: $(ls "$REC")"
KJ1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" job_id) KU1=$(rec_field "$(ls "$SNAP"/race-ra-*.json)" uid)
KJ2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" job_id) KU2=$(rec_field "$(ls "$SNAP"/race-rb-*.json)" uid)
kill -9 "$BG"
wait "$BG" 2>/dev/null
BG=""
run_gg list --sync
expect_eq "list --sync after the SIGKILL: exit 0" "$RC" 0
n=$(ls "$REC" | grep -c '\.json$')
[ "$n" -gt 0 ] && n=$((n - $(racers))) # those left are lost racers the next sync finishes
poll 120 synced_to "$n" || not_ok "records: $(ls "$REC")"
n=$(ls "$REC" | grep -c '\.json$')
expect_eq "one session left (or none), no racer" "$n:$(racers)" "$([ "$n" = 0 ] && echo 0 || echo 1):0"
if [ "$n" = 1 ]; then
	expect_eq "... named as the race asked" "$(ls "$REC")" "hard.json"
	KW=$(rec_field "$REC/hard.json" job_id)
	if [ "$KW" = "$KJ1" ]; then KL="rb:$KJ2:$KU2"; else KL="ra:$KJ1:$KU1"; fi
	[ "$KW" = "$KJ1" ] || [ "$KW" = "$KJ2" ] && ok "... it is one of the racers' jobs" || not_ok "hard's job $KW"
else
	KL="ra:$KJ1:$KU1 rb:$KJ2:$KU2"
fi
for l in $KL; do
	s=${l%%:*} u=${l##*:} j=${l#*:}
	j=${j%:*}
	poll 120 gone_synced "$s" "$j" && ok "the loser's job $j is gone from its CE ($s)" || not_ok "$j at $s"
	poll 60 slurm_none "$s" "$u" && ok "... and gridgpu-$u from its Slurm" || not_ok "$s's Slurm has gridgpu-$u"
done
! grep -q "race-" "$CFG" && ok "no racer's block in the ssh config" || not_ok "ssh config: $(grep '^Host' "$CFG")"
! ls "$XDG_STATE_HOME/gridgpu/records" | grep -q '\.lock$' && ok "no race lock left" || not_ok "locks: $(ls "$REC")"
run_gg list --sync
expect_eq "a second sync changes nothing" "$(ls "$REC" | grep -c '\.json$')" "$n"
for n in $("$GRIDGPU" list 2>/dev/null | awk 'NR > 1 {print $1}'); do "$GRIDGPU" kill "$n" >/dev/null 2>&1; done
"$GRIDGPU" clean --all -q >/dev/null 2>&1

# --- Ctrl-C while the loser's CE is slow --------------------------------------------------
# The second site's CE behind a fault proxy (site rs): its racer's job is
# recorded, then the upload of its launcher stalls (the client is inside that
# racer's submission); Ctrl-C then; meanwhile the CE is slow to answer (its
# kill and clean take seconds). What CI's pristine root saw, made certain: the
# racer the client was still sending must lose like any other, stay marked lost,
# and the syncs after finish it; never a second session crowned (rs-1 beside
# slow), nothing left at its CE or in its Slurm.
SN=slow$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
FPD=$T_TMP/fp FPORT=$(free_port)
check "a fault proxy in front of the second site's CE" fp_start "$FPD" "$FPORT" \
	"127.0.0.1:$(peer GG_TB_REST_PORT)" "$(peer GG_TB_CONTROL_DIR)"
check "site add rs (the second site's CE through the proxy)" "$GRIDGPU" site add rs -q \
	--ce "https://localhost:$FPORT/arex" --jump "$(peer GG_TB_JUMP1)" --jump "$(peer GG_TB_JUMP2)" \
	--identity "$(peer GG_TB_SSH_KEY)" --known-hosts "$(peer GG_TB_SSH_KNOWN_HOSTS)" \
	--worker-address 127.0.0.1 --connect-deadline 10m --ca-dir "$(peer GG_TB_CA_DIR)" \
	--auth token --token-command "$T_TMP/peer-token"
fp_mode "$FPD" stall-upload "\"$SN\""
"$GRIDGPU" request --site ra,rs --race 2 --name "$SN" --walltime 1h >"$T_TMP/s.out" 2>&1 &
BG=$!
fp_event "$FPD" 120 "job .* stalled" && ok "slow CE: rs's racer recorded, its launcher's upload stalled" ||
	not_ok "slow CE: no stalled upload ($(tail -3 "$FPD/log"))"
SJ=$(rec_field "$(ls "$REC"/race-rs-*.json)" job_id) SU=$(rec_field "$(ls "$REC"/race-rs-*.json)" uid)
[ -n "$SJ" ] && ! gone_at rs "$SJ" && ok "... its job ($SJ) is at the CE" || not_ok "rs racer's job '$SJ'"
fp_mode "$FPD" slow 256 100 # every answer of the CE from now on takes seconds
kill -INT "$BG"
wait "$BG"
RC=$? BG=""
expect_eq "slow CE: request --race interrupted: exit 130" "$RC" 130
grep -q "interrupted: the race is settled: session $SN at ra keeps starting" "$T_TMP/s.out" &&
	ok "... it kept the racer it was not still sending" || not_ok "interrupted: $(cat "$T_TMP/s.out")"
lost_marked && ok "slow CE: every racer left is marked lost (rs's too)" ||
	not_ok "racers: $(grep -l '' "$REC"/race-*.json 2>/dev/null; cat "$REC"/race-*.json 2>/dev/null | grep -E '"(state|race_lost)"')"
run_gg list --sync # the CE still slow: a lost racer stays lost, nothing crowned
lost_marked && [ ! -e "$REC/rs-1.json" ] && ok "slow CE: a sync meanwhile crowns no loser" ||
	not_ok "records: $(ls "$REC")"
fp_mode "$FPD" pass
poll 120 synced_to 1 && expect_eq "slow CE: one record left, named as asked" \
	"$(ls "$REC" | grep '\.json$')" "$SN.json" || not_ok "records: $(ls "$REC")"
poll 120 gone_synced rs "$SJ" && ok "slow CE: the loser's job is gone from its CE" || not_ok "$SJ at rs"
poll 60 slurm_none rs "$SU" && ok "... and from its Slurm" || not_ok "rs's Slurm has gridgpu-$SU"
! grep -q "race-" "$CFG" && ok "slow CE: no racer's block in the ssh config" || not_ok "ssh config: $(grep '^Host' "$CFG")"
run_gg kill "$SN"
run_gg clean "$SN"

done_testing
