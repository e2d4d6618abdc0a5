#!/bin/sh
# Interactive sessions against the real test site: request → ready with the
# host key pinned → ssh through both jump hosts → list/status → kill; the
# connect deadline; tokens; and the faults of the request and sessions issues.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config

# Wait (bounded) until a command's output matches: we wait on the CE, an
# outside system, so polling with a deadline is the honest way.
wait_for() { # seconds pattern command...
	secs=$1 pat=$2; shift 2
	end=$(( $(date +%s) + secs ))
	while [ "$(date +%s)" -lt "$end" ]; do
		"$@" 2>/dev/null | grep -qE "$pat" && return 0
		sleep 1
	done
	return 1
}
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1],""))' "$1"; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "proxy made for the session tests" test -s "$X509_USER_PROXY"
check "site profile added" "$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" \
	--jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--worker-address 127.0.0.1 --connect-deadline 10m
# values that cannot be written into the ssh config: refused, nothing saved
expect_fail "site add: --identity with a newline refused" 2 "--identity: a newline" \
	site add bad --ce "$GG_TB_CE_URL" --identity "$(printf '/k/id\nProxyCommand touch /tmp/x')"
expect_fail "site add: --known-hosts with '\"' refused" 2 "--known-hosts" \
	site add bad --ce "$GG_TB_CE_URL" --known-hosts '/k/a"b'
expect_fail "site add: a jump host with %d refused" 2 "jump host" \
	site add bad --ce "$GG_TB_CE_URL" --jump 'u@gw%d'
expect_fail "request: a session name like a host refused" 2 "--name" request --name github.com
expect_fail "request: --identity with '\"' refused" 2 "--identity" request --identity '/k/a"b'
run_gg site show bad
expect_eq "nothing saved for the refused site" "$RC" 5

# --- a session, end to end -------------------------------------------------
run_gg request --name s1 --walltime 2h
expect_eq "request --wait reaches ready" "$RC" 0
printf '%s' "$OUT" | grep -q "gridgpu connect s1" && ok "request says how to connect" || not_ok "request says how to connect"
run_gg --json status s1 --no-sync
json_valid status
JOB=$(printf '%s' "$OUT" | field job_id)
PORT=$(printf '%s' "$OUT" | field port)
UID12=$(field uid <"$XDG_STATE_HOME/gridgpu/records/s1.json")
expect_eq "status --json: ready" "$(printf '%s' "$OUT" | field state)" ready
# The pinned key is the one the launcher made on the node (read on the site side).
made=$(awk '{print $1" "$2}' "$GG_TB_SESSION_DIR/$JOB/.gridgpu/hostkey.pub" 2>/dev/null)
pinned=$(awk -v a="gridgpu-$UID12" '$1 == a {print $2" "$3}' "$XDG_CONFIG_HOME/gridgpu/ssh/known_hosts")
expect_eq "pinned host key = the launcher's" "$pinned" "$made"
check "ssh -F config s1 true (both jump hosts, StrictHostKeyChecking yes)" ssh -F "$CFG" -o BatchMode=yes s1 true
G=$(ssh -G -F "$CFG" s1)
printf '%s\n' "$G" | grep -qx "proxyjump gridgpu-hop.tb.2" && printf '%s\n' "$G" | grep -qx "stricthostkeychecking true" &&
	ok "ssh -G shows the hops and strict checking" || not_ok "ssh -G shows the hops and strict checking"
hop2=$(ssh -G -F "$CFG" gridgpu-hop.tb.2 | grep '^proxyjump ')
expect_eq "hop 2 goes through hop 1" "$hop2" "proxyjump gridgpu-hop.tb.1"
run_gg connect s1 -- readlink /proc/self/ns/net
expect_eq "connect -- CMD runs inside the site's namespace" "$OUT" "$(ip netns exec "$GG_TB_NETNS" readlink /proc/self/ns/net)"
run_gg connect s1 -- id -un
expect_eq "connect lands as the mapped user" "$OUT" "$GG_TB_JOB_USER"
# After a login the launcher rewrites its session file; status reads it again
# for a ready session: the connect deadline no longer applies, the walltime does.
run_gg connect s1 -- true
wait_for 30 '^logins: +[1-9]' "$GRIDGPU" status s1 && ok "status after a login: logins >= 1" ||
	not_ok "status after a login: logins ($("$GRIDGPU" status s1 2>&1))"
