#!/bin/sh
# Secrets audit over a full user loop against the test site (proxy init →
# request → connect → freeze → submit → get, a token session, and the errors a
# user meets), run with umask 000 so that nothing relies on the umask:
#  - file modes: keys, proxy, records, caches, SSH config 0600 in 0700 dirs;
#    nothing gridgpu writes is writable by others;
#  - the passphrase, the bearer token and the private keys (user, proxy,
#    session) never appear in the argv of any process gridgpu starts (sampled
#    from /proc while it runs, and every execve traced with strace), in any
#    stdout, stderr, --json output or error message, or in any file under HOME
#    but the one file that holds each;
#  - core dumps are off (not dumpable, RLIMIT_CORE 0) while a decrypted key is
#    in memory, checked on the live process from /proc as another user sees it;
#  - after the key was used, no passphrase or key bytes are left in the
#    process's memory (gdb gcore at exit; the same probe finds the key while it
#    is in use, which shows the probe works).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
umask 000
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
CFG=$XDG_CONFIG_HOME/gridgpu
STATE=$XDG_STATE_HOME/gridgpu
TAG=s$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
O=$T_TMP/out
TR=$T_TMP/trace
mkdir -p "$O" "$TR"
PASS=$(cat "$GG_TB_USER_KEY_PASS_FILE")
TOKEN=$("$GG_TB_MINT_TOKEN" --exp 3600)
ROOT_PID=$$

