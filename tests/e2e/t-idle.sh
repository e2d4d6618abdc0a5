#!/bin/sh
# Idle means idle (issue 16): an ssh ControlPersist master with no channel does
# not keep a session alive past its idle limit; a process a login left running
# (nohup) does, and status says why; a terminal of a login gets the launcher's
# notices before the idle end (again after it was typed into, which counts as
# activity) and before the walltime.  The lead times are scaled with the
# GRIDGPU_WARN_LEADS test hook (request hands it to the job's environment):
# idle limits of 1 min with notices 40 s and 10 s before, a walltime of 2 min
# with notices 1 min and 10 s before.  The sessions run side by side, the
# walltime's first: the run takes about two minutes.
# The node's session file of ia validates against
# doc/json/session-file.schema.json, ready (idle, a connection open) and ended.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config
cd "$T_TMP" || exit 1
state_is() { [ "$(sfield "$1" state)" = "$2" ]; }
status_says() { "$GRIDGPU" status "$1" 2>/dev/null | grep -q -- "$2"; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile" "$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	${GG_TB_GPU_RTE:+--gpu-rte "$GG_TB_GPU_RTE"}

# The terminal of a login, driven as a person would: ssh -tt S cat; every line
# the launcher writes is logged with the time it came; after the first notice
# of the idle end, one line is typed (input: the session is active again).
cat >term-drive.py <<'PY'
import os, pty, select, sys, time
name, log, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
pid, fd = pty.fork()
if pid == 0:
    os.execvp("ssh", ["ssh", "-F", os.environ["CFG"], "-tt", name, "cat"])
buf, typed, end = b"", False, time.time() + secs
with open(log, "w") as f:
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 1)
        if not r:
            continue
        try:
            b = os.read(fd, 4096)
        except OSError:
            break
        if not b:
            break
        buf += b
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            line = line.decode(errors="replace").strip("\r")
            if line.startswith("gridgpu: "):
                f.write("%d %s\n" % (time.time(), line))
                f.flush()
                if "if it stays idle" in line and not typed and sys.argv[4:] == ["type"]:
                    os.write(fd, b"still here\n")
                    typed = True
                    f.write("%d typed\n" % time.time())
                    f.flush()
print("term-drive.py: ssh ended" if time.time() < end else "term-drive.py: deadline")
PY
export CFG

# Each session is given its activity as soon as it is ready (its idle time
# runs from then).
# (d) a terminal of a session with a walltime of 2 min and no idle limit: the
# notices 1 min and 10 s before its end (asked first: its wait is the longest)
export GRIDGPU_WARN_LEADS="60 10"
run_gg request --name id --walltime 2m
expect_eq "id: ready (walltime 2m, no idle limit)" "$RC" 0
python3 term-drive.py id "$T_TMP/id.log" 180 >"$T_TMP/id.out" 2>&1 &
export GRIDGPU_WARN_LEADS="40 10"
# (c) a terminal login with a cat waiting for input (its wait is the second longest)
run_gg request --name ic --idle-limit 1m --walltime 30m
expect_eq "ic: ready (idle limit 1m)" "$RC" 0
python3 term-drive.py ic "$T_TMP/ic.log" 200 type >"$T_TMP/ic.out" 2>&1 &
t_c=$(date +%s)
# (e) a GPU of the job busy (the node's NVML, as nvidia-smi reports it), no
# login, no process of the user: active; another GPU of the node busy: not
LOAD=${GG_TB_NODE_GPU_LOAD:-}
[ -n "${GG_TB_GPU_RTE:-}" ] || LOAD=""
if [ -n "$LOAD" ]; then
	run_gg request --name ig --gpus 1 --idle-limit 1m --walltime 30m
	t_g=$(date +%s)
	expect_eq "ig: ready (1 GPU, idle limit 1m)" "$RC" 0
	jid=$("$GRIDGPU" --json status ig --no-sync 2>/dev/null | jf job_id)
	GI=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("cuda_visible_devices", ""))' \
		"$GG_TB_SESSION_DIR/$jid/gridgpu-session.json" 2>/dev/null)
	GO=$(((GI + 1) % 3))
	case $GI in [0-9]) printf '%s 93\n%s 71\n' "$GI" "$GO" >"$LOAD" ;; *) not_ok "ig: its GPU: '$GI'" ;; esac
