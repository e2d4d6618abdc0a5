#!/bin/sh
# bench/bench-proxy.sh [BUILDDIR]: `gridgpu proxy init` beside arcproxy,
# voms-proxy-init, grid-proxy-init and `openssl genrsa 2048`, on the same
# certificate, same key size (RSA 2048) and lifetime (12 h). Not a test.
#
#   1. hyperfine -N, RUNS runs each (default 30): medians, p10-p90, ratios.
#   2. gridgpu's own overhead beyond key generation (wall time minus the key
#      generation time it reports with -v), median over RUNS runs.
#   3. Enter-to-done with a passphrase typed at a terminal: each tool runs in a
#      pseudo-terminal, the passphrase is written PTY_DELAY seconds (default 1)
#      after the prompt appears, and the time from the newline to the exit of
#      the process is measured (PTY_RUNS runs, default 20).
#
# Credentials: the local test site's ($GG_TB_DIR/env.sh) when it is there,
# else a CA and user certificate made here with openssl.
# Env: GRIDGPU (binary), RUNS, PTY_RUNS, PTY_DELAY, GRIDGPU_KEYGEN_THREADS.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
GRIDGPU=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-30}
PTY_RUNS=${PTY_RUNS:-20}
PTY_DELAY=${PTY_DELAY:-1.0}
[ -x "$GRIDGPU" ] || { echo "bench-proxy: $GRIDGPU is not built" >&2; exit 1; }
for c in hyperfine python3 openssl arcproxy voms-proxy-init grid-proxy-init; do
	command -v "$c" >/dev/null || { echo "bench-proxy: $c is not installed" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
W=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench-proxy.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
# Keep the tools away from the user's own credentials and configuration.
export HOME="$W/home"
mkdir -p "$HOME"
unset X509_USER_PROXY X509_USER_CERT X509_USER_KEY X509_CERT_DIR BEARER_TOKEN BEARER_TOKEN_FILE

# ---- credentials ------------------------------------------------------------------
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
if [ -f "$GG_TB_DIR/env.sh" ]; then
	. "$GG_TB_DIR/env.sh"
fi
if [ -n "${GG_TB_USER_CERT:-}" ] && [ -r "$GG_TB_USER_CERT" ]; then
	SRC="test site ($GG_TB_DIR)"
	CA=$GG_TB_CA_DIR CERT=$GG_TB_USER_CERT KEY=$GG_TB_USER_KEY
	PLAIN=$GG_TB_USER_KEY_PLAIN PASS=$(cat "$GG_TB_USER_KEY_PASS_FILE")
else
	SRC="a CA made for this run"
	CA=$W/certificates
	mkdir -p "$CA"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$W/ca.key" -out "$CA/ca.pem" -days 2 \
		-subj "/DC=org/DC=example/CN=bench CA" -addext "basicConstraints=critical,CA:true" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	openssl rehash "$CA" 2>/dev/null
	openssl genrsa -out "$W/userkey-plain.pem" 2048 2>/dev/null
	openssl req -new -key "$W/userkey-plain.pem" -subj "/DC=org/DC=example/CN=bench User" \
		-out "$W/user.csr" 2>/dev/null
	printf 'basicConstraints=critical,CA:false\nkeyUsage=critical,digitalSignature,keyEncipherment\n' >"$W/ext"
	openssl x509 -req -in "$W/user.csr" -CA "$CA/ca.pem" -CAkey "$W/ca.key" -set_serial 2 \
		-days 1 -extfile "$W/ext" -out "$W/usercert.pem" 2>/dev/null
	PASS="bench secret"
	openssl pkey -in "$W/userkey-plain.pem" -aes256 -passout "pass:$PASS" -out "$W/userkey.pem"
	chmod 600 "$W/userkey-plain.pem" "$W/userkey.pem"
	CERT=$W/usercert.pem KEY=$W/userkey.pem PLAIN=$W/userkey-plain.pem
fi

echo "bench-proxy: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench-proxy: credentials from $SRC; RSA 2048, 12 h, unencrypted key for part 1"
echo "bench-proxy: $($GRIDGPU --version), $(openssl version | cut -d' ' -f1-2)"
echo

# ---- 1. side by side ------------------------------------------------------------------
hyperfine -N --runs "$RUNS" --warmup 3 --style none --export-json "$W/h.json" \
	-n "gridgpu proxy init" \
	"$GRIDGPU proxy init --cert $CERT --key $PLAIN --out $W/gg.pem --valid 12h --bits 2048" \
	-n "gridgpu proxy init (1 keygen thread)" \
	"env GRIDGPU_KEYGEN_THREADS=1 $GRIDGPU proxy init --cert $CERT --key $PLAIN --out $W/gg1.pem --valid 12h --bits 2048" \
	-n "arcproxy" \
	"arcproxy -C $CERT -K $PLAIN -T $CA -P $W/arc.pem -c validityPeriod=12h -c keybits=2048" \
	-n "voms-proxy-init" \
	"voms-proxy-init -q -cert $CERT -key $PLAIN -certdir $CA -out $W/voms.pem -valid 12:00 -bits 2048" \
	-n "grid-proxy-init" \
	"grid-proxy-init -q -cert $CERT -key $PLAIN -certdir $CA -out $W/gpi.pem -valid 12:00 -bits 2048" \
	-n "openssl genrsa 2048" \
	"openssl genrsa -out $W/genrsa.pem 2048"

# ---- 2 and 3: overhead, Enter-to-done --------------------------------------------------
python3 - "$W/h.json" "$GRIDGPU" "$CERT" "$KEY" "$PLAIN" "$CA" "$PASS" "$W" "$RUNS" \
	"$PTY_RUNS" "$PTY_DELAY" <<'EOF'
import json, os, pty, re, select, statistics, subprocess, sys, time

hjson, gg, cert, key, plain, ca, pw, w, runs, pty_runs, delay = sys.argv[1:]
runs, pty_runs, delay = int(runs), int(pty_runs), float(delay)

def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p * (len(xs) - 1)))))]