SAMPLER_PID=""
BG=""
on_exit() {
	[ -n "$BG" ] && kill -9 "$BG" 2>/dev/null
	[ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
	# shellcheck disable=SC2046
	ce_forget $(ce_jobs_with "$TAG")
	t_cleanup
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# gg ARGS...: gridgpu with every stdout and stderr kept in $O, and every execve
# of it and its children traced (argv) when strace is there.
HAVE_STRACE=$(command -v strace >/dev/null && echo 1)
N=0
gg() {
	N=$((N + 1))
	if [ -n "$HAVE_STRACE" ]; then
		strace -f -qq -e trace=execve -e signal=none -s 65535 -o "$TR/$N" "$GRIDGPU" "$@" >"$O/$N.out" 2>"$O/$N.err"
	else
		"$GRIDGPU" "$@" >"$O/$N.out" 2>"$O/$N.err"
	fi
	RC=$?
	OUT=$(cat "$O/$N.out")
}

# ---- the /proc sampler: argv of every process below this test, while it runs -----------------
cat >"$T_TMP/sampler.py" <<'EOF'
import os, sys, time
root, stop, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
seen = set()
def parent(p):
    try:
        with open("/proc/%s/stat" % p, "rb") as f:
            s = f.read()
        return int(s[s.rindex(b")") + 2:].split()[1])
    except (OSError, ValueError):
        return None
ours = {root}
while not os.path.exists(stop):
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    par = {p: parent(p) for p in pids}
    for p in pids:
        chain, q = [], p
        while q not in ours and q not in (None, 0, 1) and len(chain) < 64:
            chain.append(q)
            q = par.get(q)
        if q in ours:
            ours.update(chain)
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    cl = f.read()
            except OSError:
                continue
            if cl:
                seen.add(cl)
    ours &= set(pids) | {root}
    time.sleep(0.001)
with open(out, "wb") as f:
    for cl in sorted(seen):
        f.write(cl.replace(b"\0", b" ").strip() + b"\n")
EOF
"$PY" "$T_TMP/sampler.py" "$ROOT_PID" "$T_TMP/sampler.stop" "$T_TMP/argv.txt" &
SAMPLER_PID=$!

# ---- the loop ---------------------------------------------------------------------------------
gg proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
expect_eq "proxy init" "$RC" 0
gg --json proxy info
gg site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --connect-deadline 5m --runtime bwrap
S1=${TAG}a
gg -v request --name "$S1" --walltime 1h
expect_eq "request (waits until ready)" "$RC" 0
gg connect "$S1" -- -o ControlMaster=no -o ControlPath=none echo connected
expect_eq "connect" "$OUT" connected
gg --json status "$S1"
gg --json list
gg -v list --sync
sh "$HERE/mkrootfs.sh" "$T_TMP/sandbox"
gg freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
expect_eq "freeze" "$RC" 0
cd "$T_TMP" || exit 1
gg submit work.sif --name "${TAG}j" --walltime 30m --output out.txt -- sh -c "echo $TAG > out.txt"
expect_eq "submit" "$RC" 0
gg get --wait --timeout 3m "${TAG}j"
expect_eq "get --wait" "$(cat "${TAG}j/out.txt" 2>&1)" "$TAG"
# a session with a bearer token
S2=${TAG}t
BEARER_TOKEN=$TOKEN gg -v --json request --token --name "$S2" --walltime 30m --no-wait
expect_eq "request --token" "$RC" 0
json_valid request "$O/$N.out"
BEARER_TOKEN=$TOKEN gg -v list --sync
BEARER_TOKEN=$TOKEN gg --json list --sync
json_valid list "$O/$N.out"
BEARER_TOKEN=$TOKEN gg proxy info
BEARER_TOKEN=$TOKEN gg --json proxy info
printf '%s\n' "$TOKEN" >"$T_TMP/token"
chmod 600 "$T_TMP/token"
BEARER_TOKEN_FILE=$T_TMP/token gg -vv --json status "$S2"
grep -q "^gridgpu: GET https://" "$O/$N.err" && grep -q "^gridgpu: > Authorization: \*\*\*$" "$O/$N.err" &&
	ok "status -vv: the requests and their headers, the token masked" || not_ok "status -vv ($(head -c 600 "$O/$N.err"))"

# ---- the errors a user meets, with secrets at hand ---------------------------------------------
WRONG="not-$PASS-either"
printf '%s\n' "$WRONG" >"$T_TMP/wrongpass"
gg proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin --out "$T_TMP/p2" <"$T_TMP/wrongpass"
expect_eq "wrong passphrase: exit 3" "$RC" 3
gg --json proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin --out "$T_TMP/p2" <"$T_TMP/wrongpass"
BAD_TOKEN="not-a-jwt-${TOKEN##*.}"
BEARER_TOKEN=$BAD_TOKEN gg request --token --name "${TAG}x" --no-wait
[ "$RC" -ne 0 ] && ok "a malformed token is refused (exit $RC)" || not_ok "a malformed token is refused"
BEARER_TOKEN=$BAD_TOKEN gg --json request --token --name "${TAG}x" --no-wait
EXPIRED=$("$GG_TB_MINT_TOKEN" --exp -60)
BEARER_TOKEN=$EXPIRED gg request --token --name "${TAG}x" --no-wait
expect_eq "an expired token: exit 3" "$RC" 3
FORGED=$("$GG_TB_MINT_TOKEN" --key "$GG_TB_BAD_USER_KEY")
BEARER_TOKEN=$FORGED gg -v request --token --name "${TAG}x" --no-wait
[ "$RC" -ne 0 ] && ok "a token the CE does not trust is refused (exit $RC)" || not_ok "a forged token is refused ($RC)"
BEARER_TOKEN=$FORGED gg --json request --token --name "${TAG}x" --no-wait
BEARER_TOKEN=$FORGED gg --json kill "$S2"

# ---- file modes (before anything is cleaned) ---------------------------------------------------
modes() {
	"$PY" - "$CFG" "$STATE" "$X509_USER_PROXY" "$HOME" "$T_TMP/${TAG}j" <<'EOF'
import os, stat, sys
cfg, state, proxy, home, outdir = sys.argv[1:]
bad, n = [], 0
for top in (cfg, state):
    for dp, dns, fns in os.walk(top):
        m = stat.S_IMODE(os.lstat(dp).st_mode)
        if m != 0o700:
            bad.append("dir %s is %04o" % (dp, m))
        for fn in fns:
            p = os.path.join(dp, fn)
            st = os.lstat(p)
            if stat.S_ISSOCK(st.st_mode):
                continue
            n += 1
            m = stat.S_IMODE(st.st_mode)
            if fn.endswith(".pub"):
                if m & 0o022:
                    bad.append("%s is %04o" % (p, m))
            elif m != 0o600:
                bad.append("%s is %04o" % (p, m))
m = stat.S_IMODE(os.stat(proxy).st_mode)
if m != 0o600:
    bad.append("proxy %s is %04o" % (proxy, m))
# nothing anywhere under HOME or among the outputs is writable by others
for top in (home, outdir):
    for dp, dns, fns in os.walk(top):
        for x in [dp] + [os.path.join(dp, f) for f in fns]:
            st = os.lstat(x)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o002:
                bad.append("%s is writable by others (%04o)" % (x, stat.S_IMODE(st.st_mode)))
print("; ".join(bad) if bad else "%d files" % n)
sys.exit(1 if bad else 0)
EOF
}
if out=$(modes); then ok "umask 000: keys, proxy, records, caches, SSH config 0600 in 0700 dirs ($out)"; else
	not_ok "file modes ($out)"; fi

# ---- what the secrets look like, and where each may be -------------------------------------------
# secrets.txt: "LABEL<TAB>TEXT" lines; each text is looked for as a fixed string.
S1_KEY=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$STATE/records/$S1.json")
{
	printf 'passphrase\t%s\n' "$PASS"
	printf 'wrong passphrase\t%s\n' "$WRONG"
	printf 'bearer token\t%s\n' "$TOKEN"
	printf 'bearer token signature\t%s\n' "${TOKEN##*.}"
	printf 'forged token signature\t%s\n' "${FORGED##*.}"
	printf 'expired token signature\t%s\n' "${EXPIRED##*.}"
	for f in "$GG_TB_USER_KEY_PLAIN:user key" "$X509_USER_PROXY:proxy key" "$S1_KEY:session key"; do
		# the base64 lines of the private key block (each 64 characters)
		# (the private part only: OpenSSH keys share their first line, and the
		# first lines of an RSA key hold its public modulus)
		skip=7
		grep -q "BEGIN OPENSSH PRIVATE KEY" "${f%%:*}" && skip=2
		sed -n '/BEGIN.*PRIVATE KEY/,/END.*PRIVATE KEY/p' "${f%%:*}" | grep -v -- '-----' |
			tail -n +$((skip + 1)) | grep -E '^.{40,}$' | sed "s/^/${f##*:}\t/"
	done
} >"$T_TMP/secrets.txt"
expect_eq "secrets to look for: passphrase, tokens, three private keys" \
	"$(cut -f1 "$T_TMP/secrets.txt" | LC_ALL=C sort -u | tr '\n' ',')" \
	"bearer token,bearer token signature,expired token signature,forged token signature,passphrase,proxy key,session key,user key,wrong passphrase,"
# find_secrets FILE...: "LABEL in FILE" for every secret found in the files.
find_secrets() {
	"$PY" - "$T_TMP/secrets.txt" "$@" <<'EOF'
import sys
secrets = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1], encoding="utf-8") if "\t" in l]
for path in sys.argv[2:]:
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    for label in sorted({lab for lab, text in secrets if text.encode() in data}):
        print("%s in %s" % (label, path))
