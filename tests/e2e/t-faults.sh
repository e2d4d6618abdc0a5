#!/bin/sh
# Faults against the real test site, injected by tests/e2e/faultproxy.py on
# loopback: the CE down, reset, black-holed and slow (raw TCP in front of the
# real CE); answering 500s, HTML, garbage, broken JSON (a fake CE with a
# certificate from the site's CA); TLS refusals (wrong host name, expired,
# untrusted); the CE dying mid-submit and mid-upload; a jump host down; the
# disk full during freeze, proxy init and the record store; and gridgpu killed
# with SIGKILL at each step of request, submit and freeze. Every failure must be
# one line "gridgpu: <what>: <why>" with the documented exit code, and leave the
# store consistent: no partial files, every record whole, no job on the CE that
# no record knows of.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # Debian's, with python3-cryptography (not a pyenv shim)
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
REC=$XDG_STATE_HOME/gridgpu/records
SSHD=$XDG_CONFIG_HOME/gridgpu/ssh
# Every session and job name of this run starts with TAG: at the end, any job on
# the CE whose description holds it is killed and cleaned, whatever happened.
TAG=f$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
FP_PIDS=""

# ---- helpers ---------------------------------------------------------------------
T_START=$(date +%s)
section() { echo "# [$(($(date +%s) - T_START))s] $*"; }
on_exit() {
	for p in $FP_PIDS; do kill "$p" 2>/dev/null; done
	# shellcheck disable=SC2046
	ce_forget $(ce_jobs_with "$TAG")
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# fp_start DIR PORT [faultproxy options...]: start a fault proxy, wait until it listens.
fp_start() {
	_d=$1 _p=$2
	shift 2
	mkdir -p "$_d"
	echo pass >"$_d/mode"
	"$PY" "$HERE/faultproxy.py" --port "$_p" --dir "$_d" --control-dir "$GG_TB_CONTROL_DIR" "$@" \
		>"$_d/stderr" 2>&1 &
	FP_PIDS="$FP_PIDS $!"
	poll 30 test -s "$_d/state"
}
# rec FIELD NAME: a field of a stored record ("" when absent; NONE when no record).
rec() {
	[ -f "$REC/$2.json" ] || { echo NONE; return; }
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[2])).get(sys.argv[1], ""))' "$1" "$REC/$2.json"
}
# store_ok: the store is whole (tests/e2e/store-check.py); prints what is wrong.
store_ok() { "$PY" "$GG_TOP/tests/e2e/store-check.py" "$REC" "$SSHD"; }
check_store() { # DESC
	if out=$(store_ok); then ok "$1: store consistent"; else not_ok "$1: store consistent ($out)"; fi
}
# one_line_error: the error is one line "gridgpu: <what>: <why>" on stderr (a
# progress note such as "submitted X" may come before it).
one_line_error() {
	[ "$(printf '%s\n' "$ERR" | grep -c '^gridgpu: ')" = 1 ] &&
		printf '%s\n' "$ERR" | grep -q '^gridgpu: .*[^ ]: [^ ]'
}
# not_blaming_tls: a connection the CE dropped is not reported as a TLS, CA or
# credential problem (that sends the user after the wrong thing).
not_blaming_tls() { ! printf '%s' "$ERR" | grep -qiE 'TLS|CA directory|credential'; }
# run_bg ARGS...: gridgpu in the background; pid in BG.
run_bg() {
	"$GRIDGPU" "$@" >"$T_TMP/.bgout" 2>"$T_TMP/.bgerr" &
	BG=$!
}

# ---- set-up -----------------------------------------------------------------------
section "set-up"
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
FP=$T_TMP/fp
FPORT=$(free_port)
if fp_start "$FP" "$FPORT"; then ok "fault proxy listens on 127.0.0.1:$FPORT"; else
	not_ok "fault proxy starts ($(cat "$FP/stderr"))"
	done_testing
	exit 1
fi
FCE=https://localhost:$FPORT/arex
"$GRIDGPU" site add fp -q --ce "$FCE" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --connect-deadline 60s --runtime bwrap
sh "$HERE/mkrootfs.sh" "$T_TMP/sandbox"
"$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/small.sif"

# A live session through the proxy, for the faults of list, kill and status.
run_gg --site fp request --name "${TAG}live" --walltime 10m --no-wait
expect_eq "request through the fault proxy (pass)" "$RC" 0
LIVE=${TAG}live
LIVE_JOB=$(rec job_id "$LIVE")

# ---- the CE is down: connection refused -----------------------------------------------------
section "the CE is down: connection refused"
fp_mode "$FP" down
n0=$(ls "$REC" | grep -c '\.json$')
expect_fail "CE down: request, exit 4" 4 "cannot connect" --site fp request --name "${TAG}d1" --no-wait
one_line_error && ok "CE down: one line, gridgpu: <what>: <why>" || not_ok "CE down: one line ($ERR)"
expect_eq "CE down: the refused request leaves no record" "$(ls "$REC" | grep -c '\.json$')" "$n0"
# With a bearer token and the CE's REST version known, the POST of the job is
# the first request: refused, nothing was sent, so nothing may be kept.
TOKEN=$("$GG_TB_MINT_TOKEN" --exp 3600)
nkeys() { ls "$SSHD/keys" 2>/dev/null | wc -l; }
k0=$(nkeys)
BEARER_TOKEN=$TOKEN run_gg --site fp request --token --walltime 30m --name "${TAG}d2" --no-wait
[ "$RC" = 4 ] && one_line_error && printf '%s' "$ERR" | grep -q "the CE was not reached, nothing was sent" &&
	ok "CE down, token: the refused submission says the CE was not reached (exit 4)" ||
	not_ok "CE down, token: the refused submission says the CE was not reached ($RC $ERR)"
expect_eq "CE down, token: no record and no session key left" "$(rec name "${TAG}d2") $(nkeys)" "NONE $k0"
run_gg list
expect_eq "CE down: list (no sync) needs no CE" "$RC" 0
expect_fail "CE down: list --sync, exit 4" 4 "cannot connect" list --sync
printf '%s\n' "$OUT" | grep -Eq "^$LIVE +fp +session +unknown" && ok "CE down: list --sync shows the session as unknown" ||
	not_ok "CE down: list --sync shows unknown ($OUT)"