run_gg status s1
! printf '%s\n' "$OUT" | grep -q '^connect by:' && printf '%s\n' "$OUT" | grep -Eq '^ends by: .*\(in 1h[0-9]+m\) \(walltime\)$' &&
	printf '%s\n' "$OUT" | grep -q '^as of: ' && ok "status after a login: no connect deadline pending, the walltime's end, as of when" ||
	not_ok "status after a login: deadlines ($OUT)"
run_gg --json status s1
json_valid status
expect_eq "status --json after a login: the deadline is the walltime" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["deadline"]["kind"], d["logins"] >= 1, d["first_login"] <= d["activity_as_of"])')" "walltime True True"
run_gg list
expect_eq "list after a login: LEFT is the walltime's (2h), not the connect deadline's (10m)" "$(printf '%s\n' "$OUT" | awk '$1 == "s1" {print substr($7, 1, 2)}')" "1h"
run_gg -v status s1
printf '%s\n' "$ERR" | grep -Eq "^gridgpu: GET https://[^ ]+/jobs/$JOB/session/gridgpu-session.json -> 200 \([0-9]+ ms\)$" &&
	ok "status -v: each HTTP request, its status and time" || not_ok "status -v ($ERR)"
run_gg -v list --sync
printf '%s\n' "$ERR" | grep -q "^gridgpu: GET https://" && ok "list --sync -v: the HTTP requests" || not_ok "list --sync -v ($ERR)"
if ssh -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
	-p "$PORT" -i "$XDG_CONFIG_HOME/gridgpu/ssh/keys/$UID12" "$GG_TB_JOB_USER@127.0.0.1" true 2>"$T_TMP/direct"; then
	not_ok "the session's sshd is not reachable directly"
else
	grep -q "refused" "$T_TMP/direct" && ok "the session's sshd is not reachable directly" || not_ok "direct ssh fails for the right reason: $(cat "$T_TMP/direct")"
fi
# A wrong pinned key is refused.
cp "$XDG_CONFIG_HOME/gridgpu/ssh/known_hosts" "$T_TMP/kh.good"
sed "s|^gridgpu-$UID12 .*|gridgpu-$UID12 $(awk '{print $1" "$2}' "$GG_TB_SSH_KEY.pub")|" "$T_TMP/kh.good" >"$XDG_CONFIG_HOME/gridgpu/ssh/known_hosts"
if ssh -F "$CFG" -o BatchMode=yes -o ControlMaster=no -o ControlPath=none s1 true 2>"$T_TMP/mitm"; then
	not_ok "a wrong pinned host key is refused"
else
	grep -q "Host key verification failed" "$T_TMP/mitm" && ok "a wrong pinned host key is refused" || not_ok "a wrong pinned host key is refused: $(cat "$T_TMP/mitm")"
fi
cp "$T_TMP/kh.good" "$XDG_CONFIG_HOME/gridgpu/ssh/known_hosts"
# VS Code style: plain ssh after --install, in a fresh HOME.
run_gg ssh-config --install
expect_eq "ssh-config --install" "$RC" 0
run_gg ssh-config --install
printf '%s' "$ERR" | grep -q "already included" && ok "--install adds the Include once" || not_ok "--install adds the Include once"
# OpenSSH takes ~ from the password database, not from $HOME: give it the
# temporary HOME in a private mount namespace, as a fresh user would have it.
as_home() { unshare -m sh -c 'mount --bind "$HOME" "$(getent passwd "$(id -un)" | cut -d: -f6)" && exec "$@"' sh "$@"; }
check "plain 'ssh s1 true' works after --install" as_home ssh -o BatchMode=yes s1 true
check "scp to the session" as_home scp -q -o BatchMode=yes "$GG_TB_CA_CERT" s1:gg-scp-test
check "the copied file is there" sh -c "ssh -F '$CFG' -o BatchMode=yes s1 cat gg-scp-test | cmp - '$GG_TB_CA_CERT'"
run_gg ssh-config --windows
printf '%s' "$OUT" | grep -q "Host s1" && ! printf '%s' "$OUT" | grep -q ControlMaster &&
	ok "ssh-config --windows (no ControlMaster)" || not_ok "ssh-config --windows"
