#!/bin/sh
# Jump hosts that ask for a second factor (issue 49): the test site's jumpotp
# requires publickey,keyboard-interactive with a TOTP code (pam_oath). A profile
# reaches the site through it (jumpotp, jump1, jump2; second_factor 1).
# Without a login open, every command that goes through it fails at once (one
# line, exit 4, naming 'gridgpu login otp'); a wrong code at 'gridgpu login' is
# one line and exit 3; after one login with the code typed on a terminal, plain
# ssh and scp, request (its readiness probe), connect and freeze --session (over
# OpenSSH and over libssh2) all go through with no further prompt: the jump
# host's log shows one keyboard-interactive login for the whole run.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
# the masters' sockets in a directory of this test's own
export XDG_RUNTIME_DIR="$T_TMP/rt"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config
PTY="python3 $GG_TOP/tests/e2e/pty-run.py"
cd "$T_TMP" || exit 1
if [ -z "${GG_TB_JUMPOTP:-}" ]; then
	not_ok "the test site has no TOTP jump host (started before tests/testbed/totp.sh: site-down, then site-up)"
	done_testing
	exit
fi
OTPLOG=$GG_TB_LOG_DIR/jumpotp.log
# (grep -c prints 0 and fails when none matched: one number either way)
kbd() { _n=$(grep -c 'Accepted keyboard-interactive' "$OTPLOG" 2>/dev/null); echo "${_n:-0}"; }
# within N s (a bound, not a timing target): the last run's $RC, $ERR
run_within() { # SECONDS ARGS...
	_s=$1
	shift
	timeout "$_s" "$GRIDGPU" "$@" </dev/null >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
	OUT=$(cat "$T_TMP/.stdout") ERR=$(cat "$T_TMP/.stderr")
}
# one line on stderr, exit STATUS, naming the command to run
fails_fast() { # DESC STATUS
	if [ "$RC" = "$2" ] && [ "$(printf '%s\n' "$ERR" | grep -c .)" = 1 ] &&
		printf '%s' "$ERR" | grep -q "run 'gridgpu login otp'"; then
		ok "$1: one line, exit $2, names 'gridgpu login otp'"
	else
		not_ok "$1: exit $RC (124: no answer within the bound), want $2: $ERR"
	fi
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site add with --second-factor 1 --control-persist 5m" "$GRIDGPU" site add otp -q --ce "$GG_TB_CE_URL" \
	--jump "$GG_TB_JUMPOTP" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --runtime bwrap \
	--second-factor 1 --control-persist 5m
expect_fail "--second-factor 0 refused" 2 "expected a jump host's number" site set otp second-factor 0
expect_fail "--second-factor x refused" 2 "expected a jump host's number" site set otp second-factor x
"$GRIDGPU" ssh-config >/dev/null
G1=$(ssh -G -F "$CFG" gridgpu-hop.otp.1 </dev/null 2>/dev/null)
printf '%s\n' "$G1" | grep -qx "controlpath $XDG_RUNTIME_DIR/gridgpu-cm/hop.otp.1" &&
	printf '%s\n' "$G1" | grep -qx "controlmaster false" && printf '%s\n' "$G1" | grep -qx "batchmode yes" &&
	ok "the config's hop 1 rides on its master (ControlPath, ControlMaster no, BatchMode)" ||
	not_ok "hop 1's config: $(printf '%s\n' "$G1" | grep -E '^(controlpath|controlmaster|batchmode) ')"
G2=$(ssh -G -F "$CFG" gridgpu-hop.otp.2 </dev/null 2>/dev/null)
printf '%s\n' "$G2" | grep -q "^controlpath " && not_ok "hop 2 has a ControlPath of its own" || ok "hop 2 has no master of its own"
k0=$(kbd)

# ---- no login open: at once, one line, exit 4 ----------------------------------------
run_within 2 login --check
fails_fast "login --check without a login" 4
run_within 2 request --name nm --walltime 1h
fails_fast "request without a login" 4
run_gg list
expect_eq "the refused request recorded nothing" "$(printf '%s' "$OUT" | grep -c nm)" 0
check "plain ssh without a login: refused, no prompt (BatchMode)" sh -c \
	"! timeout 10 ssh -F '$CFG' gridgpu-hop.otp.1 true </dev/null"
expect_fail "login without a terminal: refused" 2 "needs a terminal" login otp

# ---- a wrong code: one line, exit 3 --------------------------------------------------
good=$("$GG_TB_TOTP_CODE" "$GG_TB_DIR")
n=$(printf '%s' "$good" | sed 's/^0*//')
printf '%06d\n' $(((${n:-0} + 1) % 1000000)) >bad.code
$PTY --code bad.code --timeout 60 -- sh -c "'$GRIDGPU' -q login otp; echo \"rc=\$?\"" >wrong.out 2>&1
grep -q "^rc=3" wrong.out && [ "$(grep -c '^gridgpu: ' wrong.out)" = 1 ] &&
	grep -q "refused the login" wrong.out && ok "login with a wrong code: one line, exit 3" ||
	not_ok "login with a wrong code: $(tr '\r' ' ' <wrong.out | tail -n 3)"
grep -qi "one-time password" wrong.out && ok "the code was asked on the terminal" || not_ok "no prompt on the terminal: $(cat wrong.out)"

# ---- the code typed once -------------------------------------------------------------
"$GG_TB_TOTP_CODE" "$GG_TB_DIR" >good.code
$PTY --code good.code --timeout 60 -- sh -c "'$GRIDGPU' login otp; echo \"rc=\$?\"" >login.out 2>&1
grep -q "^rc=0" login.out && ok "login with the code typed on a terminal" || not_ok "login: $(tr '\r' ' ' <login.out | tail -n 3)"
grep -q "$(cat good.code)" login.out && not_ok "the code was echoed" || ok "the code was not echoed"
check "login --check: open" "$GRIDGPU" login --check
check "the master's socket is in a 0700 directory of ours" sh -c \
	"[ -S '$XDG_RUNTIME_DIR/gridgpu-cm/hop.otp.1' ] && [ \"\$(stat -c %a '$XDG_RUNTIME_DIR/gridgpu-cm')\" = 700 ]"
check "login again with its login open: nothing asked, no terminal needed" sh -c "'$GRIDGPU' login otp </dev/null"
check "plain ssh through the three hops, no prompt (BatchMode)" \
	sh -c "ssh -F '$CFG' -o BatchMode=yes gridgpu-hop.otp.3 true </dev/null"
echo payload >pl
check "scp through them" scp -q -F "$CFG" -o BatchMode=yes pl gridgpu-hop.otp.3:/tmp/gg-2fa-$$
ssh -F "$CFG" gridgpu-hop.otp.3 rm -f /tmp/gg-2fa-$$ </dev/null

# ---- a session through the login ------------------------------------------------------
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs tar >/dev/null 2>&1
python3 "$GG_TOP/tests/e2e/mkdocker.py" rootfs dev.tar
run_gg request --name s2 --image dev.tar --walltime 1h
expect_eq "request: ready (the readiness probe through the master)" "$RC" 0
[ "$RC" = 0 ] || printf '%s\n' "$ERR" | sed 's/^/#   /'
run_gg connect s2 -- echo connected
expect_eq "connect through the master" "$OUT" connected
check "ssh -F config s2 (the session's own alias) through the master" ssh -F "$CFG" -o BatchMode=yes s2 true
check "scp to the session through the master" scp -q -F "$CFG" -o BatchMode=yes pl s2:pl
check "freeze --session over OpenSSH" "$GRIDGPU" -q freeze --session s2 -o s2.sif
check "freeze --session over libssh2 (through the master's ssh -W)" env GRIDGPU_BULK_SSH=libssh2 "$GRIDGPU" -q freeze --session s2 -o s2b.sif
check "the two images are the same" cmp s2.sif s2b.sif
run_gg inspect s2.sif
printf '%s' "$OUT" | grep -q "session s2:sandbox" && ok "the image's source is the session" || not_ok "inspect: $OUT"
expect_eq "one keyboard-interactive login in the whole run" "$(($(kbd) - k0))" 1

# ---- the login closed: every command fails at once -------------------------------------
check "login --exit" "$GRIDGPU" login --exit
run_within 2 login --check
fails_fast "login --check after --exit" 4
run_within 2 freeze --session s2 -o s3.sif
fails_fast "freeze --session without a login" 4
run_within 2 connect s2 -- true
fails_fast "connect without a login (no terminal)" 4
check "kill s2" "$GRIDGPU" -q kill s2
done_testing