run_gg --json list
json_valid list
printf '%s' "$OUT" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not [r for r in d["items"] if r["name"]==sys.argv[1] and r["state"]=="unknown"])' "$LIVE" &&
	ok "CE down: list --json parses, the record is kept as unknown" || not_ok "CE down: list --json ($OUT)"
expect_fail "CE down: status, exit 4" 4 "cannot connect" status "$LIVE"
expect_fail "CE down: kill, exit 4" 4 "cannot connect" kill "$LIVE"
expect_eq "CE down: kill keeps the record (not marked killed)" "$(rec state "$LIVE")" unknown
expect_eq "CE down: kill keeps the session key" "$(test -f "$(rec key "$LIVE")" && echo yes)" yes
expect_fail "CE down: clean --all, exit 4" 4 "cannot connect" clean --all
expect_eq "CE down: clean --all forgets nothing" "$(rec job_id "$LIVE")" "$LIVE_JOB"
check_store "CE down"
fp_mode "$FP" pass
run_gg list --sync
[ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -Eq "^$LIVE +fp +session +(queued|starting|ready)" &&
	ok "CE back: list --sync recovers the state from unknown" || not_ok "CE back: list --sync ($RC $OUT $ERR)"

# ---- a fake CE answering nonsense: nothing crashes, nothing is forgotten -------------------
section "a fake CE answering nonsense: nothing crashes, nothing is forgotten"
# bad MODE DESC EXPECTED-SUBSTRING: list --sync and a fresh request against it.
NB=0
bad_answer() {
	bm=$1 bd=$2 bs=$3
	NB=$((NB + 1))
	fp_mode "$FP" "$bm"
	run_gg list --sync
	if [ "$RC" = 4 ] && printf '%s' "$ERR" | grep -qF -- "$bs" && one_line_error; then
		ok "$bd: list --sync exit 4, '$bs'"
	else
		not_ok "$bd: list --sync exit 4, '$bs' (exit $RC: $ERR)"
	fi
	expect_eq "$bd: the session is kept, unknown" "$(rec state "$LIVE") $(rec job_id "$LIVE")" "unknown $LIVE_JOB"
	# a fresh HOME: nothing cached, the first call is GET /rest
	HOME=$T_TMP/h$NB XDG_STATE_HOME=$T_TMP/h$NB/state run_gg --site fp request --name "${TAG}b" --no-wait
	if [ "$RC" = 4 ] && printf '%s' "$ERR" | grep -qF -- "$bs" && one_line_error; then
		ok "$bd: request exit 4, '$bs'"
	else
		not_ok "$bd: request exit 4, '$bs' (exit $RC: $ERR)"
	fi
	[ ! -e "$T_TMP/h$NB/state/gridgpu/records/${TAG}b.json" ] && ok "$bd: no record left by the failed request" ||
		not_ok "$bd: no record left by the failed request"
}
bad_answer "http500 Service paused by the site admin" "HTTP 500" "HTTP 500 Service paused by the site admin"
# A hostile CE's reason phrase (A-REX's error text goes there) with a terminal
# title, a screen clear and a bell: they reach the terminal escaped, never raw.
fp_mode "$FP" "http500 $(printf '\033]0;owned\007\033[2J')Session ready"
run_gg list --sync
if [ "$RC" = 4 ] && ! printf '%s' "$ERR" | LC_ALL=C tr -d '\n' | LC_ALL=C grep -q "$(printf '[\001-\037\177]')" &&
	printf '%s' "$ERR" | grep -qF '\x1b]0;owned\x07\x1b[2J'; then
	ok "a reason phrase with ESC and BEL: escaped on stderr, no raw control byte"
else
	not_ok "a reason phrase with ESC and BEL: escaped on stderr ($RC $(printf '%s' "$ERR" | od -c | head -5))"
fi
bad_answer http503 "HTTP 503 (retried, then given up)" "HTTP 503"
bad_answer html "an HTML page" "not valid JSON"
bad_answer notjson "a body that is not JSON" "not valid JSON"
bad_answer truncjson "truncated JSON" "not valid JSON"
bad_answer partial "a body shorter than its Content-Length" "gridgpu: "
bad_answer empty "the connection closed without an answer (mid-status)" "without an answer"
bad_answer reset "a TCP reset at connect" "gridgpu: "
not_blaming_tls && ok "a TCP reset is not reported as a TLS/CA/credential problem" ||
	not_ok "a TCP reset is not reported as a TLS/CA/credential problem ($ERR)"
bad_answer garbage "binary garbage instead of HTTP" "gridgpu: "
printf '%s' "$ERR" | grep -q "not a usable URL" && not_ok "garbage from the CE is not blamed on the URL ($ERR)" ||
	ok "garbage from the CE is not blamed on the URL"
# TLS: every refusal says TLS; nothing is ever sent to a CE we cannot trust.
bad_answer tls-wronghost "TLS: certificate for another host name" "TLS"
bad_answer tls-expired "TLS: expired host certificate" "TLS"
bad_answer tls-untrusted "TLS: certificate from an untrusted CA" "TLS"
if grep -q "request tls-" "$FP/log"; then not_ok "no request reaches a CE whose certificate was refused"; else
	ok "no request reaches a CE whose certificate was refused"; fi
# The POST of the job as the first request (token, REST version known): every TLS
# refusal means nothing was sent, and nothing is kept.
for m in tls-wronghost tls-expired tls-untrusted; do
	fp_mode "$FP" "$m"
	k0=$(nkeys)
	BEARER_TOKEN=$TOKEN run_gg --site fp request --token --walltime 30m --name "${TAG}t" --no-wait
	[ "$RC" = 4 ] && printf '%s' "$ERR" | grep -q "the CE was not reached, nothing was sent" &&
		[ "$(rec name "${TAG}t") $(nkeys)" = "NONE $k0" ] &&
		ok "$m, token: nothing was sent, no record and no key left" ||
		not_ok "$m, token: nothing was sent, no record and no key left ($RC $(rec state "${TAG}t") $ERR)"
done
# A compromised CE that answers without end: refused without holding it all in
# memory (the largest thing gridgpu asks a CE for is its job list).
if [ -x /usr/bin/time ]; then
	fp_mode "$FP" huge 256
	/usr/bin/time -f %M -o "$T_TMP/rss" "$GRIDGPU" list --sync >/dev/null 2>"$T_TMP/.stderr"
	RC=$?
	rss=$(tail -1 "$T_TMP/rss")
	[ "$RC" = 4 ] && [ "$rss" -lt 65536 ] && ok "a 256 MiB answer: refused, exit 4, max RSS $((rss / 1024)) MiB" ||
		not_ok "a 256 MiB answer: refused with bounded memory (exit $RC, max RSS $((rss / 1024)) MiB: the whole body is kept in memory)"
else
	T_N=$((T_N + 1))
	echo "ok $T_N - # SKIP the 256 MiB answer: /usr/bin/time is not installed"
fi
fp_mode "$FP" ok
X509_CERT_DIR=$GG_TB_BAD_CA_DIR run_gg list --sync
[ "$RC" = 4 ] && printf '%s' "$ERR" | grep -q TLS && ok "TLS: wrong CA directory (X509_CERT_DIR) refused" ||
	not_ok "TLS: wrong CA directory ($RC $ERR)"
X509_CERT_DIR=/nonexistent run_gg list --sync
[ "$RC" = 3 ] && printf '%s' "$ERR" | grep -q "the CA directory '/nonexistent' does not exist (X509_CERT_DIR.*run 'gridgpu doctor'" &&
	ok "X509_CERT_DIR=/nonexistent: the directory named, doctor suggested (exit 3)" || not_ok "X509_CERT_DIR=/nonexistent ($RC $ERR)"
check_store "after the bad answers"

# ---- answers A-REX never gives; a hostile CE's diagnostics and listings ----------------------
section "redirects, bad requests, a wrong CE path, a malformed job id: CE errors (exit 4)"
bad_answer http302 "HTTP 302 (a redirect)" "HTTP 302 Found"
bad_answer http400 "HTTP 400" "HTTP 400 Bad Request"
bad_answer http404 "HTTP 404 on a wrong CE path" "is the CE URL right?"
# alt_run DIR ARGS...: gridgpu with a home, store and config of its own (the
# site profiles copied), so a record made here never meets the main store.
alt_run() {
	_h=$1
	shift
	mkdir -p "$_h/config/gridgpu" "$_h/state"
	cp "$XDG_CONFIG_HOME/gridgpu/config" "$_h/config/gridgpu/config"
	HOME=$_h XDG_CONFIG_HOME=$_h/config XDG_STATE_HOME=$_h/state run_gg "$@"
}
# alt_record DIR NAME JOBID: a job record on the fault proxy, as submit leaves it.
alt_record() {
	mkdir -p "$1/state/gridgpu/records"
	"$PY" - "$1/state/gridgpu/records/$2.json" "$2" "$3" "$FCE" <<'PY'
import json, sys
json.dump({"version": 1, "kind": "job", "state": "queued", "name": sys.argv[2],
           "uid": "0123456789ab", "site": "fp", "ce": sys.argv[4], "job_id": sys.argv[3],
           "created": 1700000000, "walltime": 600}, open(sys.argv[1], "w"))
PY
}
# raw_controls FILE: prints the control bytes (C0 but LF, DEL, C1, bidi and
# invisible format characters) or invalid UTF-8 in FILE; exit 1 when there are none.
raw_controls() {
	"$PY" -c '
import re, sys
b = open(sys.argv[1], "rb").read()
bad = re.findall(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa0-\xa4\xa6-\xa9]|\xef\xbb\xbf", b)
try: b.decode("utf-8")
except UnicodeDecodeError: bad.append(b"invalid UTF-8")
print(bad); sys.exit(0 if bad else 1)' "$1"
}
fp_mode "$FP" badjobid
BEARER_TOKEN=$TOKEN alt_run "$T_TMP/hj" --site fp request --token --walltime 30m --name "${TAG}j" --no-wait
[ "$RC" = 4 ] && one_line_error && printf '%s' "$ERR" | grep -q "malformed job id" &&
	ok "a malformed job id from the CE: exit 4, one line ('malformed job id')" ||
	not_ok "a malformed job id from the CE: exit 4 ($RC $ERR)"
# The CE may hold a job under that name: its record stays for adoption, whole.
jstate=$(REC=$T_TMP/hj/state/gridgpu/records && rec state "${TAG}j")
[ "$jstate" != NONE ] && [ -n "$jstate" ] && ok "a malformed job id: the record is kept whole for adoption ($jstate)" ||
	not_ok "a malformed job id: the record is kept ($jstate)"

section "submit --count: one request for the batch; the jobs the CE refuses are told, the rest recorded"
# The fake CE answers each job of a submission as A-REX does, refusing the 3rd
# and the 6th of 8: every other job is submitted, recorded with its job id and
# told; the refused ones are told with the CE's reason and leave no record.
fp_mode "$FP" refuse 3 6
BEARER_TOKEN=$TOKEN alt_run "$T_TMP/hb" --json --site fp submit --token --count 8 --walltime 10m \
	"$T_TMP/small.sif" -- echo "${TAG}b"
BREC=$T_TMP/hb/state/gridgpu/records
expect_eq "refused jobs of a batch: exit 6 (the CE refused a job)" "$RC" 6
expect_eq "refused jobs of a batch: one request for all 8 (the CE's log)" \
	"$(fp_new_event "$FP" "submit 8 jobs, refused 3 6" && echo yes) $(grep -c '^submit ' "$FP/log")" "yes 1"
expect_eq "refused jobs of a batch: each refusal one line, naming the job and the CE's reason" \
	"$(printf '%s\n' "$ERR" | grep '^gridgpu: submit' | sed 's/(code 500).*/(code 500)/')" \
	"gridgpu: submit: job 3 of 8: the CE refused the job: Refused by the fault proxy (code 500)
gridgpu: submit: job 6 of 8: the CE refused the job: Refused by the fault proxy (code 500)"
json_valid submit
expect_eq "refused jobs of a batch: --json lists the 6 jobs submitted and the 2 refused" \
	"$(printf '%s' "$OUT" | "$PY" -c 'import json,sys; d=json.load(sys.stdin)
print(" ".join(i["job_id"] for i in d["items"]), [(f["index"], f["error"]["kind"], "name" in f) for f in d["failed"]])')" \
	"fpjob1 fpjob2 fpjob3 fpjob4 fpjob5 fpjob6 [(3, 'job-failed', False), (6, 'job-failed', False)]"
expect_eq "refused jobs of a batch: 6 records, each queued with its job id; none for the refused" \
	"$(for f in "$BREC"/*.json; do "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["state"], r["job_id"])' "$f"; done | sort | tr '\n' ' ')" \
	"queued fpjob1 queued fpjob2 queued fpjob3 queued fpjob4 queued fpjob5 queued fpjob6 "
