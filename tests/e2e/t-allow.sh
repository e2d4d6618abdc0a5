#!/bin/sh
# A site's allow_from: the session's sshd admits connections only from the
# addresses the site profile names (its jump hosts). At the test site the last
# jump host (jump2, in the site's namespace) reaches the session's sshd from
# 127.0.0.1: a session allowing that address takes `connect` through both
# jumps, one allowing only another address refuses it, at once and saying
# why. Bad addresses are refused at input (exit 2, nothing saved) and, on the
# node, by the launcher before any sshd starts.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1],""))' "$1"; }
job_of() { field job_id <"$XDG_STATE_HOME/gridgpu/records/$1.json"; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "proxy made" test -s "$X509_USER_PROXY"
check "site profile with allow-from (jump2's address) added" "$GRIDGPU" site add tb \
	--ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--worker-address 127.0.0.1 --connect-deadline 10m --allow-from 127.0.0.1
run_gg --json site show tb
json_valid site
expect_eq "site show --json: allow_from" "$(printf '%s' "$OUT" | field allow_from)" "['127.0.0.1']"
run_gg site show tb
expect_eq "site show: the allow_from line" "$(printf '%s\n' "$OUT" | grep '^allow_from')" "allow_from = 127.0.0.1"

# --- bad addresses: exit 2 naming the entry, nothing changed ----------------
for bad in '127.0.0.1 ' '127.0.0.1,,::1' 'jump2.example' '10.1.2.3/8' '!127.0.0.1' '127.0.0.*' \
	'::ffff:127.0.0.1' '10.0.0.0/33' "$(printf '127.0.0.1\nMatch all')"; do
	expect_fail "site set allow-from '$bad' refused" 2 "--allow-from '" site set tb allow-from "$bad"
done
expect_fail "site add --allow-from with a mask too wide for its address refused, the fix named" 2 \
	"did you mean 10.0.0.0/8?" site add bad --ce "$GG_TB_CE_URL" --allow-from 10.1.2.3/8
run_gg site show tb
expect_eq "the refused values changed nothing" "$(printf '%s\n' "$OUT" | grep '^allow_from')" \
	"allow_from = 127.0.0.1"
cfg=$XDG_CONFIG_HOME/gridgpu/config
cp "$cfg" "$T_TMP/config.good"
printf 'allow_from = 127.0.0.1 127.0.0.2\n' >>"$cfg"
expect_fail "a hand-edited allow_from with a blank refused at load" 2 "allow_from: '127.0.0.1 127.0.0.2'" site show tb
cp "$T_TMP/config.good" "$cfg"

# --- admitted: connect through both jumps ----------------------------------
run_gg request --name a1 --walltime 1h
expect_eq "request (allow-from 127.0.0.1) reaches ready" "$RC" 0
JOB=$(job_of a1)
SC=$GG_TB_SESSION_DIR/$JOB/.gridgpu
user=$(sed -n 's/^AllowUsers //p' "$SC/sshd_config")
expect_eq "the session's sshd admits the user from 127.0.0.1 only" "$user" "$GG_TB_JOB_USER@127.0.0.1"
grep -qx "Match Address 127.0.0.1" "$SC/sshd_config" && ok "sshd_config: the banner dropped for the admitted" ||
	not_ok "sshd_config: Match Address ($(cat "$SC/sshd_config"))"
run_gg connect a1 -- id -un
expect_eq "connect through the jumps from an admitted address" "$RC $OUT" "0 $GG_TB_JOB_USER"
printf '%s' "$ERR" | grep -q "admits ssh connections only" && not_ok "no refusal banner for the admitted ($ERR)" ||
	ok "no refusal banner for the admitted"

# --- refused: another address only -----------------------------------------
check "site set allow-from to another address" "$GRIDGPU" site set tb allow-from 192.0.2.0/24,2001:db8::/32
run_gg request --name r1 --walltime 1h
expect_eq "request (allow-from 192.0.2.0/24) reaches ready (the probe does not log in)" "$RC" 0
JOB2=$(job_of r1)
t0=$(date +%s)
"$GRIDGPU" connect r1 -- echo in >"$T_TMP/r1.out" 2>"$T_TMP/r1.err" </dev/null &
cpid=$!
poll 60 sh -c "! kill -0 $cpid" || { kill "$cpid"; not_ok "connect from a refused address ends (it hung)"; }
wait "$cpid"
rc=$?
expect_eq "connect from an address not allowed fails as ssh does, nothing run" "$rc $(cat "$T_TMP/r1.out")" "255 "
[ $(($(date +%s) - t0)) -lt 60 ] && ok "the refusal comes at once" || not_ok "the refusal took $(($(date +%s) - t0)) s"
grep -q "this session admits ssh connections only from 192.0.2.0/24,2001:db8::/32 (the site's allow_from)" "$T_TMP/r1.err" &&
	grep -q "Permission denied" "$T_TMP/r1.err" && ok "connect says why: the site's allow_from" ||
	not_ok "connect says why ($(cat "$T_TMP/r1.err"))"
grep -q "User $GG_TB_JOB_USER from 127.0.0.1 not allowed because not listed in AllowUsers" \
	"$GG_TB_SESSION_DIR/$JOB2/.gridgpu/sshd.log" && ok "the session's sshd logged the refusal" ||
	not_ok "sshd log ($(cat "$GG_TB_SESSION_DIR/$JOB2/.gridgpu/sshd.log"))"
run_gg kill a1 r1
expect_eq "both sessions killed" "$RC" 0

# --- the launcher checks the list again (text from the client) -------------
# Run as it is on a node, in a directory of its own: a list that is not
# addresses ends it before any sshd is configured or started.
for bad in '127.0.0.1 Match all' '127.0.0.1,,::1' '' "$(printf '127.0.0.1\nPermitRootLogin yes')"; do
	d=$(mktemp -d "$T_TMP/node.XXXXXX")
	ssh-keygen -q -t ed25519 -N '' -f "$d/k" && cp "$d/k.pub" "$d/gridgpu-authorized_keys"
	(cd "$d" && sh "$GG_TOP/libexec/gridgpu/session-launcher" -d 30 -t 1 -A "$bad") >"$d/out" 2>&1
	rc=$?
	st=$(field state <"$d/gridgpu-session.json")
	expect_eq "launcher -A '$bad': ended, no sshd configured" "$rc $st $(test -e "$d/.gridgpu/sshd_config" && echo sshd_config)" "1 ended "
	grep -q "allow_from list is not addresses" "$d/gridgpu-session.json" && ok "launcher -A '$bad': the reason published" ||
		not_ok "launcher -A '$bad': reason ($(cat "$d/gridgpu-session.json"))"
done
done_testing