run_gg --json list
json_valid list
expect_eq "list --json shows the session" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([r["name"] for r in json.load(sys.stdin)["items"]])')" "['s1']"
run_gg list --sync
printf '%s' "$OUT" | grep -Eq '^s1 +tb +session +ready' && ok "list --sync: ready" || not_ok "list --sync: $OUT"

# kill: the job ends on the CE and the sshd is gone.
run_gg kill s1
expect_eq "kill" "$RC" 0
wait_for 60 'KILLED|FINISHED|FAILED|GONE' ce_state "$JOB" && ok "the CE ended the job after kill ($(ce_state "$JOB"))" || not_ok "the CE ended the job after kill ($(ce_state "$JOB"))"
if wait_for 30 '^gone$' sh -c "ip netns exec $GG_TB_NETNS ss -ltn | grep -q ':$PORT ' || echo gone"; then
	ok "the session's sshd is gone after kill"
else
	not_ok "the session's sshd is gone after kill"
fi
test -f "$CFG" && ! grep -q "Host s1" "$CFG" && ok "the ssh block of a killed session is removed" || not_ok "the ssh block of a killed session is removed"
[ -e "$XDG_CONFIG_HOME/gridgpu/ssh/keys/$UID12" ] && not_ok "the session key is removed" || ok "the session key is removed"
expect_fail "connect to a killed session" 5 "the session was killed" connect s1
expect_fail "freeze --session of a killed session" 5 "the session was killed: its sandbox is gone with it" freeze --session s1 --path /tmp -o "$T_TMP/k.sif"
printf '%s' "$ERR" | grep -q "gridgpu connect" && not_ok "freeze --session of a killed session suggests connect: $ERR" || ok "freeze --session of a killed session does not suggest connect"
run_gg kill s1
printf '%s' "$ERR" | grep -q "s1 was killed already" && ok "kill again: 's1 was killed already'" || not_ok "kill again: $ERR"
run_gg clean s1
expect_eq "clean forgets the killed session" "$RC" 0
expect_fail "unknown session name" 5 "no such session or job" status s1

# --- a session nobody connects to ends by itself ----------------------------
run_gg request --name s2 --walltime 1h --connect-deadline 4s
expect_eq "request s2 ready" "$RC" 0
wait_for 90 '^s2 +tb +session +finished' "$GRIDGPU" list --sync && ok "an unused session ends at its connect deadline" || not_ok "an unused session ends at its connect deadline"
run_gg status s2 --no-sync
printf '%s' "$OUT" | grep -q "nobody connected before the connect deadline" && ok "status says why it ended" || not_ok "status says why it ended: $OUT"

# --- bearer token instead of the proxy --------------------------------------
BEARER_TOKEN=$("$GG_TB_MINT_TOKEN") run_gg request --name s3 --token --walltime 30m
expect_eq "request with a bearer token reaches ready" "$RC" 0
check "ssh into the token session" ssh -F "$CFG" -o BatchMode=yes s3 true
expect_fail "clean of a ready session: kill it first" 2 "clean s3: it is ready: end it with 'gridgpu kill s3' first" clean s3
BEARER_TOKEN=$("$GG_TB_MINT_TOKEN") run_gg kill s3
expect_eq "kill the token session" "$RC" 0

# --- a job submitted but never recorded (gridgpu killed in between) is adopted
uid=0123abcd4567
curl -s --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" --capath "$GG_TB_CA_DIR" -H 'Accept: application/json' \
	--data-binary "&(executable=\"/bin/sh\")(arguments=\"-c\" \"sleep 30\")(jobname=\"gridgpu-$uid\")" \
	"$GG_TB_REST_URL/jobs?action=new" >"$T_TMP/orphan.json"
ojob=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job"]["id"])' "$T_TMP/orphan.json")
now=$(date +%s)
printf '{"version":1,"kind":"session","name":"orphan","uid":"%s","site":"tb","ce":"%s","state":"requested","auth":"proxy","created":%s,"walltime":600}\n' \
	"$uid" "$GG_TB_CE_URL" "$now" >"$XDG_STATE_HOME/gridgpu/records/orphan.json"
chmod 600 "$XDG_STATE_HOME/gridgpu/records/orphan.json"
run_gg list --sync
printf '%s' "$ERR" | grep -q "adopted orphan" && ok "list --sync adopts a job that was never recorded" || not_ok "orphan adoption: $ERR"
run_gg --json status --no-sync orphan
json_valid status
expect_eq "the adopted record has the CE's job id" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("job_id"))')" "$ojob"
run_gg kill orphan
expect_eq "the adopted job can be killed" "$RC" 0