fp_mode "$FP" refuse 1 2 3
BEARER_TOKEN=$TOKEN alt_run "$T_TMP/hb" --site fp submit --token --count 3 --walltime 10m \
	"$T_TMP/small.sif" -- echo "${TAG}b"
expect_eq "a batch refused whole (jobs 1 to 3 of 3): exit 6, three lines, no new record" \
	"$RC $(printf '%s\n' "$ERR" | grep -c '^gridgpu: submit: job [123] of 3: the CE refused') $(ls "$BREC" | grep -c json)" \
	"6 3 6"
fp_mode "$FP" refuse 1
BEARER_TOKEN=$TOKEN alt_run "$T_TMP/hb" --json --site fp submit --token --count 2 --walltime 10m \
	"$T_TMP/small.sif" -- echo "${TAG}b"
json_valid submit
expect_eq "the first job of a batch refused: one --json document, the second job in it" \
	"$RC $(printf '%s\n' "$OUT" | grep -c .) $(printf '%s' "$OUT" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(len(d["items"]), d["failed"][0]["index"])')" \
	"6 1 1 1"
fp_mode "$FP" refuse 5 6 7 8
BEARER_TOKEN=$TOKEN alt_run "$T_TMP/hb" --site fp submit --token --count 4 --walltime 10m \
	"$T_TMP/small.sif" -- echo "${TAG}b"
