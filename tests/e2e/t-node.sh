#!/bin/sh
# What a node says and holds, at the test site (issue 45): the launcher's
# writer of its session file, given hostile values, and the files a session
# writes (ready, ready with a hostile process name, ended after kill) validate
# against doc/json/session-file.schema.json (issue 48); a process of the
# session named ad"v, then one with control characters and a line end in its
# name, keeps the session ready (the launcher's session file stays valid JSON
# with the name escaped, status says ready, connect works) and kill cancels its
# Slurm job; a record marked failed here still has its job cancelled by kill;
# --bind with blanks in its paths works in the container, and the forms that
# cannot be carried to the node are refused at the client (exit 2, nothing
# submitted); a FIFO in place of the node's GPU record does not block freeze
# --session, nor leave a process on the node waiting on it.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ "${GRIDGPU_TESTBED_LRMS:-slurm}" != slurm ] || [ -z "${GG_TB_SLURM_CONF:-}" ]; then
	echo "1..0 # SKIP the test site runs A-REX's fork back end: kill is checked with Slurm"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (ip netns exec)"; exit 0; }
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T_TMP" || exit 1
chmod 711 "$T_TMP"

# --- the launcher's writer of its session file, on hostile values ---------------
# publish() and json_object() of the launcher, run with values a node could hold
# (quotes, backslashes, control characters, bytes that are not UTF-8, numbers
# that are not): each file, starting, ready and ended, validates against
# doc/json/session-file.schema.json (the real files of a session are checked below).
sed -n '/^json_object() {/,/^}/p; /^publish() {/,/^}/p' "$top/libexec/gridgpu/session-launcher" >writer.sh
hostile=$(printf 'a"b\\c\033[2J\n\001\377\300\200 \360\237\230\200 e\303\251')
mkdir -p "sd$hostile"
key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C"
writer() { # STATE NODE PORT USER HOST_KEY: publish STATE, the other values hostile
	SD="$T_TMP/sd$hostile" sh -c '. ./writer.sh; node=$2 port=$3 user=$4 hostkey=$5 VERSION=$6
		started=007 deadline_at=-5 idle=99999999999999999999 last=1.5 first_login= seen=x
		nconn=3 container=$6 visible=$6 batchid=$6 walltime=" 1" act=$6 && publish "$1" "$6"' \
		sh "$@" "$hostile" || { not_ok "the launcher's writer, $1: it failed"; return; }
	session_file_valid "the launcher's writer, $1, hostile values" "$T_TMP/sd$hostile/gridgpu-session.json"
}
writer starting "$hostile" x1 "$hostile" "$hostile"
writer ready wn01.example 22001 gguser "$key"
writer ended "$hostile" -1 "$hostile" "$hostile"