# 1. the table
res = json.load(open(hjson))["results"]
rows = [(r["command"], [t * 1000 for t in r["times"]],
         [(u + y) * 1000 for u, y in zip(r["user"], r["system"])] if "user" in r and
         isinstance(r["user"], list) else [(r["user"] + r["system"]) * 1000]) for r in res]
ggmed = statistics.median(rows[0][1])
print("1. proxy creation, %d runs each (hyperfine -N); wall time, and CPU time (user +" % len(rows[0][1]))
print("   system, all threads), which other load on the machine does not change")
print("   %-38s %9s %19s %8s %11s" % ("command", "median", "p10 - p90", "x gridgpu", "CPU (mean)"))
for name, ts, cpu in rows:
    m = statistics.median(ts)
    print("   %-38s %6.1f ms %7.1f - %6.1f ms %8.2f %8.1f ms" % (name, m, q(ts, .1), q(ts, .9),
                                                           m / ggmed, statistics.median(cpu)))
peers = {n: statistics.median(t) for n, t, _ in rows if n in ("arcproxy", "voms-proxy-init", "grid-proxy-init")}
best = min(peers, key=peers.get)
print("   target: gridgpu median <= fastest peer's (%s, %.1f ms): %s (%.1f ms)" %
      (best, peers[best], "met" if ggmed <= peers[best] else "NOT met", ggmed))

# 2. overhead beyond key generation
over, after = [], []
cmd = [gg, "-v", "proxy", "init", "--cert", cert, "--key", plain, "--out", w + "/ov.pem",
       "--valid", "12h", "--bits", "2048"]
for _ in range(runs):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = (time.perf_counter() - t0) * 1000
    m = re.search(r"key ready after ([0-9.]+) ms, the rest took ([0-9.]+) ms", p.stderr)
    if p.returncode != 0 or not m:
        sys.exit("bench-proxy: gridgpu -v proxy init failed: " + p.stderr)
    over.append(wall - float(m.group(1)))
    after.append(float(m.group(2)))