expect_eq "a batch the CE takes whole: exit 0, the four names on standard output (the refused ones' free again)" \
	"$RC $(printf '%s' "$OUT" | tr '\n' ' ')" "0 job-3 job-9 job-10 job-11"
# submit --input-list: one job per line through the same bulk request; the
# refused lines are told with their input, the rest recorded, none lost
for i in 1 2 3 4 5; do echo "in $i" >"$T_TMP/in$i.txt"; done
printf '# five inputs\n%s\n\n%s\n%s\n%s\n%s\n' "$T_TMP/in1.txt" "$T_TMP/in2.txt" "$T_TMP/in3.txt" \
	"$T_TMP/in4.txt" "$T_TMP/in5.txt" >"$T_TMP/inputs.txt"
nbefore=$(ls "$BREC" | grep -c json)
fp_mode "$FP" refuse 2 4
BEARER_TOKEN=$TOKEN alt_run "$T_TMP/hb" --json --site fp submit --token --input-list "$T_TMP/inputs.txt" \
	--walltime 10m "$T_TMP/small.sif" -- echo "${TAG}b"
json_valid submit
expect_eq "--input-list of 5, the CE refusing lines 2 and 4: exit 6, one request, each refusal naming its input" \
	"$RC $(fp_new_event "$FP" "submit 5 jobs, refused 2 4" && echo yes) $(printf '%s\n' "$ERR" | grep -c "^gridgpu: submit: job [24] of 5, input $T_TMP/in[24].txt: the CE refused")" \
	"6 yes 2"
expect_eq "--input-list: --json has the 3 jobs made and the 2 refused with their inputs; 3 new records" \
	"$(printf '%s' "$OUT" | "$PY" -c 'import json,sys; d=json.load(sys.stdin)
print(len(d["items"]), [(f["index"], f["input"].rsplit("/", 1)[-1]) for f in d["failed"]])') $(($(ls "$BREC" | grep -c json) - nbefore))" \
	"3 [(2, 'in2.txt'), (4, 'in4.txt')] 3"

section "a hostile CE's diagnostics and listings reach the terminal escaped"
alt_record "$T_TMP/hf" "${TAG}fail" fpfail1
fp_mode "$FP" failed fpfail1
alt_run "$T_TMP/hf" status "${TAG}fail"
printf '%s\n%s' "$OUT" "$ERR" >"$T_TMP/exit.out"
grep -q '^reason: *the command exited 7$' "$T_TMP/exit.out" &&
	grep -qxF '  | \x1b]0;owned\x07\x1b[2J' "$T_TMP/exit.out" &&
	grep -qxF '  | gridgpu: session ready, host key SHA256:AAAAforged (pinned)\r' "$T_TMP/exit.out" &&
	grep -qxF '  | ok \xe2\x80\xaeSHA256:reversed \xff\x00 \xc2\x9b2J' "$T_TMP/exit.out" &&
	! grep -q 'CE errors' "$T_TMP/exit.out" &&
	ok "status of a failed job: the node's record of its command, each stderr line escaped behind '  | '" ||
	not_ok "status shows the wrapper's record escaped ($RC $(head -c 900 "$T_TMP/exit.out"))"
if raw_controls "$T_TMP/exit.out" >"$T_TMP/bad"; then not_ok "status: no raw control or bidi byte from the node's stderr ($(cat "$T_TMP/bad"))"; else
	ok "status: no raw control or bidi byte from the node's stderr"; fi
grep -Eq '^[[:space:]]*(gridgpu: |session ready)' "$T_TMP/exit.out" && not_ok "status: the node injected a line of its own ($(cat "$T_TMP/exit.out"))" ||
	ok "status: the node's stderr cannot print a 'session ready ... (pinned)' line"
alt_run "$T_TMP/hf" status --all-errors "${TAG}fail"
printf '%s\n%s' "$OUT" "$ERR" >"$T_TMP/diag.out"
grep -q 'CE errors' "$T_TMP/diag.out" && grep -qF '\x1b]0;owned\x07' "$T_TMP/diag.out" &&
	ok "status --all-errors of a failed job shows the CE's errors, escaped visibly" ||
	not_ok "status shows the CE's errors escaped ($RC $(head -c 600 "$T_TMP/diag.out"))"