# --- bad input and faults ---------------------------------------------------
REC=$XDG_STATE_HOME/gridgpu/records
before=$(ls "$REC" | grep -c '\.json$')
expect_fail "unparseable walltime" 2 "invalid duration" request --walltime 4x
expect_fail "walltime with a spelled-out unit names the one meant" 2 "units are one letter: did you mean 4h?" request --walltime 4hours
expect_fail "unparseable memory" 2 "invalid size" request --memory lots
expect_fail "--gpus and --mig" 2 "exclude each other" request --gpus 1 --mig 1g.5gb
X509_USER_PROXY=$T_TMP/none expect_fail "no proxy" 3 "gridgpu proxy init" request
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin --valid 30m -q \
	--out "$T_TMP/short" <"$GG_TB_USER_KEY_PASS_FILE"
X509_USER_PROXY=$T_TMP/short expect_fail "proxy shorter than the walltime" 3 "proxy init --valid 5h" request --walltime 4h
BEARER_TOKEN=$("$GG_TB_MINT_TOKEN" --exp -60) expect_fail "expired token" 3 "expired" request --token
expect_fail "CE down" 4 "cannot connect" request --ce https://localhost:1/arex
expect_fail "CE URL of another service" 4 "" request --ce "https://localhost:${GG_TB_JUMP1_PORT:-9522}/arex"
X509_CERT_DIR=$GG_TB_BAD_CA_DIR expect_fail "untrusted CE certificate" 4 "TLS" request
# the CE's own address under a name its certificate does not hold (DNS:localhost,
# IP:127.0.0.1): the IPv4-mapped IPv6 form reaches it on any machine
expect_fail "CE host name mismatch" 4 "does not match its name or is not trusted" request --ce "https://[::ffff:127.0.0.1]:${GG_TB_REST_PORT:-9543}/arex"
after=$(ls "$REC" | grep -c '\.json$')
[ "$before" -ge 1 ] && [ "$after" = "$before" ] && ok "refused requests leave no record" || not_ok "refused requests leave no record ($before → $after)"
run_gg request --name s4 --queue nosuchqueue --walltime 10m
[ "$RC" -ne 0 ] && printf '%s' "$ERR" | grep -qi "queue" && ok "CE refuses the job: its reason is shown" || not_ok "CE refuses the job: $RC $ERR"
# A launcher that fails on the node: the CE's diagnostics reach the user.
mkdir -p "$T_TMP/fake1" "$T_TMP/fake2" "$T_TMP/fake3"
printf '#!/bin/sh\necho "gridgpu-launcher: sshd is not installed on this node (install openssh-server)" >&2\nexit 1\n' >"$T_TMP/fake1/session-launcher"
GRIDGPU_LIBEXEC_DIR=$T_TMP/fake1 run_gg request --name s5 --walltime 10m
[ "$RC" -eq 6 ] && printf '%s' "$ERR" | grep -q "sshd is not installed" && ok "launcher failure: the node's reason in the error (exit 6)" || not_ok "launcher failure: exit $RC: $ERR"
run_gg status s5 --no-sync
printf '%s' "$OUT" | grep -q "state: *failed" && ok "the failed session is marked failed" || not_ok "the failed session is marked failed"
# A session file that does not parse is read again while the job runs (issue
# 45: it is never a final state); the job ending with it so, the error says why.
printf '#!/bin/sh\necho "{not json" > gridgpu-session.json\nsleep 15\n' >"$T_TMP/fake2/session-launcher"
GRIDGPU_LIBEXEC_DIR=$T_TMP/fake2 run_gg request --name s6 --walltime 10m
[ "$RC" -eq 6 ] && printf '%s' "$ERR" | grep -q "ended while the session file the node published could not be read: not valid JSON" &&
	! printf '%s' "$ERR" | grep -q "session s6: failed" &&
	ok "malformed session file: not final while the job runs; its end says why" || not_ok "malformed session file: $RC $ERR"