py() { python3 -c "$@"; }
ce_id() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | py 'import json,sys; print(json.load(sys.stdin).get("job_id",""))'; }
slurm_id() { sed -n 's/^localid=//p' "$GG_TB_CONTROL_DIR/job.$(ce_id "$1").local" 2>/dev/null; }
sfile() { echo "$GG_TB_SESSION_DIR/$(ce_id "$1")/gridgpu-session.json"; }
# areason FILE: the active_reason of a session file, as Python reads it ("INVALID" when it does not parse)
areason() { py 'import json,sys
try: print(repr(json.load(open(sys.argv[1], encoding="utf-8"))["active_reason"]))
except Exception as e: print("INVALID", e)' "$1"; }
state() { "$GRIDGPU" --json status "$1" 2>/dev/null | py 'import json,sys; print(json.load(sys.stdin).get("state",""))'; }
slurm_state_in() { # SLURMID STATE...: scontrol's JobState is one of them
	_s=$(sl scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	shift
	for _w; do [ "$_s" = "$_w" ] && return 0; done
	return 1
}
file_says() { grep -qF -- "$2" "$1"; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile (runtime bwrap: the test site has no apptainer)" \
	"$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap --connect-deadline 10m

# --- a process with a hostile name in the session -----------------------------
# busy.sh N: start, left running after the login (its environment names the
# session), a process named ad"v (1) or e ESC ]0;t BEL LF v (2) that uses a
# little CPU each second; its pid in busyN/pid
mkdir -p node && cat >node/busy.sh <<'EOF'
case $1 in 1) n='ad"v' ;; *) n=$(printf 'e\033]0;t\007\nv') ;; esac
d=$GRIDGPU_SESSION_DIR/busy$1
mkdir -p "$d" && cp /bin/sh "$d/$n" && cd "$d" || exit 1
setsid "./$n" -c 'while :; do i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; sleep 1; done' \
	</dev/null >/dev/null 2>&1 &
echo $! >pid
EOF
chmod -R a+rX node
run_gg request --name h --walltime 30m --timeout 5m
expect_eq "request h: ready" "$RC" 0
SJ=$(slurm_id h)
SF=$(sfile h)
session_file_valid "session h, ready" "$SF"
run_gg connect h -- "sh $T_TMP/node/busy.sh 1"
expect_eq "connect h: a process named ad\"v started" "$RC" 0
poll 120 file_says "$SF" '"active_reason":"process ad' || not_ok "the launcher never saw ad\"v: $(cat "$SF")"
expect_eq "the session file on the node is valid JSON, the name escaped" "$(areason "$SF")" "'process ad\"v'"
session_file_valid "session h, ready, a process named ad\"v" "$SF"
expect_eq "status h: still ready" "$(state h)" ready
run_gg connect h -- echo still
expect_eq "connect h works" "$RC:$OUT" "0:still"
run_gg connect h -- "kill \$(cat \$GRIDGPU_SESSION_DIR/busy1/pid); sh $T_TMP/node/busy.sh 2"
poll 120 file_says "$SF" '"active_reason":"process e' || not_ok "the launcher never saw the second name: $(cat "$SF")"
expect_eq "a name with ESC, BEL and a line end: valid JSON, one line, each control character a ?" \
	"$(areason "$SF"):$(wc -l <"$SF")" "'process e?]0;t??v':1"
run_gg status h
expect_eq "status h: ready, exit 0" "$RC:$(printf '%s\n' "$OUT" | sed -n 's/^state: *//p')" "0:ready"
printf '%s' "$OUT" | grep -q "$(printf '\033')" && not_ok "status prints a raw ESC from the node" ||
	ok "status: nothing raw from the node's text"
run_gg connect h -- "kill \$(cat \$GRIDGPU_SESSION_DIR/busy2/pid)"
run_gg kill h
expect_eq "kill h" "$RC" 0
if poll 60 file_says "$SF" '"state":"ended"'; then
	session_file_valid "session h, ended" "$SF"
else
	not_ok "session h's file says ended after kill: $(cat "$SF" 2>&1)"
fi
poll 60 slurm_state_in "$SJ" CANCELLED && ok "Slurm cancelled h's job ($SJ)" ||
	not_ok "h's job: $(sl scontrol show job "$SJ" | grep -o 'JobState=[A-Z]*')"

# --- a record marked failed here: kill still asks the CE to end its job ------
run_gg request --name f --walltime 30m --timeout 5m
expect_eq "request f: ready" "$RC" 0
SJF=$(slurm_id f)
py 'import json,sys; p=sys.argv[1]; r=json.load(open(p)); r["state"]="failed"; r["error"]="the session file published on the node is invalid"; json.dump(r, open(p, "w"))' \
	"$XDG_STATE_HOME/gridgpu/records/f.json"
expect_eq "f marked failed here (as an older gridgpu left it), its job running" \
	"$(state f):$(sl squeue -h -j "$SJF" -o %T)" "failed:RUNNING"
run_gg kill f
expect_eq "kill f: exit 0" "$RC" 0
printf '%s' "$ERR" | grep -q "f has failed already (its job is asked to end on the CE all the same)" &&
	ok "kill f says it has failed, and asks the CE all the same" || not_ok "kill f said: $ERR"
poll 60 slurm_state_in "$SJF" CANCELLED && ok "Slurm cancelled f's job ($SJF)" ||
	not_ok "f's job: $(sl scontrol show job "$SJF" | grep -o 'JobState=[A-Z]*')"
run_gg kill f
expect_eq "kill f again (its job ended on the CE): exit 0" "$RC" 0

# --- --bind with blanks; forms that cannot be carried ---------------------------
sh "$top/tests/e2e/mkrootfs.sh" rootfs mkfifo rm >/dev/null 2>&1
"$GRIDGPU" freeze -q rootfs -o img.sif
mkdir -p "bind me" && echo "with a blank" >"bind me/note" && chmod -R a+rX "bind me"
nrec() { set -- "$XDG_STATE_HOME"/gridgpu/records/*.json; [ -e "$1" ] && echo $# || echo 0; }
before=$(nrec)
for b in "$(printf '%s:/a\nb' "$T_TMP/bind me")" "$T_TMP/bind me:rel" "$T_TMP/bind me:/a/../etc" \
	"$(printf '%s:/a\033[2Jb' "$T_TMP/bind me")" "$T_TMP/bind me/..:/x"; do
	expect_fail "request --bind '$(printf '%s' "$b" | od -An -c | tr -s ' \n' ' ')': refused (exit 2)" 2 "--bind" \
		request --name bad --no-wait --image img.sif --bind "$b" --walltime 10m
done
expect_eq "nothing submitted for the refused binds" "$(nrec)" "$before"
run_gg request --name b --image img.sif --bind "$T_TMP/bind me:/my dir" --walltime 30m --timeout 4m
expect_eq "request --bind '$T_TMP/bind me:/my dir': ready" "$RC" 0
run_gg connect b --timeout 1m -- 'cat "/my dir/note"'
expect_eq "the bound directory, with its blanks, in the container" "$OUT" "with a blank"
run_gg kill b
expect_eq "kill b" "$RC" 0

# --- a FIFO for the node's GPU record: freeze --session does not block ----------
run_gg request --name fz --image img.sif --walltime 30m --timeout 4m
expect_eq "request fz (an image, no bind): ready" "$RC" 0
# shellcheck disable=SC2016 # $GRIDGPU_SESSION_DIR is the session's, on the node
run_gg connect fz --timeout 1m -- 'g=$GRIDGPU_SESSION_DIR/.gridgpu; rm -f "$g/gpus" && mkfifo "$g/gpus" && ls -l "$g/gpus"'
printf '%s' "$OUT" | grep -q '^p' && ok "the session's GPU record is a FIFO now" || not_ok "no FIFO: $RC $OUT $ERR"
timeout 120 "$GRIDGPU" freeze -q --session fz -o fz.sif >"$T_TMP/fz.out" 2>&1
RCF=$?
[ "$RCF" = 0 ] && [ -s fz.sif ] && ok "freeze --session with a FIFO there: done, the image made" ||
	not_ok "freeze --session with a FIFO (exit $RCF): $(cat "$T_TMP/fz.out")"
waiting=""
for p in $(ip netns pids "$GG_TB_NS"); do
	{ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q '\.gridgpu/gpus' && waiting="$waiting $p"
done
expect_eq "no process on the node left reading the FIFO" "$waiting" ""
run_gg kill fz
expect_eq "kill fz" "$RC" 0
done_testing