EOF
}

# ---- outputs, error messages, --json -----------------------------------------------------------
found=$(find_secrets "$O"/*)
expect_eq "no secret in any of the $N commands' stdout, stderr, --json output or error message" "$found" ""
# the errors said what was wrong without the secret
grep -l "wrong passphrase" "$O"/*.err >/dev/null && ok "the wrong passphrase is reported (without echoing it)" ||
	not_ok "the wrong passphrase is reported"
# ---- files under HOME --------------------------------------------------------------------------
found=$(find "$HOME" -type f -print | while read -r f; do find_secrets "$f"; done |
	grep -v "^session key in $S1_KEY\$")
expect_eq "no secret in any file under HOME but the session key in its own file" "$found" ""
expect_eq "the proxy file holds the proxy key" "$(find_secrets "$X509_USER_PROXY" | sed 's/ in .*//' | sort -u)" "proxy key"

# ---- argv of every process ---------------------------------------------------------------------
# One more run with children while the sampler watches: ssh through both jump hosts.
gg connect "$S1" -- -o ControlMaster=no -o ControlPath=none true
touch "$T_TMP/sampler.stop"
poll 20 sh -c '! kill -0 "$1"' sh "$SAMPLER_PID"
SAMPLER_PID=""
if grep -q "^ssh .*-F $CFG/ssh/config" "$T_TMP/argv.txt" && grep -q "gridgpu" "$T_TMP/argv.txt"; then
	ok "the /proc sampler saw gridgpu and its ssh children ($(wc -l <"$T_TMP/argv.txt") distinct argv)"
else
	not_ok "the /proc sampler saw gridgpu and its ssh children ($(head -5 "$T_TMP/argv.txt" | tr '\n' '|'))"
fi
expect_eq "no secret in the argv of any process (sampled from /proc)" "$(find_secrets "$T_TMP/argv.txt")" ""
if [ -n "$HAVE_STRACE" ]; then
	nexec=$(cat "$TR"/* | grep -c 'execve(')
	grep -q 'execve("[^"]*ssh-keygen"' "$TR"/* && ok "strace saw every execve ($nexec), ssh-keygen among them" ||
		not_ok "strace saw ssh-keygen"
	expect_eq "no secret in the argv of any execve (strace -f)" "$(find_secrets "$TR"/*)" ""
else
	T_N=$((T_N + 1))
	echo "ok $T_N - # SKIP execve tracing: strace is not installed"
fi

# ---- core dumps while a decrypted key is in memory -----------------------------------------------
# As another user (nobody), whose gridgpu processes' /proc entries become
# root's when they are not dumpable, so the check sees what a co-tenant sees.
NB=$T_TMP/nob
mkdir -p "$NB/home"
cp "$GG_TB_USER_CERT" "$NB/cert.pem"
cp "$GG_TB_USER_KEY" "$NB/key.pem"
cp "$X509_USER_PROXY" "$NB/x509up"
chown -R 65534:65534 "$NB"
chmod 700 "$NB/home"
chmod 600 "$NB/key.pem" "$NB/x509up"
NGRIDGPU=$(gridgpu_for_others)
# as_nobody CMD...: as uid 65534, with core dumps allowed (soft limit raised) so
# that only gridgpu itself can turn them off.
as_nobody() {
	(
		# shellcheck disable=SC3045 # dash and bash have ulimit -S
		ulimit -S -c unlimited 2>/dev/null
		exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$NB/home" \
			XDG_CONFIG_HOME="$NB/home/.config" XDG_STATE_HOME="$NB/home/.local/state" \
			X509_USER_PROXY="$NB/x509up" X509_CERT_DIR="$GG_TB_CA_DIR" "$@"
	)
}
# dump_state PID: "<owner of /proc/PID/status: 0 when not dumpable> <soft core
# limit> <its memory (environ) readable by a process of its own uid?>"
dump_state() {
	owner=$(stat -c %u "/proc/$1/status")
	core=$(awk '/^Max core file size/ {print $5}' "/proc/$1/limits")
	if as_nobody cat "/proc/$1/environ" >/dev/null 2>&1; then peek=readable; else peek=denied; fi
	echo "$owner $core $peek"
}
# proxy init, waiting at the passphrase prompt on a terminal (the user key is
# being read, the proxy key made in the background)
cat >"$T_TMP/pty.py" <<'EOF'
import os, pty, select, sys, time
argv, ready, go = sys.argv[3:], sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
buf, end = b"", time.time() + 20
while b"pass phrase" not in buf and time.time() < end:
    if select.select([fd], [], [], 0.1)[0]:
        try: buf += os.read(fd, 4096)
        except OSError: break
with open(ready, "w") as f:
    f.write("%d\n" % pid)
while not os.path.exists(go) and time.time() < end + 20:
    time.sleep(0.05)
os.write(fd, open(go).read().encode())
while True:
    try:
        if not os.read(fd, 4096): break
    except OSError:
        break
_, st = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(st))
EOF
chmod 644 "$T_TMP/pty.py"
as_nobody "$PY" "$T_TMP/pty.py" "$NB/ready" "$NB/go" "$NGRIDGPU" proxy init --cert "$NB/cert.pem" --key "$NB/key.pem" \
	--out "$NB/px" >"$T_TMP/pty.rc" 2>&1 &
BG=$!
if poll 20 test -s "$NB/ready"; then
	st=$(dump_state "$(cat "$NB/ready")")
	expect_eq "proxy init at the passphrase prompt: not dumpable, core limit 0, memory closed to its own uid" "$st" "0 0 denied"
else
	not_ok "proxy init reached the passphrase prompt"
fi
printf '%s\n' "$PASS" >"$NB/go.t" && chmod 644 "$NB/go.t" && mv "$NB/go.t" "$NB/go"
wait "$BG"
BG=""
expect_eq "proxy init as another user, passphrase typed on a terminal: exit 0" "$(tail -1 "$T_TMP/pty.rc")" 0
# request, waiting for its session: the proxy's key (and a token) in memory
as_nobody "$NGRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --worker-address 127.0.0.1 --connect-deadline 60s
S3=${TAG}n
as_nobody "$NGRIDGPU" request --name "$S3" --walltime 30m >"$NB/req.out" 2>"$NB/req.err" &
BG=$!
if poll 60 grep -q "waited" "$NB/req.err"; then
	pid=$(pgrep -u 65534 -f "gridgpu request --name $S3" | head -1)
	st=$(dump_state "$pid")
	expect_eq "request holding the proxy key: not dumpable, core limit 0, memory closed to its own uid" "$st" "0 0 denied"
else
	not_ok "request as another user starts waiting ($(cat "$NB/req.err"))"
fi
wait "$BG"
BG=""
as_nobody "$NGRIDGPU" clean --all >/dev/null 2>&1

# ---- no secret left in memory after use (gdb) ---------------------------------------------------
if command -v gdb >/dev/null && command -v gcore >/dev/null; then
	# gcore_at FUNCTION CORE ARGS...: run gridgpu under gdb, dump its memory when
	# FUNCTION is reached (stdin from $GDB_STDIN).
	gcore_at() {
		_f=$1 _c=$2
		shift 2
		{
			echo "set pagination off"
			echo "set confirm off"
			echo "set breakpoint pending on"
			echo "break $_f"
			printf 'run'
			for a in "$@"; do printf ' %s' "$a"; done
			printf ' < %s\n' "$GDB_STDIN"
			echo "gcore $_c"
			echo "kill"
			echo "quit"
		} >"$T_TMP/gdb.cmds"
		gdb -q -batch -x "$T_TMP/gdb.cmds" "$GRIDGPU" >"$T_TMP/gdb.log" 2>&1
		test -s "$_c"
	}
	# in_core CORE KEYFILE...: labels of what is found in the memory dump: the
	# passphrase, and the RSA limbs (p, q, d) of each key, in the little-endian
	# words OpenSSL keeps them in, or big-endian as in DER.
	in_core() {
		"$PY" - "$PASS" "$@" <<'EOF'
import mmap, sys
from cryptography.hazmat.primitives import serialization
pw, core, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
needles = [("passphrase", pw.encode())]
for k in keys:
    data = open(k, "rb").read()
    i = data.find(b"-----BEGIN RSA PRIVATE KEY")
    i = i if i >= 0 else data.find(b"-----BEGIN PRIVATE KEY")
    n = serialization.load_pem_private_key(data[i:], None).private_numbers()
    for nm, v in (("p", n.p), ("q", n.q), ("d", n.d)):
        b = v.to_bytes((v.bit_length() + 7) // 8, "big")
        needles += [(k + ":" + nm, b[:24]), (k + ":" + nm, b[::-1][:24])]
with open(core, "rb") as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    print(" ".join(sorted({lab for lab, b in needles if m.find(b) >= 0})))
EOF
	}
	GDB_STDIN=$GG_TB_USER_KEY_PASS_FILE
	if gcore_at gg_proxy_write "$T_TMP/core1" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" \
		--pass-stdin --out "$T_TMP/px-gdb"; then
		found=$(in_core "$T_TMP/core1" "$GG_TB_USER_KEY_PLAIN")
		case $found in *"$GG_TB_USER_KEY_PLAIN:p"*) ok "memory probe: finds the user key while it is in use ($found)" ;;
		*) not_ok "memory probe: finds the user key while it is in use ($found)" ;; esac
	else
		not_ok "gdb dumps proxy init at gg_proxy_write ($(tail -3 "$T_TMP/gdb.log"))"
	fi
	rm -f "$T_TMP/core1" "$T_TMP/px-gdb"
	if gcore_at exit "$T_TMP/core2" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" \
		--pass-stdin --out "$T_TMP/px-gdb" && [ -s "$T_TMP/px-gdb" ]; then
		expect_eq "proxy init at exit: no passphrase, user key or proxy key bytes left in memory" \
			"$(in_core "$T_TMP/core2" "$GG_TB_USER_KEY_PLAIN" "$T_TMP/px-gdb")" ""
	else
		not_ok "gdb dumps proxy init at exit ($(tail -3 "$T_TMP/gdb.log"))"
	fi
	rm -f "$T_TMP/core2"
	# the bearer token, read from a file, after a command that sent it to the CE
	GDB_STDIN=/dev/null
	if BEARER_TOKEN_FILE=$T_TMP/token gcore_at exit "$T_TMP/core3" status "$S2"; then
		if LC_ALL=C grep -qaF -- "${TOKEN##*.}" "$T_TMP/core3"; then
			not_ok "status --token at exit: the bearer token is not left in memory (its signature is)"
		else
			ok "status --token at exit: the bearer token is not left in memory"
		fi
	else
		not_ok "gdb dumps status at exit ($(tail -3 "$T_TMP/gdb.log"))"
	fi
	rm -f "$T_TMP/core3"
	# proxy info and doctor read the proxy file (its key) and a token file: each
	# read happens in a process already undumpable with core limit 0. strace
	# follows the system calls that decide it, in the order they were made
	# (prctl(PR_SET_DUMPABLE), the core limit, the credential files' opens).
	# Not gdb asking the process: Debian 12's gdb 13 cannot resume a process
	# from a breakpoint on a CPU with AMX state ("Couldn't write extended state
	# status: Bad address").
	for cmd in "proxy info" "doctor"; do
		# shellcheck disable=SC2086 # the command's words
		BEARER_TOKEN_FILE=$T_TMP/token strace -f -qq -e trace=prctl,setrlimit,prlimit64,open,openat \
			-o "$T_TMP/strace.log" "$GRIDGPU" $cmd </dev/null >/dev/null 2>&1
		got=$(awk -v px="\"$X509_USER_PROXY\"" -v tk="\"$T_TMP/token\"" '
			/prctl\(PR_SET_DUMPABLE, (0|SUID_DUMP_DISABLE)\) = 0/ { d = 1 }
			/RLIMIT_CORE, \{rlim_cur=0, rlim_max=0\}/ && / = 0$/ { c = 1 }
			/open(at)?\(/ && (index($0, px) || index($0, tk)) && !/ = -1 / {
				n++; if (!d || !c) bad = bad " " $0 }
			END { printf "%d%s", n, bad }' "$T_TMP/strace.log")
		reads=${got%% *}
		if [ "${reads:-0}" -ge 2 ] && [ "$got" = "$reads" ]; then
			ok "$cmd: undumpable, core limit 0, before each of its $reads credential file reads (proxy, token)"
		else
			not_ok "$cmd: undumpable before reading the proxy and the token ($got)"
		fi
	done
else
	T_N=$((T_N + 1))
	echo "ok $T_N - # SKIP memory probes: gdb is not installed"
fi

# ---- the end ------------------------------------------------------------------------------------
BEARER_TOKEN=$TOKEN gg kill "$S2"
gg kill "$S1"
BEARER_TOKEN=$TOKEN gg clean --all
expect_eq "clean --all" "$RC" 0
expect_eq "no secret in the last commands' output either" "$(find_secrets "$O"/*)" ""
done_testing