# the floor of any gridgpu command: exec, dynamic linking, exit
floor = []
for _ in range(runs):
    t0 = time.perf_counter()
    subprocess.run([gg, "--version"], capture_output=True)
    floor.append((time.perf_counter() - t0) * 1000)
print()
print("2. gridgpu's overhead beyond key generation, %d runs: wall time minus the time" % runs)
print("   until the key was ready (reported with -v); the key generation overlaps the")
print("   reading of certificate and key")
print("   median %.1f ms (p10 - p90 %.1f - %.1f ms), of which" %
      (statistics.median(over), q(over, .1), q(over, .9)))
print("     after the key is there (sign, write, fsync): median %.1f ms" % statistics.median(after))
print("     process start and exit (gridgpu --version):  median %.1f ms" % statistics.median(floor))
print("   target: <= 10 ms: %s" % ("met" if statistics.median(over) <= 10 else "NOT met"))

# 3. Enter-to-done at a terminal
def enter_to_done(argv):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    buf = b""
    def pump(pattern, timeout):
        nonlocal buf
        end = time.time() + timeout
        while time.time() < end:
            if pattern and re.search(pattern, buf):
                return True
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    d = os.read(fd, 4096)
                except OSError:
                    return False
                if not d:
                    return False
                buf += d
        return False
    if not pump(rb"(?i)pass ?(phrase|word)[^\n]*:", 30):
        os.kill(pid, 9); os.waitpid(pid, 0); os.close(fd)
        raise RuntimeError("no prompt: %r" % buf[-300:])
    time.sleep(delay)  # the user types
    os.write(fd, pw.encode() + b"\n")
    t0 = time.perf_counter()
    while True:
        wpid, st = os.waitpid(pid, os.WNOHANG)
        if wpid:
            t1 = time.perf_counter()
            break
        r, _, _ = select.select([fd], [], [], 0.002)
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                d = b""
            buf += d
            if not d:
                _, st = os.waitpid(pid, 0)
                t1 = time.perf_counter()
                break
    os.close(fd)
    if os.waitstatus_to_exitcode(st) != 0:
        raise RuntimeError("%s failed: %r" % (argv[0], buf[-300:]))
    return (t1 - t0) * 1000

tools = [
    ("gridgpu proxy init", [gg, "proxy", "init", "--cert", cert, "--key", key, "--out",
                            w + "/tty-gg.pem", "--valid", "12h", "--bits", "2048"]),
    ("arcproxy", ["arcproxy", "-C", cert, "-K", key, "-T", ca, "-P", w + "/tty-arc.pem",
                  "-c", "validityPeriod=12h", "-c", "keybits=2048"]),
    ("voms-proxy-init", ["voms-proxy-init", "-q", "-cert", cert, "-key", key, "-certdir", ca,
                         "-out", w + "/tty-voms.pem", "-valid", "12:00", "-bits", "2048"]),
    ("grid-proxy-init", ["grid-proxy-init", "-q", "-cert", cert, "-key", key, "-certdir", ca,
                         "-out", w + "/tty-gpi.pem", "-valid", "12:00", "-bits", "2048"]),
]
print()
print("3. Enter-to-done with the passphrase typed at a terminal (%.1f s after the" % delay)
print("   prompt), %d runs each" % pty_runs)
print("   %-38s %9s %19s %8s" % ("command", "median", "p10 - p90", "max"))
ggm = None
for name, argv in tools:
    try:
        ts = [enter_to_done(argv) for _ in range(pty_runs)]
    except Exception as e:  # a peer that cannot be driven this way is reported, not fatal
        print("   %-38s %s" % (name, e))
        continue
    m = statistics.median(ts)
    if ggm is None:
        ggm = m
    print("   %-38s %6.1f ms %7.1f - %6.1f ms %5.1f ms" % (name, m, q(ts, .1), q(ts, .9), max(ts)))
print("   target: gridgpu Enter-to-done <= 30 ms: %s" % ("met" if ggm is not None and ggm <= 30 else "NOT met"))
EOF