run_gg status s6 --no-sync
printf '%s' "$OUT" | grep -q "state: *finished" && ok "the session with a malformed file is finished, not failed" || not_ok "malformed session file, status: $OUT"
printf '#!/bin/sh\necho "{\\"state\\":\\"ready\\",\\"node\\":\\"127.0.0.1\\",\\"port\\":22,\\"user\\":\\"gguser\\",\\"host_key\\":\\"ssh-ed25519 AAAAnotakey\\"}" > gridgpu-session.json\nsleep 15\n' >"$T_TMP/fake3/session-launcher"
GRIDGPU_LIBEXEC_DIR=$T_TMP/fake3 run_gg request --name s7 --walltime 10m
[ "$RC" -eq 6 ] && printf '%s' "$ERR" | grep -q "could not be read: host key" && ok "a host key that does not parse is never taken (the session does not become ready)" || not_ok "bad host key: $RC $ERR"
# "ready" means the sshd answered through both jump hosts with the key pinned
# from the CE (libssh2 probe). A launcher that publishes a well-formed key that
# is not the sshd's: the sshd behind the hops (the worker's own) answers with
# its real key, and the session is refused.
ssh-keygen -q -t ed25519 -N "" -C not-the-sshd -f "$T_TMP/notsshd"
MITM=$(awk '{print $1" "$2}' "$T_TMP/notsshd.pub")
mkdir -p "$T_TMP/fake4" "$T_TMP/fake5"
publish='#!/bin/sh\necho "{\\"state\\":\\"ready\\",\\"node\\":\\"127.0.0.1\\",\\"port\\":%s,\\"user\\":\\"gguser\\",\\"host_key\\":\\"%s\\"}" > gridgpu-session.json\nsleep 60\n'
# shellcheck disable=SC2059
printf "$publish" "${GG_TB_WORKER##*:}" "$MITM" >"$T_TMP/fake4/session-launcher"
GRIDGPU_LIBEXEC_DIR=$T_TMP/fake4 run_gg request --name s8 --walltime 10m
[ "$RC" -eq 6 ] && printf '%s' "$ERR" | grep -q "not the one pinned from the CE" && ok "an sshd answering with another key than the pinned one: refused, exit 6" ||
	not_ok "an sshd with another key: $RC $ERR"
run_gg --json status s8 --no-sync
json_valid status
expect_eq "... the session is failed, the reason kept" "$(printf '%s' "$OUT" | field state) $(printf '%s' "$OUT" | field reason | grep -c man-in-the-middle)" "failed 1"
# A launcher that publishes a port nobody listens on: published, not ready.
# shellcheck disable=SC2059
printf "$publish" 1 "$MITM" >"$T_TMP/fake5/session-launcher"
# How far the job got in 5 s depends on the CE and its batch system (queued or
# starting); the giving up does not. Then, once the launcher has published,
# connect's wait gives up in state starting.
GRIDGPU_LIBEXEC_DIR=$T_TMP/fake5 run_gg request --name s9 --walltime 10m --timeout 5s
[ "$RC" -eq 4 ] && printf '%s' "$ERR" | grep -Eq "request s9: not ready after 5s \(state (queued|starting)" &&
	ok "an sshd that does not answer: not ready, request gives up after --timeout (exit 4)" ||
	not_ok "an sshd that does not answer: $RC $ERR"
s9_published() { "$GRIDGPU" status s9 2>/dev/null | grep -q "(published, not answering yet)"; }
poll 120 s9_published || not_ok "s9: the launcher did not publish in 120 s: $("$GRIDGPU" status s9 2>&1)"
run_gg connect s9 --timeout 5s
[ "$RC" -eq 4 ] && printf '%s' "$ERR" | grep -q "connect s9: not ready after 5s (state starting" &&
	ok "published, sshd not answering: connect --timeout gives up in state starting (exit 4)" ||
	not_ok "connect --timeout to a published session whose sshd does not answer: $RC $ERR"
run_gg -v status s9
printf '%s\n' "$ERR" | grep -Eq '^gridgpu: ssh hop 1/3: jump host 1 \([^)]*\): host key checked, logged in \([0-9]+ ms\)$' &&
	printf '%s\n' "$ERR" | grep -q '^gridgpu: ssh hop 3/3: the sshd of session s9 ' &&
	ok "status -v: each ssh hop of the probe, and where it stopped" || not_ok "status -v: ssh hops ($ERR)"
