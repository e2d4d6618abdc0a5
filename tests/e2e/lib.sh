# Shared helpers for the end-to-end tests (sourced). TAP-style output:
#   ok N - what      /  not ok N - what
# Each test file runs in its own throwaway directory with its own HOME.
set -u
: "${GRIDGPU:?GRIDGPU must point at the gridgpu binary}"
: "${GG_TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
T_N=0
T_FAIL=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gg-e2e.XXXXXX")
export HOME="$T_TMP/home" XDG_CONFIG_HOME="$T_TMP/home/.config" \
	XDG_STATE_HOME="$T_TMP/home/.local/state" XDG_CACHE_HOME="$T_TMP/home/.cache"
mkdir -p "$HOME"
unset XDG_RUNTIME_DIR BEARER_TOKEN BEARER_TOKEN_FILE X509_USER_PROXY X509_USER_CERT X509_USER_KEY
# no connection keeper (each command its own connections, as the fault proxy's
# modes and the SIGKILL steps expect); t-keep tests it
export GRIDGPU_KEEP=0
t_cleanup() { peer_site_stop; [ -n "${T_KEEP:-}" ] || rm -rf "$T_TMP"; }
trap t_cleanup EXIT

# gridgpu_for_others: the path of a copy of the build that other users (nobody)
# can run, laid out as installed (bin/, lib/ with libgridgpu.so.0, which the
# command finds in ../lib, and libexec/gridgpu/): the checkout may sit where
# only its owner can enter, as /root/gridgpu does.
gridgpu_for_others() {
	_pub=$T_TMP/pub
	if [ ! -x "$_pub/bin/gridgpu" ]; then
		mkdir -p "$_pub/bin" "$_pub/lib" "$_pub/libexec/gridgpu"
		cp "$GRIDGPU" "$_pub/bin/gridgpu"
		cp -P "${GRIDGPU%/bin/gridgpu}"/lib/libgridgpu.so* "$_pub/lib/"
		cp "$GG_TOP"/libexec/gridgpu/* "$_pub/libexec/gridgpu/"
		chmod -R a+rX "$_pub"
		chmod 711 "$T_TMP"
	fi
	echo "$_pub/bin/gridgpu"
}
ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
not_ok() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $*"; }
# check "description" command...   (passes when the command succeeds)
check() { d=$1; shift; if "$@" >"$T_TMP/.out" 2>&1; then ok "$d"; else not_ok "$d"; sed 's/^/#   /' "$T_TMP/.out" | tail -15; fi; }
# run_gg: run gridgpu, capture stdout/stderr/exit code in $OUT, $ERR, $RC
run_gg() { "$GRIDGPU" "$@" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"; RC=$?; OUT=$(cat "$T_TMP/.stdout"); ERR=$(cat "$T_TMP/.stderr"); }
# expect_fail "description" EXITCODE "stderr substring" gridgpu-args...
expect_fail() {
	d=$1 code=$2 msg=$3; shift 3
	run_gg "$@"
	if [ "$RC" -eq "$code" ] && printf '%s' "$ERR" | grep -qF -- "$msg"; then
		if [ "$(printf '%s\n' "$ERR" | grep -c '^gridgpu: ')" -ge 1 ]; then ok "$d"; return; fi
	fi
	not_ok "$d (exit $RC, want $code; stderr: $(printf '%s' "$ERR" | head -3))"
}
# expect_eq "description" actual expected
expect_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi; }
# json_valid SCHEMA [FILE]: one test that FILE (default: the last run_gg's
# stdout) is a --json document that validates against doc/json/SCHEMA.schema.json
# (gridgpu-json(7)); why not, when it does not.
json_valid() {
	_f=${2:-$T_TMP/.stdout}
	if /usr/bin/python3 "$GG_TOP/tests/e2e/json-valid.py" "$GG_TOP/doc/json/$1.schema.json" "$_f" 2>"$T_TMP/.jv"; then
		ok "--json output validates against gridgpu.$1/1"
	else
		not_ok "--json output validates against gridgpu.$1/1: $(head -c 300 "$_f"): $(cat "$T_TMP/.jv")"
	fi
}
# session_file_valid DESC FILE: one test that FILE, a gridgpu-session.json the
# launcher wrote, validates against doc/json/session-file.schema.json and has
# no member the schema does not name (the schema lists all the launcher writes).
session_file_valid() {
	if /usr/bin/python3 "$GG_TOP/tests/e2e/json-valid.py" "$GG_TOP/doc/json/session-file.schema.json" "$2" 2>"$T_TMP/.jv" &&
		/usr/bin/python3 -c 'import json,sys
extra = set(json.load(open(sys.argv[2]))) - set(json.load(open(sys.argv[1]))["properties"])
sys.exit("members the schema does not name: %s" % sorted(extra) if extra else 0)' \
			"$GG_TOP/doc/json/session-file.schema.json" "$2" 2>>"$T_TMP/.jv"; then
		ok "$1: the session file validates against session-file.schema.json"
	else
		not_ok "$1: the session file validates against session-file.schema.json: $(head -c 300 "$2"): $(cat "$T_TMP/.jv")"
	fi
}
done_testing() { echo "1..$T_N"; [ "$T_FAIL" -eq 0 ]; }
# Source the test site's variables when a site is up.
if [ -n "${GG_TB_DIR:-}" ] && [ -f "$GG_TB_DIR/env.sh" ]; then . "$GG_TB_DIR/env.sh"; fi

# ---- waiting and the CE's own view (for the tests that talk to the test site) ----
# poll SECS CMD...: run CMD until it succeeds, for at most SECS seconds (we wait
# on outside systems: polling with a deadline is the honest way).
poll() {
	_end=$(($(date +%s) + $1))
	shift
	while ! "$@" 2>/dev/null; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.05
	done
}
# poll_ce SECS CMD...: poll as poll does, asking the CE (an outside system) every 2 s at most
poll_ce() {
	_end=$(($(date +%s) + $1))
	shift
	while ! "$@" 2>/dev/null; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 2
	done
}
# jf KEY: member KEY (a.b for nested members) of the JSON object on stdin, "" when none
jf() {
	python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d.get(k, "") if isinstance(d, dict) else ""
print(d)' "$1"
}
# sfield NAME KEY: member KEY of `status --json NAME`
sfield() { "$GRIDGPU" --json status "$1" 2>/dev/null | jf "$2"; }
# ended NAME: the record NAME has ended (finished, killed or failed), as its last sync saw
ended() { case $(sfield "$1" state) in finished | killed | failed) return 0 ;; esac; return 1; }
# has_snapshot NAME: the session NAME's launcher has said how its sandbox was saved
# (a snapshot, or why none)
has_snapshot() { [ -n "$(sfield "$1" snapshot_at)$(sfield "$1" snapshot_error)" ]; }
# se_mkdir PATH...: directories on the storage element, as its admin makes them
se_mkdir() {
	for d in "$@"; do
		mkdir -p "$GG_TB_SE_DATA$d" || return 1
		while [ "$d" != /store ]; do chown ggxrd: "$GG_TB_SE_DATA$d"; d=$(dirname "$d"); done
	done
}
# sl CMD...: a Slurm command in the test site (its namespace and slurm.conf)
sl() { ip netns exec "$GG_TB_NS" env SLURM_CONF="$GG_TB_SLURM_CONF" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# The CE, asked directly with curl and the test user's key (the peer's view).
ce_post() { # ACTION JSON
	curl -s --max-time 20 --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" \
		--capath "$GG_TB_CA_DIR" -H 'Accept: application/json' -H 'Content-Type: application/json' \
		-d "$2" "$GG_TB_REST_URL/jobs?action=$1"
}
ce_get() { # PATH
	curl -s --max-time 20 --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" \
		--capath "$GG_TB_CA_DIR" -H 'Accept: application/json' "$GG_TB_REST_URL/$1"
}
# ce_state JOBID: the CE's state of a job from its live list (as gridgpu reads
# it), else from the per-job status; GONE when the CE does not know the job.
ce_state() {
	s=$(ce_get "jobs?state=ACCEPTING,ACCEPTED,PREPARING,PREPARED,SUBMITTING,QUEUING,RUNNING,HELD,EXITINGLRMS,OTHER,EXECUTED,FINISHING,FINISHED,FAILED,KILLING,KILLED,WIPED" |
		/usr/bin/python3 -c 'import json,sys
t = sys.stdin.read().strip()
try: j = json.loads(t).get("job", []) if t else []
except Exception: j = []
j = [j] if isinstance(j, dict) else j
print(next((x.get("state", "") for x in j if x.get("id") == sys.argv[1]), ""))' "$1")
	[ -n "$s" ] && { echo "$s"; return; }
	ce_post status "{\"job\":{\"id\":\"$1\"}}" | /usr/bin/python3 -c 'import json,sys
try: j = json.loads(sys.stdin.read())["job"]
except Exception: print("ERROR"); sys.exit()
print("GONE" if str(j.get("status-code")) == "404" else j.get("state", "?"))'
}
ce_gone() { [ "$(ce_state "$1")" = GONE ]; }
ce_ended() { case $(ce_state "$1") in KILLED | KILLING | FAILED | GONE | FINISHED | FINISHING) return 0 ;; esac; return 1; }
# ce_jobs_with MARKER: ids of the CE's jobs whose description holds MARKER.
ce_jobs_with() {
	grep -lF -- "$1" "$GG_TB_CONTROL_DIR"/job.*.description 2>/dev/null |
		sed 's|.*/job\.||; s|\.description$||'
}
ce_forget() { # JOBID...: kill and clean on the CE
	for j in "$@"; do
		ce_post kill "{\"job\":{\"id\":\"$j\"}}" >/dev/null
		ce_post clean "{\"job\":{\"id\":\"$j\"}}" >/dev/null
	done
}