if raw_controls "$T_TMP/diag.out" >"$T_TMP/bad"; then not_ok "status: no raw control or bidi byte from the CE's errors ($(cat "$T_TMP/bad"))"; else
	ok "status: no raw control or bidi byte from the CE's errors"; fi
grep -Eq '^[[:space:]]*(gridgpu: |session ready)' "$T_TMP/diag.out" && not_ok "status: the CE injected a line of its own ($(cat "$T_TMP/diag.out"))" ||
	ok "status: the CE's errors cannot print a 'session ready ... (pinned)' line"

alt_record "$T_TMP/hg" "${TAG}get" fpget1
fp_mode "$FP" listing fpget1
alt_run "$T_TMP/hg" get "${TAG}get" -d "$T_TMP/hg/out"
got=$(cd "$T_TMP/hg/out" 2>/dev/null && ls -A | tr '\n' ' ')
[ "$RC" = 0 ] && [ "$got" = "ok2.txt out.txt " ] && [ "$(cat "$T_TMP/hg/out/ok2.txt")" = "data of ok2.txt" ] &&
	ok "get: a listing with '..', '', '.', 'a/b' and ESC: the plain names downloaded, exit 0" ||
	not_ok "get: the plain names downloaded ($RC '$got' $ERR)"
[ "$(printf '%s\n' "$ERR" | grep -c 'skipping .* not a plain file name')" = 5 ] &&
	ok "get: each name that is not plain skipped with a warning (5)" || not_ok "get: 5 warnings ($ERR)"
printf '%s' "$ERR" >"$T_TMP/get.err"
if raw_controls "$T_TMP/get.err" >"$T_TMP/bad"; then not_ok "get: no raw control byte from the listing ($(cat "$T_TMP/bad"))"; else
	ok "get: no raw control byte from the listing"; fi
fp_mode "$FP" pass

# ---- slow -----------------------------------------------------------------------------------
section "slow"
# A slow CE within the bounds works: every byte from the CE in 16-byte pieces, 20 ms apart.
fp_mode "$FP" slow 16 20
t0=$(now_ms)
run_gg list --sync
t1=$(now_ms)
[ "$RC" = 0 ] && [ $((t1 - t0)) -ge 1000 ] && ok "slow CE (0.8 kB/s): list --sync succeeds ($((t1 - t0)) ms)" ||
	not_ok "slow CE: list --sync ($RC, $((t1 - t0)) ms: $ERR)"
# A CE that accepts TCP but never speaks TLS: the connect timeout (10 s, 3 tries).
fp_mode "$FP" blackhole
t0=$(now_ms)
run_gg list --sync
t1=$(now_ms)
if [ "$RC" = 4 ] && printf '%s' "$ERR" | grep -q "timed out" && [ $((t1 - t0)) -lt 45000 ]; then
	ok "silent CE: list --sync times out, exit 4, within 45 s ($((t1 - t0)) ms)"
else
	not_ok "silent CE: list --sync times out within 45 s (exit $RC after $((t1 - t0)) ms: $ERR)"
fi
expect_eq "silent CE: the session is kept" "$(rec job_id "$LIVE")" "$LIVE_JOB"
# A CE that answers the handshake but never the request: the whole-request
# timeout is 120 s, tried 3 times (6 minutes): only with GG_E2E_SLOW=1.
if [ -n "${GG_E2E_SLOW:-}" ]; then
	fp_mode "$FP" stall
	t0=$(now_ms)
	run_gg list --sync
	t1=$(now_ms)
	[ "$RC" = 4 ] && printf '%s' "$ERR" | grep -q "timed out" && ok "stalled CE: list --sync times out ($((t1 - t0)) ms)" ||
		not_ok "stalled CE: list --sync times out ($RC after $((t1 - t0)) ms: $ERR)"
else
	T_N=$((T_N + 1))
	echo "ok $T_N - # SKIP stalled CE (no answer after the handshake): 3 x 120 s; set GG_E2E_SLOW=1"
fi
# Ctrl-C while the CE does not answer: exit 130 at once, not after the timeout.
fp_mode "$FP" stall
run_bg list --sync
fp_event "$FP" 20 "request stall:"
kill -INT "$BG"
if poll 5 sh -c '! kill -0 "$1"' sh "$BG"; then
	wait "$BG"
	RC=$?
	expect_eq "Ctrl-C while the CE does not answer: exit 130 within 5 s" "$RC" 130
else
	kill -9 "$BG"
	wait "$BG" 2>/dev/null
	not_ok "Ctrl-C while the CE does not answer: exit 130 within 5 s (still running: SIGINT is not passed to the HTTP transfer)"
fi
expect_eq "Ctrl-C during list --sync: the session is kept" "$(rec job_id "$LIVE")" "$LIVE_JOB"
fp_mode "$FP" pass

# ---- the CE dies mid-submit, mid-upload -----------------------------------------------------
section "the CE dies mid-submit, mid-upload"
# Mid-submit: the CE creates the job, then the connection dies before its answer.
N=${TAG}ms
fp_mode "$FP" drop-after-job "\"$N\""
run_gg --site fp request --name "$N" --walltime 10m --no-wait
J=$(ce_jobs_with "\"$N\"" | head -1)
[ -n "$J" ] && ok "mid-submit: the CE did create the job ($J)" || not_ok "mid-submit: the CE did create the job"
[ "$RC" = 4 ] && one_line_error && ok "mid-submit: request fails, exit 4, one line" || not_ok "mid-submit: request exit 4 ($RC $ERR)"
# The answer was lost, not refused: the job may exist, so the record must stay
# for 'list --sync' to adopt it by its job name.
[ "$(rec name "$N")" = "$N" ] && ok "mid-submit: the record is kept (the CE may hold the job)" ||
	not_ok "mid-submit: the record is kept (the CE may hold the job): it was removed, the job $J on the CE is orphaned"
fp_mode "$FP" pass
run_gg list --sync
expect_eq "mid-submit: list --sync adopts the job the CE created" "$(rec job_id "$N")" "$J"
check_store "mid-submit"

