#!/bin/sh
# The connection keeper (issue 52): the first command that talks to a CE
# starts one (gridgpu __keep, detached); the next commands' requests go through
# its kept TLS connection, so A-REX sees no new connection (counted by the
# fault proxy in front of the real CE, forwarding TCP untouched). Its socket is
# in a private directory, only its user is served; a renewed proxy is read
# again; a killed or stopped keeper is not waited on (the command connects
# itself); it ends when idle, with --no-keep nothing is started, and none is
# left when the test's directory goes.
. "$(dirname "$0")/lib.sh"
unset GRIDGPU_KEEP # lib.sh turns the keeper off for the other tests
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
KEEP=$XDG_STATE_HOME/gridgpu/keep # XDG_RUNTIME_DIR unset (lib.sh): the state dir's
FP=$T_TMP/fp
FP_PORT=$(free_port)
FP_PID=""
NAMES=""
on_exit() {
	# shellcheck disable=SC2086 # the job names
	[ -n "$NAMES" ] && "$GRIDGPU" --no-keep kill -q $NAMES >/dev/null 2>&1
	"$GRIDGPU" --no-keep clean -q --all >/dev/null 2>&1
	[ -n "$FP_PID" ] && kill "$FP_PID" 2>/dev/null
	for f in "$KEEP"/*.lock; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM
mkdir -p "$FP"
echo pass >"$FP/mode"
"$PY" "$HERE/faultproxy.py" --port "$FP_PORT" --dir "$FP" --upstream "127.0.0.1:$GG_TB_REST_PORT" \
	>"$FP/stderr" 2>&1 &
FP_PID=$!
poll 30 test -s "$FP/state" || not_ok "the fault proxy started ($(cat "$FP/stderr"))"
accepts() { grep -c '^.*accept [0-9]' "$FP/log"; }
keeper_pid() { cat "$KEEP"/*.sock.lock 2>/dev/null | head -1; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
sock_there() { ls "$KEEP"/*.sock >/dev/null 2>&1; }
new_keeper() { [ "$(keeper_pid)" != "$1" ] && alive "$(keeper_pid)"; } # OLDPID

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "https://localhost:$FP_PORT/arex" --runtime bwrap
sh "$HERE/mkrootfs.sh" "$T_TMP/sandbox" sleep >/dev/null
"$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/s.sif"

# --no-keep: nothing started
run_gg --no-keep --site tb submit "$T_TMP/s.sif" --count 2 --walltime 30m -- sleep 1800
NAMES=$OUT
expect_eq "submit --count 2 with --no-keep" "$RC $(printf '%s\n' "$OUT" | wc -w)" "0 2"
sock_there && not_ok "--no-keep started no keeper (a socket: $(ls "$KEEP"))" ||
	ok "--no-keep started no keeper"

# the first sync starts one; the second goes through it
run_gg -v list --sync
expect_eq "list --sync (cold)" "$RC" 0
poll 20 sock_there && ok "the first sync started a keeper" || not_ok "the first sync started a keeper ($ERR)"
P=$(keeper_pid)
expect_eq "its directory is private, its socket its user's alone" \
	"$(stat -c '%a %U' "$KEEP") $(stat -c '%a %U' "$KEEP"/*.sock)" "700 $(id -un) 700 $(id -un)"
ps -o args= -p "$P" | grep -q "__keep --idle 600000 .*/x509up" &&
	ok "the keeper's arguments: the idle time and the proxy's path, no secret" ||
	not_ok "the keeper's arguments: $(ps -o args= -p "$P")"
run_gg -v list --sync
printf '%s\n' "$ERR" | grep -q "jobs?state=.*kept connection" &&
	ok "the second sync went through the keeper" || not_ok "the second sync went through the keeper ($ERR)"
A0=$(accepts)
run_gg -v list --sync
expect_eq "a third sync through the keeper: A-REX saw no new connection" \
	"$RC $(accepts) $(printf '%s\n' "$ERR" | grep -c 'kept connection')" "0 $A0 2"

# another user is refused: the socket's directory opened to them, then the
# socket itself; the keeper closes their connection without a word
if command -v runuser >/dev/null; then
	chmod 711 "$T_TMP" "$HOME" "$HOME/.local" "$XDG_STATE_HOME" "$XDG_STATE_HOME/gridgpu" "$KEEP"
	chmod 777 "$KEEP"/*.sock
	got=$(runuser -u nobody -- "$PY" -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(sys.argv[1])
try: print(len(s.recv(64)))
except Exception as e: print(type(e).__name__)' "$(ls "$KEEP"/*.sock)" 2>&1)
	chmod 700 "$KEEP" "$XDG_STATE_HOME/gridgpu"
	chmod 700 "$KEEP"/*.sock
	expect_eq "another user's connection closed, no greeting" "$got" 0
else
	ok "# SKIP runuser is not installed: another user's connection not tried"
fi

# a renewed proxy: read again, a new connection made with it
sleep 1 # the proxy file's times in whole seconds
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
A0=$(accepts)
run_gg -v list --sync
expect_eq "after proxy init: the keeper used the new proxy (a new connection to A-REX)" \
	"$RC $(printf '%s\n' "$ERR" | grep -c 'kept connection, new') $(($(accepts) > A0))" "0 2 1"
alive "$P" && ok "the same keeper serves the renewed proxy" || not_ok "the keeper ended on a renewal"

# stopped (stale): not waited on; killed: the command connects itself, one debug line
kill -STOP "$P"
t0=$(now_ms)
run_gg -v list --sync
t1=$(now_ms)
kill -CONT "$P"
expect_eq "a stopped keeper: the sync connects itself" \
	"$RC $(printf '%s\n' "$ERR" | grep -c 'no connection keeper answers')" "0 2"
[ $((t1 - t0)) -lt 5000 ] && ok "and does not wait for it ($((t1 - t0)) ms)" ||
	not_ok "a stopped keeper held the sync $((t1 - t0)) ms"
kill -KILL "$P"
poll 10 sh -c "! kill -0 $P 2>/dev/null"
run_gg list --sync
expect_eq "a killed keeper: the sync works, says nothing" "$RC $(printf '%s' "$ERR" | wc -c)" "0 0"
poll 20 new_keeper "$P" &&
	ok "a new keeper took its place" || not_ok "a new keeper took its place"
P=$(keeper_pid)

# idle: one started with GRIDGPU_KEEP=2s ends by itself, its socket gone
kill "$P"
poll 10 sh -c "! kill -0 $P 2>/dev/null"
GRIDGPU_KEEP=2s "$GRIDGPU" list --sync >/dev/null 2>&1
poll 20 new_keeper "$P" || not_ok "GRIDGPU_KEEP=2s started a keeper"
P=$(keeper_pid)
ps -o args= -p "$P" | grep -q -- "--idle 2000 " && ok "GRIDGPU_KEEP=2s: its idle time" ||
	not_ok "GRIDGPU_KEEP=2s: $(ps -o args= -p "$P")"
poll 20 sh -c "! kill -0 $P 2>/dev/null" && ok "an idle keeper ended by itself" || not_ok "an idle keeper ended by itself"
sock_there && not_ok "its socket removed" || ok "its socket removed"

# the test's directory removed (as t_cleanup does): its keeper ends
"$GRIDGPU" list --sync >/dev/null 2>&1
poll 20 new_keeper "$P"
P=$(keeper_pid)
rm -f "$KEEP"/*.sock
poll 10 sh -c "! kill -0 $P 2>/dev/null" && ok "a keeper whose socket is removed ends" ||
	not_ok "a keeper whose socket is removed ends"
# kill and clean through a keeper
"$GRIDGPU" list --sync >/dev/null 2>&1
poll 20 new_keeper "$P"
# shellcheck disable=SC2086 # the job names
run_gg -v kill $NAMES
expect_eq "kill through the keeper" "$RC $(printf '%s\n' "$ERR" | grep -c 'action=kill.*kept connection')" "0 1"
gone() { "$GRIDGPU" clean -q --all >/dev/null 2>&1; [ "$("$GRIDGPU" list --jobs --json | grep -c '"name"')" = 0 ]; }
poll 60 gone
run_gg -v clean --all
expect_eq "clean through the keeper: no record left" \
	"$RC $("$GRIDGPU" list --jobs --json | grep -c '"name"')" "0 0"
NAMES=""

done_testing