printf '%s' "$OUT" | grep -q "state: *starting" && printf '%s' "$OUT" | grep -q "(published, not answering yet)" &&
	printf '%s' "$OUT" | grep -q "^ssh check: .*the sshd of session s9" && ok "status: published, not answering, and why" ||
	not_ok "status: published, not answering ($OUT)"
expect_fail "connect --no-wait to a session whose sshd does not answer" 4 "not ready yet" connect s9 --no-wait
test -f "$CFG" && ! grep -q "Host s6\|Host s7\|Host s8" "$CFG" && ok "refused sessions get no ssh block" || not_ok "refused sessions get no ssh block"
# A jump host whose key is not the one in the site's known_hosts: the probe
# refuses it; request says which hop and why at once (exit 4, kind host-key),
# and the session is kept for when the site's file is mended.
J1=${GG_TB_JUMP1#*@}
awk -v h="[${J1%:*}]:${J1##*:}" -v k="$MITM" '$1 == h {print h, k; next} {print}' "$GG_TB_SSH_KNOWN_HOSTS" >"$T_TMP/wrong_known_hosts"
"$GRIDGPU" site add tbk -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$T_TMP/wrong_known_hosts" --worker-address 127.0.0.1
run_gg --json --site tbk request --name s10 --walltime 10m
json_valid error
[ "$RC" = 4 ] && printf '%s' "$ERR" | grep -q "host key of jump host 1 .* does not match" &&
	[ "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["kind"])')" = host-key ] &&
	ok "a jump host with another key than the site's known_hosts: exit 4, names the hop, kind host-key" ||
	not_ok "a jump host with another key: $RC $OUT $ERR"
run_gg --json status s10 --no-sync
expect_eq "... the session is kept, starting" "$(printf '%s' "$OUT" | field state)" starting
# One CE, one session made with the proxy and one with a token: each is killed
# with its own credential, the other kind standing in when its own is not at
# hand. (Killing both with the first one's credential, as gridgpu once did,
# fails here for both: there is no proxy.)
BEARER_TOKEN=$("$GG_TB_MINT_TOKEN") run_gg request --token --name kt --walltime 10m --no-wait
rc_kt=$RC
run_gg request --name kp --walltime 10m --no-wait
expect_eq "a session with the token, one with the proxy, on one CE" "$rc_kt $RC" "0 0"
X509_USER_PROXY=$T_TMP/no-proxy BEARER_TOKEN=$("$GG_TB_MINT_TOKEN") run_gg kill kp kt
st_kt=$("$GRIDGPU" --json status kt --no-sync | field state)
st_kp=$("$GRIDGPU" --json status kp --no-sync | field state)
expect_eq "kill of a proxy's and a token's session with only a token at hand: both killed" "$RC $st_kp $st_kt" "0 killed killed"
run_gg kill s6 s7 s8 s9 s10
run_gg clean
test -d "$REC" && [ "$(ls "$REC" | grep -c '\.json$')" = 0 ] && ok "clean removes the ended records" ||
	not_ok "clean removes the ended records (left: $(ls "$REC" | tr '\n' ' '); clean: $RC $ERR)"
# Wrong permissions on the generated config directory are refused.
chmod 755 "$XDG_CONFIG_HOME/gridgpu/ssh"
expect_fail "ssh config dir readable by others" 1 "chmod 700" ssh-config
chmod 700 "$XDG_CONFIG_HOME/gridgpu/ssh"
# ~/.ssh/config that cannot be changed on --install (root ignores modes: make
# the file immutable where the file system allows it).
HOME2=$T_TMP/home2; mkdir -p "$HOME2/.ssh"; printf 'Host x\n' >"$HOME2/.ssh/config"; chmod 400 "$HOME2/.ssh/config"
if [ "$(id -u)" != 0 ] || chattr +i "$HOME2/.ssh/config" 2>/dev/null; then
	HOME=$HOME2 expect_fail "read-only ~/.ssh/config on --install" 1 "$HOME2/.ssh/config" ssh-config --install
	expect_eq "read-only ~/.ssh/config is unchanged" "$(cat "$HOME2/.ssh/config" 2>&1)" "Host x"
	chattr -i "$HOME2/.ssh/config" 2>/dev/null
else
	T_N=$((T_N + 1)); echo "ok $T_N - # SKIP read-only ~/.ssh/config: chattr +i not supported here"
fi
done_testing