N=${TAG}mj
fp_mode "$FP" drop-after-job "\"$N\""
run_gg --site fp submit "$T_TMP/small.sif" --name "$N" --walltime 10m -- echo "$N"
J=$(ce_jobs_with "\"$N\"" | head -1)
[ "$RC" = 4 ] && [ -n "$J" ] && ok "mid-submit (batch): exit 4, the CE holds job $J" || not_ok "mid-submit (batch): exit $RC, job '$J': $ERR"
[ "$(rec name "$N")" = "$N" ] && ok "mid-submit (batch): the record is kept" ||
	not_ok "mid-submit (batch): the record is kept: it was removed, the job $J on the CE is orphaned"
fp_mode "$FP" pass
run_gg list --sync
expect_eq "mid-submit (batch): list --sync adopts the job" "$(rec job_id "$N")" "$J"

# The same for submit --count: one request made all the jobs, its answer was
# lost: every record stays, and list --sync adopts each job.
N=${TAG}mc
fp_mode "$FP" drop-after-job "$N"
run_gg --site fp submit "$T_TMP/small.sif" --count 3 --walltime 10m -- echo "$N"
JS=$(ce_jobs_with "$N" | sort | tr '\n' ' ')
[ "$RC" = 4 ] && [ "$(printf '%s\n' "$ERR" | grep -c "^gridgpu: submit: job [123] of 3 (job-[0-9]*): the CE may have the job")" = 3 ] &&
	ok "mid-submit (--count 3): exit 4, each job told that the CE may have it" || not_ok "mid-submit (--count 3): exit $RC: $ERR"
fp_mode "$FP" pass
run_gg list --sync
expect_eq "mid-submit (--count 3): list --sync adopts the three jobs the CE made" \
	"$(for f in "$REC"/*.json; do "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("job_id", "")) if sys.argv[2] in r.get("command", "") else None' "$f" "$N"; done | sort | tr '\n' ' ')" "$JS"
expect_eq "mid-submit (--count 3): the CE made three" "$(echo $JS | wc -w)" 3
check_store "mid-submit (--count 3)"

# Mid-upload: the answer arrives, then the CE goes away during the upload.
N=${TAG}mu
fp_mode "$FP" cut-upload "\"$N\""
run_gg --site fp request --name "$N" --walltime 10m --no-wait
J=$(ce_jobs_with "\"$N\"" | head -1)
[ "$RC" = 4 ] && one_line_error && printf '%s' "$ERR" | grep -q "uploading" && ok "mid-upload: exit 4, says what it was uploading" ||
	not_ok "mid-upload: exit 4 ($RC $ERR)"
not_blaming_tls && ok "mid-upload: the dropped connection is not reported as a TLS/CA/credential problem" ||
	not_ok "mid-upload: the dropped connection is not reported as a TLS/CA/credential problem ($(printf '%s' "$ERR" | tail -1))"
expect_eq "mid-upload: the record keeps the job id, failed" "$(rec state "$N") $(rec job_id "$N")" "failed $J"
test -f "$(rec key "$N")" && ok "mid-upload: the session key stays until clean" || not_ok "mid-upload: the session key stays until clean"
poll 5 grep -qxF down "$FP/state"
fp_mode "$FP" pass
run_gg clean "$N"
expect_eq "mid-upload: clean forgets the failed session" "$RC $(rec name "$N")" "0 NONE"
# The job never got its inputs and would wait for them: clean must end it.
poll 20 ce_gone "$J" && ok "mid-upload: after clean the CE no longer holds the job" ||
	not_ok "mid-upload: after clean the CE no longer holds the job (still $(ce_state "$J"): clean forgot the record without killing the job)"
check_store "mid-upload"

N=${TAG}mv
fp_mode "$FP" cut-upload "\"$N\""
run_gg --site fp submit "$T_TMP/small.sif" --name "$N" --walltime 10m -- echo "$N"
J=$(ce_jobs_with "\"$N\"" | head -1)
[ "$RC" = 4 ] && printf '%s' "$ERR" | grep -q "uploading" && ok "mid-upload (batch): exit 4 after one retry" ||
	not_ok "mid-upload (batch): exit 4 ($RC $ERR)"
expect_eq "mid-upload (batch): the record keeps the job id, failed" "$(rec state "$N") $(rec job_id "$N")" "failed $J"
fp_mode "$FP" pass

# ---- SIGKILL at each step -------------------------------------------------------------------
section "SIGKILL at each step"
# request, while contacting the CE (before anything was submitted)
N=${TAG}k1
fp_mode "$FP" blackhole
run_bg --site fp request --name "$N" --no-wait
fp_event "$FP" 20 "accept .* blackhole" && poll 5 test -f "$REC/$N.json"
kill -9 "$BG"
wait "$BG" 2>/dev/null
fp_mode "$FP" pass
expect_eq "SIGKILL before submit: the record stays, requested, no job id" "$(rec state "$N")/$(rec job_id "$N")" "requested/"
check_store "SIGKILL before submit"
U=$(rec uid "$N")
run_gg kill "$N"
run_gg clean "$N"
[ "$(rec name "$N")" = NONE ] && [ -n "$U" ] && [ ! -e "$SSHD/keys/$U" ] && ok "SIGKILL before submit: kill + clean forget it and its key" ||
	not_ok "SIGKILL before submit: kill + clean forget it and its key"

# request, waiting for the CE's answer to the submission (the job exists on the CE)
N=${TAG}k2
fp_mode "$FP" hold-after-job "\"$N\""
run_bg --site fp request --name "$N" --walltime 10m --no-wait
fp_event "$FP" 30 "job .* held"
kill -9 "$BG"
wait "$BG" 2>/dev/null
J=$(ce_jobs_with "\"$N\"" | head -1)
expect_eq "SIGKILL waiting for the submit answer: record written before submit" "$(rec state "$N")" requested
fp_mode "$FP" pass
run_gg list --sync
expect_eq "SIGKILL waiting for the submit answer: list --sync adopts job $J (named gridgpu-$(rec uid "$N"))" "$(rec job_id "$N")" "$J"
check_store "SIGKILL waiting for the submit answer"