# ---- a second test site beside the test's own (matchmaking across sites) ----
# peer_site_up GPUS: bring up (or find up) a second site with the GPU set GPUS
# (a100 or t4: GRIDGPU_TESTBED_GPUS, tests/testbed/lib.sh): its namespace,
# ports and state dir derive from the test's own site (GG_TB_NS + "p", port
# base + 50, GG_TB_DIR + "-peer"; GG_TB_PEER_NS, GG_TB_PEER_PORT_BASE and
# GG_TB_PEER_DIR name others). A site this started is stopped when the test
# ends (t_cleanup), unless GG_E2E_KEEP_SITE is set; one found up is left up.
# Its env.sh is read with peer VAR. Fails (1) when it cannot start.
PEER_STARTED=""
peer_site_up() {
	PEER_NS=${GG_TB_PEER_NS:-${GG_TB_NS:-ggsite}p}
	PEER_PORT_BASE=${GG_TB_PEER_PORT_BASE:-$((${GG_TB_PORT_BASE:-9520} + 50))}
	PEER_DIR=${GG_TB_PEER_DIR:-${GG_TB_DIR:-/tmp/gridgpu-testbed}-peer}
	if [ "$(peer GG_TB_GPUS 2>/dev/null)" = "$1" ] &&
		env GG_TB_NS="$PEER_NS" GG_TB_PORT_BASE="$PEER_PORT_BASE" GRIDGPU_TESTBED_GPUS="$1" \
			"$GG_TOP/tests/testbed/site-status" "$PEER_DIR" >/dev/null 2>&1; then
		return 0
	fi
	env GG_TB_NS="$PEER_NS" GG_TB_PORT_BASE="$PEER_PORT_BASE" GRIDGPU_TESTBED_GPUS="$1" \
		"$GG_TOP/tests/testbed/site-up" "$PEER_DIR" >"$T_TMP/peer-site-up.log" 2>&1 || {
		tail -n 20 "$T_TMP/peer-site-up.log" | sed 's/^/#   /'
		return 1
	}
	PEER_STARTED=$1
}
# peer VAR: VAR of the second site's env.sh (GG_TB_CE_URL, GG_TB_JUMP1, ...).
peer() { (. "$PEER_DIR/env.sh" && eval "printf '%s\\n' \"\${$1}\""); }
# peer_token_command FILE: write FILE, a site's token_command for the second
# site (its own issuer and CA: the user's proxy is signed by the first site's
# CA). mint-token is run with the second site's shape, not the test's.
peer_token_command() {
	printf "#!/bin/sh\nexec env GG_TB_NS='%s' GG_TB_PORT_BASE='%s' GG_TB_DIR='%s' '%s' --dir '%s'\n" \
		"$PEER_NS" "$PEER_PORT_BASE" "$PEER_DIR" "$(peer GG_TB_MINT_TOKEN)" "$PEER_DIR" >"$1"
	chmod 0700 "$1"
}
# psl CMD...: a Slurm command in the second site
psl() { ip netns exec "$PEER_NS" env SLURM_CONF="$(peer GG_TB_SLURM_CONF)" "$@"; }
peer_site_stop() {
	[ -n "$PEER_STARTED" ] && [ -z "${GG_E2E_KEEP_SITE:-}" ] || return 0
	# with the second site's shape: site-down refuses a dir whose shape the
	# environment (the test's own site's) contradicts
	env GG_TB_NS="$PEER_NS" GG_TB_PORT_BASE="$PEER_PORT_BASE" GRIDGPU_TESTBED_GPUS="$PEER_STARTED" \
		"$GG_TOP/tests/testbed/site-down" "$PEER_DIR" >"$T_TMP/peer-site-down.log" 2>&1 ||
		{ echo "# the second site did not stop:"; tail -n 5 "$T_TMP/peer-site-down.log" | sed 's/^/#   /'; }
	PEER_STARTED=""
}

# A fault proxy (tests/e2e/faultproxy.py) a test started with its state in DIR:
# fp_mode DIR MODE [ARG...]: switch the proxy's mode; wait until it is in force.
# Events logged from then on are the ones fp_event looks at.
fp_mode() {
	_fd=$1
	shift
	FPL=$(wc -l <"$_fd/log")
	printf '%s\n' "$*" >"$_fd/mode.t" && mv "$_fd/mode.t" "$_fd/mode"
	poll 10 grep -qxF -- "$*" "$_fd/state"
}
fp_new_event() { tail -n +"$((FPL + 1))" "$1/log" | grep -qE -- "$2"; }
fp_event() { poll "$2" fp_new_event "$1" "$3"; } # DIR SECS REGEX: an event since the last fp_mode