fi
# (b) a busy process a login left running, no terminal ('yes', niced)
run_gg request --name ib --idle-limit 1m --walltime 30m
expect_eq "ib: ready (idle limit 1m)" "$RC" 0
run_gg connect ib -- 'nohup nice -n 19 yes >/dev/null 2>&1 & echo $! >"$GRIDGPU_SCRATCH/busy.pid"'
t_b=$(date +%s)
expect_eq "ib: a busy process started with nohup through connect" "$RC" 0
# (a) a ControlPersist master, no channel: not activity
run_gg request --name ia --idle-limit 1m --walltime 30m
expect_eq "ia: ready (idle limit 1m)" "$RC" 0
ssh -F "$CFG" -o ControlMaster=yes -o ControlPath="$T_TMP/cm-ia" -o ControlPersist=yes -f -N ia
t_a=$(date +%s)
check "ia: a ControlPersist master is open (ssh -O check)" ssh -F "$CFG" -o ControlPath="$T_TMP/cm-ia" -O check ia
# asked now, not once the other sessions are ready: their requests take longer
# on a loaded machine, and ia may by then be at the end of its idle limit.
# Right after a login the launcher reports it as activity for one look.
idle_connected() {
	_s=$("$GRIDGPU" status "$1" 2>/dev/null)
	printf '%s\n' "$_s" | grep -q '^connections: *[1-9]' && printf '%s\n' "$_s" | grep -q '^activity: *idle since '
}
poll_ce 60 status_says ia '^connections: *[1-9]' && ok "ia: the master's connection is counted" ||
	not_ok "ia: connections: $("$GRIDGPU" status ia 2>&1 | grep connections)"
poll_ce 60 idle_connected ia && ok "ia: ... not taken for activity: status says it is idle since when, the master open" ||
	not_ok "ia: status: $("$GRIDGPU" status ia 2>&1 | grep -e activity -e idle -e connections)"
# the node's session file of a ready session, a connection open, idle
IA_SF=$GG_TB_SESSION_DIR/$("$GRIDGPU" --json status ia --no-sync 2>/dev/null | jf job_id)/gridgpu-session.json
session_file_valid "ia: ready, a connection open, idle" "$IA_SF"
unset GRIDGPU_WARN_LEADS

poll_ce 60 status_says ib 'active: yes running' && ok "ib: status says why it is active: 'active: yes running'" ||
	not_ok "ib: status: $("$GRIDGPU" status ib 2>&1 | grep -e activity -e idle)"

# the idle limit passes for ia and ib (1 min after their last login)
poll_ce 240 state_is ia finished && ok "ia: the session with only a ControlPersist master ended ($(($(date +%s) - t_a)) s after it opened)" ||
	not_ok "ia: still $(sfield ia state) $(($(date +%s) - t_a)) s after the master opened"
[ $(($(date +%s) - t_a)) -ge 55 ] && ok "ia: ... not before its idle limit" || not_ok "ia: ended after $(($(date +%s) - t_a)) s"
expect_eq "ia: ... for idleness" "$(sfield ia reason)" "idle for longer than the idle limit"
grep -q '"state":"ended"' "$IA_SF" && session_file_valid "ia: ended for idleness" "$IA_SF" ||
	not_ok "ia: the node's session file says ended: $(cat "$IA_SF" 2>&1)"
ssh -F "$CFG" -o ControlPath="$T_TMP/cm-ia" -O exit ia 2>/dev/null
# ib: past its idle limit too (the master's session ended at >= 1 min)
poll 60 sh -c "[ \$((\$(date +%s) - $t_b)) -ge 75 ]"
expect_eq "ib: still ready past its idle limit ($(($(date +%s) - t_b)) s after the login), the process running" "$(sfield ib state)" ready
run_gg --json status ib
json_valid status
expect_eq "ib: status --json: active_reason 'process yes', no idle_since" \
	"$(printf '%s' "$OUT" | jf active_reason)|$(printf '%s' "$OUT" | jf idle_since)" "process yes|"