# request, during the upload of the launcher (the record has the job id)
N=${TAG}k3
fp_mode "$FP" stall-upload "\"$N\""
run_bg --site fp request --name "$N" --walltime 10m --no-wait
fp_event "$FP" 30 "job .* stalled"
kill -9 "$BG"
wait "$BG" 2>/dev/null
J=$(ce_jobs_with "\"$N\"" | head -1)
fp_mode "$FP" pass
expect_eq "SIGKILL mid-upload: the record has the job id" "$(rec job_id "$N")" "$J"
run_gg list --sync
printf '%s\n' "$OUT" | grep -Eq "^$N +fp +session +(queued|starting|unknown|failed)" && ok "SIGKILL mid-upload: list --sync shows it" ||
	not_ok "SIGKILL mid-upload: list --sync shows it ($OUT)"
run_gg kill "$N"
expect_eq "SIGKILL mid-upload: kill" "$RC" 0
poll 30 ce_ended "$J" && ok "SIGKILL mid-upload: kill ends the job on the CE ($(ce_state "$J"))" ||
	not_ok "SIGKILL mid-upload: kill ends the job on the CE ($(ce_state "$J"))"
check_store "SIGKILL mid-upload"

# request --wait, waiting for the session to be ready: the next list --sync takes over
N=${TAG}k4
run_bg --site fp request --name "$N" --walltime 10m
poll 30 grep -q "$N: .*waited" "$T_TMP/.bgerr" # submitted, staged, now waiting
kill -9 "$BG"
wait "$BG" 2>/dev/null
synced_ready() { "$GRIDGPU" list --sync | grep -Eq "^$1 +fp +session +ready"; }
poll 60 synced_ready "$N" &&
	ok "SIGKILL while waiting for ready: list --sync reaches ready" || not_ok "SIGKILL while waiting for ready: list --sync reaches ready ($(rec state "$N"))"
grep -q "^Host $N\$" "$SSHD/config" && ok "SIGKILL while waiting for ready: the ssh block is written by the sync" ||
	not_ok "SIGKILL while waiting for ready: the ssh block is written by the sync"
check_store "SIGKILL while waiting for ready"

# submit, waiting for the answer to the submission
N=${TAG}k5
fp_mode "$FP" hold-after-job "\"$N\""
run_bg --site fp submit "$T_TMP/small.sif" --name "$N" --walltime 10m -- echo "$N"
fp_event "$FP" 30 "job .* held"
kill -9 "$BG"
wait "$BG" 2>/dev/null
J=$(ce_jobs_with "\"$N\"" | head -1)
fp_mode "$FP" pass
expect_eq "SIGKILL in submit before the answer: record written before submit" "$(rec state "$N")" requested
run_gg list --sync
expect_eq "SIGKILL in submit before the answer: list --sync adopts job $J" "$(rec job_id "$N")" "$J"

# submit, during the upload of the image
N=${TAG}k6
fp_mode "$FP" stall-upload "\"$N\""
run_bg --site fp submit "$T_TMP/small.sif" --name "$N" --walltime 10m -- echo "$N"
fp_event "$FP" 30 "job .* stalled"
kill -9 "$BG"
wait "$BG" 2>/dev/null
J=$(ce_jobs_with "\"$N\"" | head -1)
fp_mode "$FP" pass
expect_eq "SIGKILL in submit mid-upload: the record has the job id" "$(rec job_id "$N")" "$J"
run_gg kill "$N"
expect_eq "SIGKILL in submit mid-upload: kill" "$RC" 0
run_gg clean "$N"
expect_eq "SIGKILL in submit mid-upload: clean" "$RC" 0
check_store "SIGKILL in submit"

# freeze, mid-write: the output never appears half-written
mkdir -p "$T_TMP/big/data"
sh "$HERE/mkrootfs.sh" "$T_TMP/big"
head -c 160M /dev/urandom >"$T_TMP/big/data/blob"
mkdir -p "$T_TMP/fz"
run_bg freeze -q "$T_TMP/big" -o "$T_TMP/fz/big.sif"
# the image is written to an unnamed file (O_TMPFILE): wait until the
# process has written some of it
poll 30 sh -c "[ \"\$(awk '/^wchar/ {print \$2}' /proc/$BG/io 2>/dev/null || echo 0)\" -gt 4000000 ]"
kill -9 "$BG"
wait "$BG" 2>/dev/null
[ ! -e "$T_TMP/fz/big.sif" ] && ok "SIGKILL mid-freeze: no big.sif" || not_ok "SIGKILL mid-freeze: no big.sif"
left=$(ls "$T_TMP/fz")
[ -z "$left" ] && ok "SIGKILL mid-freeze: no half-written file left" ||
	not_ok "SIGKILL mid-freeze: no half-written file left ($left, $(du -sh "$T_TMP/fz" | cut -f1): a named temp file cannot be removed after SIGKILL)"
rm -rf "$T_TMP/big" "$T_TMP/fz"

# ---- a jump host down -----------------------------------------------------------------------
section "a jump host down"
# A second proxy in front of jump host 1; its host key pinned under the proxy's port.
JP=$T_TMP/fpj
JPORT=$(free_port)
fp_start "$JP" "$JPORT" --upstream "127.0.0.1:${GG_TB_JUMP1##*:}"
sed "s/^\[127.0.0.1\]:${GG_TB_JUMP1##*:} /[127.0.0.1]:$JPORT /" "$GG_TB_SSH_KNOWN_HOSTS" >"$T_TMP/jump_known_hosts"
"$GRIDGPU" site add jf -q --ce "$GG_TB_CE_URL" --jump "${GG_TB_JUMP1%:*}:$JPORT" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$T_TMP/jump_known_hosts" --worker-address 127.0.0.1 --connect-deadline 60s
fp_mode "$JP" down
N=${TAG}j1
# The session starts on the node, but "ready" means its sshd answered through
# the hops: with jump host 1 down, request says so instead of waiting forever.
run_gg --site jf request --name "$N" --walltime 10m
[ "$RC" = 4 ] && one_line_error && printf '%s' "$ERR" | grep -q "jump host 1" && printf '%s' "$ERR" | grep -qi "refused" &&
	ok "jump host down: request exits 4, names jump host 1, connection refused" ||
	not_ok "jump host down: request exits 4 naming jump host 1 ($RC $ERR)"
expect_eq "jump host down: the session is kept, starting, its sshd published" "$(rec state "$N") $(rec port "$N" | grep -c '^[0-9]')" "starting 1"
NOMUX="-o ControlMaster=no -o ControlPath=none"
# shellcheck disable=SC2086
run_gg connect "$N" -- $NOMUX true
[ "$RC" = 4 ] && printf '%s' "$ERR" | grep -qi "refused" && ok "jump host down: connect fails, says connection refused (exit $RC)" ||
	not_ok "jump host down: connect fails with a reason ($RC $ERR)"
