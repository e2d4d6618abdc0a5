#!/bin/sh
# bench/bench-session-freeze.sh [BUILDDIR]: `gridgpu freeze --session S` (the
# sandbox streamed from the node through the site's jump hosts by the user's
# OpenSSH, compressed on the node: --link-comp zstd, gzip, none; and zstd over
# libssh2, GRIDGPU_BULK_SSH=libssh2, as before issue 49) beside the peer way, `ssh S tar |
# gridgpu freeze -` through the same hops (ssh's own compression off, as the
# generated config has it), in one run, on one session of the local test site.
#
# The session: request --image of a small docker-archive (tests/e2e/mkrootfs.sh),
# then what a user would install (this machine's /usr/lib/python3.*, ~54 MB of
# .py, .pyc and .so files) copied into its sandbox on the node.
#   For each: wall time (median of RUNS, default 3) and the bytes over the link
#   (what the node's command sent: freeze's received_bytes, dd's count for ssh).
# Links (LINKS, default "loopback 100mbit"): the site's loopback as it is, then
# the node's side of every hop shaped to a rate (tc tbf on the site's lo, the
# way out of the site) as a laptop's link to a grid site would be.  On this
# test machine node and client share the same cores, so on the unshaped
# loopback compressing on the node competes with the client for them: that
# row says what compression costs, the shaped ones what it saves on a link
# that is the slow part.  Bytes do not depend on the link.
# Env: GRIDGPU (binary), RUNS, LINKS, GG_TB_DIR (the site; bench/run starts it).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
GRIDGPU=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-3}
[ -x "$GRIDGPU" ] || { echo "bench-session-freeze: $GRIDGPU is not built" >&2; exit 1; }
for c in ssh dd python3 zstd gzip tc; do
	command -v "$c" >/dev/null || { echo "bench-session-freeze: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
: "${GG_TB_DIR:?the test site must be up (bench/run starts it)}"
. "$GG_TB_DIR/env.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench-sf.XXXXXX")
export HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config" XDG_STATE_HOME="$W/home/.local/state" \
	X509_USER_PROXY="$W/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
mkdir -p "$HOME"
LINKS=${LINKS:-loopback 100mbit}
shape() { # RATE | loopback: the site's lo as it is, or shaped to RATE
	ip netns exec "$GG_TB_NS" tc qdisc del dev lo root 2>/dev/null || true
	[ "$1" = loopback ] || ip netns exec "$GG_TB_NS" tc qdisc add dev lo root tbf rate "$1" burst 256kb latency 100ms
}
cleanup() {
	shape loopback
	"$GRIDGPU" -q kill bs >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$W"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config
now() { date +%s.%N; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap
sh "$top/tests/e2e/mkrootfs.sh" rootfs tar >/dev/null 2>&1
python3 "$top/tests/e2e/mkdocker.py" rootfs dev.tar
"$GRIDGPU" -q request --name bs --image dev.tar --walltime 1h >/dev/null
job=$("$GRIDGPU" --json status bs --no-sync | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
SB=$GG_TB_SESSION_DIR/$job/.gridgpu/sandbox
py=$(ls -d /usr/lib/python3.[0-9]* | head -n 1)
mkdir -p "$SB/usr/local/lib" && cp -a "$py" "$SB/usr/local/lib/payload"
chown -R "$(stat -c %u:%g "$SB")" "$SB/usr/local/lib"
echo "bench-session-freeze: the sandbox of session bs: $(du -sh "$SB" | cut -f1) ($(find "$SB" | wc -l) entries), $RUNS runs each"

# one run: "SECONDS BYTES"
run_ssh() {
	t0=$(now)
	ssh -F "$CFG" -o Compression=no bs ': gridgpu-node; tar -C "$GRIDGPU_SESSION_DIR/.gridgpu/sandbox" --numeric-owner -X "$GRIDGPU_SESSION_DIR/.gridgpu/sandbox-mounts" -cf - .' |
		dd bs=1M 2>dd.log | "$GRIDGPU" -q freeze --force - -o ssh.sif
	t1=$(now)
	echo "$(python3 -c "print(round($t1 - $t0, 2))") $(awk '/bytes/ {print $1; exit}' dd.log)"
}
run_gg() { # LINK-COMP [libssh2]
	t0=$(now)
	GRIDGPU_BULK_SSH=${2:-openssh} "$GRIDGPU" --json freeze --force --session bs --link-comp "$1" -o "gg-$1.sif" >gg.json
	t1=$(now)
	echo "$(python3 -c "print(round($t1 - $t0, 2))") $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["received_bytes"])' gg.json)"
}
: >results
for link in $LINKS; do
	shape "$link" || { echo "bench-session-freeze: cannot shape the site's link to $link (tc tbf)" >&2; exit 1; }
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		echo "$link ssh $(run_ssh)" >>results
		for l in zstd gzip none; do echo "$link $l $(run_gg $l)" >>results; done
		echo "$link libssh2 $(run_gg zstd libssh2)" >>results
		i=$((i + 1))
	done
done
shape loopback
python3 - results <<'EOF'
import statistics, sys
rows, links = {}, []
for line in open(sys.argv[1]):
    link, k, t, b = line.split()
    if link not in links:
        links.append(link)
    rows.setdefault((link, k), []).append((float(t), int(b)))
names = {"ssh": "ssh S tar | gridgpu freeze -", "none": "freeze --session --link-comp none",
         "gzip": "freeze --session --link-comp gzip", "zstd": "freeze --session (auto: zstd)",
         "libssh2": "freeze --session, libssh2 (zstd)"}
for link in links:
    base_t = statistics.median(t for t, _ in rows[(link, "ssh")])
    base_b = statistics.median(b for _, b in rows[(link, "ssh")])
    print("link: %s" % ("the site's loopback (unshaped)" if link == "loopback" else link + "/s (tc tbf)"))
    print("  %-38s %9s %8s %14s %8s" % ("", "wall s", "vs ssh", "link bytes", "vs ssh"))
    for k in ("ssh", "none", "gzip", "zstd", "libssh2"):
        t = statistics.median(x for x, _ in rows[(link, k)])
        b = statistics.median(y for _, y in rows[(link, k)])
        print("  %-38s %9.2f %7.2fx %14d %7.2fx" % (names[k], t, t / base_t, b, b / base_b))
EOF