run_gg connect ib -- 'kill "$(cat "$GRIDGPU_SCRATCH/busy.pid")"'
expect_eq "ib: the busy process stopped" "$RC" 0
poll_ce 60 status_says ib '^activity: *idle since ' && ok "ib: then idle, status says since when" ||
	not_ok "ib: after the process: $("$GRIDGPU" status ib 2>&1 | grep -e activity)"
run_gg --json status ib
json_valid status
run_gg kill ib

# (e) the busy GPU kept ig alive past its idle limit; once it rests, ig is idle
# although another GPU of the node is still busy
if [ -n "$LOAD" ]; then
	status_says ig 'active: a GPU of the job is busy' && ok "ig: status says why it is active: its GPU ($GI) is busy" ||
		not_ok "ig: status: $("$GRIDGPU" status ig 2>&1 | grep -e activity -e state)"
	poll 60 sh -c "[ \$((\$(date +%s) - $t_g)) -ge 75 ]"
	expect_eq "ig: still ready past its idle limit ($(($(date +%s) - t_g)) s after it was ready), its GPU busy" "$(sfield ig state)" ready
	printf '%s 71\n' "$GO" >"$LOAD"
	poll_ce 60 status_says ig '^activity: *idle since ' && ok "ig: its GPU at rest, another ($GO) busy: idle" ||
		not_ok "ig: after its GPU rested: $("$GRIDGPU" status ig 2>&1 | grep -e activity)"
	: >"$LOAD"
	run_gg kill ig
fi

# (c) the notices on the terminals
poll 120 grep -q -E 'ends in [0-9]+ s: its walltime' "$T_TMP/id.log" &&
	grep -q 'ends in 1 min: its walltime (2 min) runs out' "$T_TMP/id.log" &&
	ok "id: the terminal got both notices before the walltime (1 min, 10 s)" ||
	not_ok "id: $(cat "$T_TMP/id.log" "$T_TMP/id.out")"
! grep -q 'if it stays idle' "$T_TMP/id.log" && ok "id: ... and none of idleness (no idle limit)" || not_ok "id: $(cat "$T_TMP/id.log")"
poll_ce 240 state_is ic finished && ok "ic: the session with an idle terminal ended ($(($(date +%s) - t_c)) s after the login)" ||
	not_ok "ic: still $(sfield ic state): $(cat "$T_TMP/ic.log")"
expect_eq "ic: ... for idleness" "$(sfield ic reason)" "idle for longer than the idle limit"
# ic.log: the 40 s notice, typed, (active again) the 40 s and 10 s notices, the
# end; a notice says the seconds left when it came (left()): over 10 s is the
# first lead's
left='function left() { return match($0, /ends in [0-9]+ s if it stays idle \(idle limit 1 min\)/) ? substr($0, RSTART + 8, index(substr($0, RSTART + 8), " ") - 1) + 0 : -1 }'
seq=$(awk "$left"'{ n = left(); if ($2 == "typed") print "typed"; else if (n > 10) print "40s"; else if (n > 0) print "10s"; else print "?" }' "$T_TMP/ic.log" | tr '\n' ' ')
expect_eq "ic: the terminal got the notices: 40 s before, typed, (active again) 40 s and 10 s before" "$seq" "40s typed 40s 10s "
t1=$(awk "$left"'left() > 10 {print $1; exit}' "$T_TMP/ic.log")
t2=$(awk "$left"'left() > 0 && left() <= 10 {print $1; exit}' "$T_TMP/ic.log")
# without the typing as activity the 10 s notice would come 30 s after the
# first; after it, the idle time runs again from the typing: 50 s at least
[ -n "$t1" ] && [ -n "$t2" ] && [ $((t2 - t1)) -ge 45 ] &&
	ok "ic: typing on the terminal was activity (the next notices came $((t2 - t1)) s after the first)" ||
	not_ok "ic: notices at $t1, $t2"
# id's notices are seen: its end need not be waited for (its terminal's ssh ends)
run_gg kill id
wait
run_gg clean --all
done_testing