run_gg status "$N"
printf '%s' "$OUT" | grep -q "published, not answering yet" && printf '%s' "$OUT" | grep -q "^ssh check: .*jump host 1" &&
	ok "jump host down: status shows the sshd published, not answering, and why" ||
	not_ok "jump host down: status shows why it is not ready ($OUT)"
run_gg --site jf doctor
[ "$RC" = 1 ] && printf '%s\n' "$OUT$ERR" | grep -qi "jump host 1" && ok "jump host down: doctor flags jump host 1, exit 1" ||
	not_ok "jump host down: doctor flags jump host 1 ($RC)"
fp_mode "$JP" pass
# shellcheck disable=SC2086
run_gg connect "$N" -- $NOMUX echo through
expect_eq "jump host back: connect works (the probe makes it ready first)" "$OUT $(rec state "$N")" "through ready"
fp_mode "$JP" blackhole
t0=$(now_ms)
# shellcheck disable=SC2086
timeout 25 "$GRIDGPU" connect "$N" -- $NOMUX true >/dev/null 2>"$T_TMP/.jerr"
RC=$?
t1=$(now_ms)
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && ok "jump host silent: connect gives up by itself ($((t1 - t0)) ms, exit $RC)" ||
	not_ok "jump host silent: connect gives up by itself within 25 s (exit $RC after $((t1 - t0)) ms: the generated hop blocks set no ConnectTimeout)"
fp_mode "$JP" pass
run_gg kill "$N"

# ---- the disk is full -----------------------------------------------------------------------
section "the disk is full"
# in_full DIR SIZE SCRIPT: run SCRIPT (sh) in a private mount namespace with a
# tmpfs of SIZE on DIR, filled to the last byte first when FILL=1.
in_full() {
	mkdir -p "$1"
	unshare -m sh -c 'mount -t tmpfs -o "size=$2" gg-e2e-full "$1" || exit 99
		[ -z "$FILL" ] || { dd if=/dev/zero of="$1/.fill" bs=4k 2>/dev/null; true; }
		sh -c "$3"' sh "$@"
}
FULL=$T_TMP/full
FILL=1 in_full "$FULL" 256k '
	"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin --out "'"$FULL"'/proxy" \
		<"$GG_TB_USER_KEY_PASS_FILE" >"'"$T_TMP"'/.stdout" 2>"'"$T_TMP"'/.stderr"
	echo $? >"'"$T_TMP"'/.rc"; ls -A "'"$FULL"'" | grep -v "^\.fill$" >"'"$T_TMP"'/.left"'
RC=$(cat "$T_TMP/.rc") ERR=$(cat "$T_TMP/.stderr")
[ "$RC" = 3 ] && printf '%s' "$ERR" | grep -q "No space left on device" && ok "disk full: proxy init, exit 3, says so" ||
	not_ok "disk full: proxy init, exit 3 ($RC $ERR)"
expect_eq "disk full: proxy init leaves no file" "$(cat "$T_TMP/.left")" ""
FILL="" in_full "$FULL" 1m '
	"$GRIDGPU" freeze -q "'"$T_TMP"'/sandbox" -o "'"$FULL"'/x.sif" >"'"$T_TMP"'/.stdout" 2>"'"$T_TMP"'/.stderr"
	echo $? >"'"$T_TMP"'/.rc"; ls -A "'"$FULL"'" >"'"$T_TMP"'/.left"'
RC=$(cat "$T_TMP/.rc") ERR=$(cat "$T_TMP/.stderr")
[ "$RC" != 0 ] && printf '%s' "$ERR" | grep -q "No space left on device" && ok "disk full: freeze fails, says so (exit $RC)" ||
	not_ok "disk full: freeze fails ($RC $ERR)"
expect_eq "disk full: freeze leaves no .sif and no temp file" "$(cat "$T_TMP/.left")" ""
# the record store on a full disk: the record is written first, so nothing reaches the CE
N=${TAG}df
FILL=1 in_full "$FULL" 256k '
	mkdir -p "'"$FULL"'/state/gridgpu/records" 2>/dev/null
	XDG_STATE_HOME="'"$FULL"'/state" "$GRIDGPU" --site fp request --name "'"$N"'" --no-wait \
		>"'"$T_TMP"'/.stdout" 2>"'"$T_TMP"'/.stderr"
	echo $? >"'"$T_TMP"'/.rc"; find "'"$FULL"'/state" -type f >"'"$T_TMP"'/.left"'
RC=$(cat "$T_TMP/.rc") ERR=$(cat "$T_TMP/.stderr")
[ "$RC" != 0 ] && [ "$RC" -lt 128 ] && printf '%s' "$ERR" | grep -q "No space left on device" &&
	ok "disk full: request fails before submitting (exit $RC)" || not_ok "disk full: request ($RC $ERR)"
expect_eq "disk full: request leaves no record file" "$(grep -v '/\.lock$' "$T_TMP/.left")" ""
expect_eq "disk full: nothing submitted to the CE" "$(ce_jobs_with "\"$N\"")" ""

# ---- the end: nothing this test made is left on the CE without a record --------------------
section "the end: nothing this test made is left on the CE without a record"
run_gg clean --all
expect_eq "clean --all" "$RC" 0
check_store "the end"
live_tagged() {
	orphans=$(ce_jobs_with "$TAG" | while read -r j; do
		s=$(ce_state "$j")
		case $s in GONE | KILLED | KILLING | FINISHED | FINISHING | FAILED | ERROR) ;; *) echo "$j:$s" ;; esac
	done)
	[ -z "$orphans" ]
}
poll 20 live_tagged
expect_eq "no live job of this test is left on the CE after clean --all" "$(echo $orphans)" ""
echo "# faults: $(grep -c '^accept ' "$FP/log") CE connections through the fault proxy in $(sed -n 's/^accept [0-9]* \([^ ]*\).*/\1/p' "$FP/log" | sort -u | wc -l) modes, $(grep -c '^accept ' "$JP/log") jump-host connections"
done_testing
