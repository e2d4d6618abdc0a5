#!/bin/sh
# gridgpu doctor against the real test site: everything passes with a good
# proxy; then each fault is found, with its fix, and exit 1: no proxy, a short
# proxy, a CE that is down, an untrusted CA directory, a jump host that is
# down, no ssh-keygen. Inside a "session" (fake NVML and CUDA driver, see
# t-gpus.sh): the GPU, driver against runtime, container runtime, allocation.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
FAKE=${GG_FAKEGPU_DIR:-$(cd "$(dirname "$GRIDGPU")/.." && pwd)/tests/fakegpu}
SPECS=$(cd "$(dirname "$0")/../fakegpu" && pwd)
unset GRIDGPU_SESSION CUDA_VISIBLE_DEVICES CUDA_VERSION CUDA_HOME APPTAINER_CONTAINER SINGULARITY_CONTAINER
# status of one check in the last --json answer
st() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); c=[c for c in d["checks"] if c["id"]==sys.argv[1]]; print(c[0]["status"] if c else "absent")' "$1"; }
fix() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); c=[c for c in d["checks"] if c["id"]==sys.argv[1]]; print(c[0]["fix"] or "" if c else "")' "$1"; }
failed() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(c["id"] for c in d["checks"] if c["status"]=="fail") or "none")'; }
# what each failed check said, for a failure message
said() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("; ".join(c["id"]+": "+c["detail"] for c in d["checks"] if c["status"]=="fail"))'; }
# doctor_fails "description" "failing check ids" "fix substring" [VAR=VALUE...] -- gridgpu args
doctor_fails() {
	d=$1 want=$2 fixtext=$3; shift 3
	envs=""
	while [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $envs "$GRIDGPU" --json doctor "$@" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?; OUT=$(cat "$T_TMP/.stdout")
	got=$(failed)
	first=${want%% *}
	if [ "$RC" = 1 ] && [ "$got" = "$want" ] && fix "$first" | grep -qF -- "$fixtext"; then
		ok "$d"
	else
		not_ok "$d (exit $RC, failed: $got, want $want; fix: $(fix "$first"); said: $(said))"
	fi
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "proxy made" test -s "$X509_USER_PROXY"
check "site profile added" "$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" \
	--jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--worker-address 127.0.0.1

# --- all is well ----------------------------------------------------------------
run_gg doctor
expect_eq "all checks pass: exit 0" "$RC" 0
printf '%s\n' "$OUT" | grep -q "^✓ CE  *$GG_TB_CE_URL: REST 1\.[01], accepts your proxy" &&
	ok "the CE answers with its REST version" || not_ok "CE line ($OUT)"
printf '%s\n' "$OUT" | grep -q "^✓ jump host 2  *$GG_TB_JUMP2: ssh login works" &&
	ok "both jump hosts reached (the second through the first)" || not_ok "jump lines ($OUT)"
printf '%s\n' "$OUT" | grep -q "^- GPU visible  *skipped: not inside a session" &&
	ok "no GPU here: the session checks are skipped, not failed" || not_ok "session checks ($OUT)"
printf '%s\n' "$OUT" | grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' && ok "summary line" || not_ok "summary ($OUT)"
run_gg --json doctor
json_valid doctor
expect_eq "--json: exit 0" "$RC" 0
expect_eq "--json: every check there" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["site"], d["failed"], [c["id"] for c in d["checks"]])')" \
	"tb 0 ['config', 'proxy', 'proxy-chain', 'token', 'ca-dir', 'ce', 'ssh', 'ssh-keygen', 'jump-1', 'jump-2', 'gpu', 'cuda-compat', 'container', 'gpu-alloc']"
expect_eq "--json: statuses" "$(st proxy) $(st proxy-chain) $(st ca-dir) $(st ce) $(st jump-1) $(st jump-2) $(st ssh) $(st ssh-keygen) $(st token)" \
	"ok ok ok ok ok ok ok ok skip"

# --- each fault, its fix, exit 1 ----------------------------------------------------
doctor_fails "no proxy" "proxy" "gridgpu proxy init" X509_USER_PROXY="$T_TMP/none" --
[ "$(st ce)" = skip ] && ok "no proxy: the CE is not asked" || not_ok "no proxy: CE $(st ce)"
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q \
	--out "$T_TMP/short" --valid 30m <"$GG_TB_USER_KEY_PASS_FILE"
doctor_fails "a short proxy" "proxy" "gridgpu proxy init --valid 12h" X509_USER_PROXY="$T_TMP/short" --
doctor_fails "--valid asks for more" "proxy" "gridgpu proxy init --valid 1d" -- --valid 1d
printf '%s' "$OUT" | grep -q "less than 1d" && ok "--valid: the detail says how much is needed" || not_ok "--valid detail ($OUT)"
# An expired VOMS proxy (doctor's clock 3 days on, libfaketime as in t-voms.sh):
# the fix says it expired and keeps the VO and group; the chain is not blamed on
# the CA directory.
if [ -n "${GG_TB_VOMSES:-}" ]; then
	VOMS_USERCONF=$GG_TB_VOMSES X509_VOMS_DIR=$GG_TB_VOMS_DIR "$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" \
		--key "$GG_TB_USER_KEY" --pass-stdin -q --out "$T_TMP/vomsp" --voms testvo:/testvo/analysis <"$GG_TB_USER_KEY_PASS_FILE"
	doctor_fails "an expired VOMS proxy: the fix keeps --voms" "proxy" \
		"gridgpu proxy init --valid 12h --voms testvo:/testvo/analysis (the proxy has expired" \
		X509_USER_PROXY="$T_TMP/vomsp" FAKETIME=+3d FAKETIME_DONT_FAKE_MONOTONIC=1 \
		LD_PRELOAD="$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 | head -n 1)" --
	expect_eq "an expired proxy: its chain is not checked (not a missing CA)" "$(st proxy-chain)" skip
fi
check "site with the CE down" "$GRIDGPU" site add cedown --ce https://localhost:1/arex -q
doctor_fails "CE down" "ce" "that the CE is up" -- --site cedown
printf '%s' "$OUT" | grep -q "cannot connect" && ok "CE down: says it cannot connect" || not_ok "CE down detail ($OUT)"
doctor_fails "untrusted CA directory" "proxy-chain ce" "grid CA directory" X509_CERT_DIR="$GG_TB_BAD_CA_DIR" --
[ "$(st ca-dir)" = ok ] && ok "untrusted CA directory: the directory itself is well formed" || not_ok "ca-dir $(st ca-dir)"
mkdir -p "$T_TMP/emptyca"
doctor_fails "an empty CA directory" "proxy-chain ca-dir ce" "grid CA directory" X509_CERT_DIR="$T_TMP/emptyca" --
doctor_fails "no CA directory" "ca-dir ce" "install or update the grid CA bundle" X509_CERT_DIR="$T_TMP/nosuch" --
# An expired CA in the directory: the directory is not current.
mkdir -p "$T_TMP/oldca"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T_TMP/oldca/k" -subj "/CN=old CA" -days 10 \
	-out "$T_TMP/oldca/old.pem" 2>/dev/null
cp "$GG_TB_CA_DIR"/*.pem "$T_TMP/oldca/" && rm -f "$T_TMP/oldca/k" && openssl rehash "$T_TMP/oldca" 2>/dev/null
doctor_fails "a CA that ends within 30 days" "ca-dir" "update the grid CA bundle" X509_CERT_DIR="$T_TMP/oldca" --
printf '%s' "$OUT" | grep -q "/CN=old CA expires on" && ok "... named" || not_ok "... named ($OUT)"
check "site with a jump host down" "$GRIDGPU" site add jumpdown --ce "$GG_TB_CE_URL" --jump gguser@127.0.0.1:1 \
	--jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" -q
doctor_fails "jump host down" "jump-1" "gridgpu site show jumpdown" -- --site jumpdown
expect_eq "jump host down: the next one is not tried" "$(st jump-2)" skip
printf '%s' "$OUT" | grep -q "Connection refused" && ok "jump host down: ssh's reason" || not_ok "jump reason ($OUT)"
# A first hop slow to answer (its banner 7 s late, as over a slow link): doctor
# waits as long as connect's config does (ConnectTimeout 20), and the second
# hop's wait, which ssh counts from before the first hop's login, holds too.
mkfifo "$T_TMP/slowport"
python3 -c '
import socket, sys, threading, time
up = sys.argv[1].rsplit(":", 1)
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(8)
with open(sys.argv[2], "w") as f: f.write("%d\n" % ls.getsockname()[1])
def pipe(a, b):
    while True:
        d = a.recv(65536)
        if not d: break
        b.sendall(d)
    b.shutdown(socket.SHUT_WR)
def serve(c):
    u = socket.create_connection((up[0].split("@")[-1], int(up[1])))
    time.sleep(7)   # the slow link: the site, not the test, waits here
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
    pipe(c, u)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
' "$GG_TB_JUMP1" "$T_TMP/slowport" &
SLOW_PID=$!
read -r SLOW_PORT <"$T_TMP/slowport"
# the first hop's key, under the address of the slow link
J1=${GG_TB_JUMP1#*@}
ssh-keygen -F "[${J1%:*}]:${J1##*:}" -f "$GG_TB_SSH_KNOWN_HOSTS" | grep -v '^#' |
	sed "s/^\[[^]]*\]:[0-9]*/[127.0.0.1]:$SLOW_PORT/" >"$T_TMP/slow_known_hosts"
cat "$GG_TB_SSH_KNOWN_HOSTS" >>"$T_TMP/slow_known_hosts"
check "site whose first jump host is slow" "$GRIDGPU" site add slow --ce "$GG_TB_CE_URL" \
	--jump "${GG_TB_JUMP1%@*}@127.0.0.1:$SLOW_PORT" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$T_TMP/slow_known_hosts" -q
run_gg --json doctor --site slow
[ "$(st jump-1) $(st jump-2)" = "ok ok" ] && ok "slow first hop: both hops reached" ||
	not_ok "slow first hop: jump-1 $(st jump-1), jump-2 $(st jump-2) ($(said))"
kill "$SLOW_PID" 2>/dev/null; wait "$SLOW_PID" 2>/dev/null
check "site whose jump host refuses the key" "$GRIDGPU" site add nokey --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" \
	--identity "$T_TMP/nokey" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" -q
ssh-keygen -q -t ed25519 -N '' -f "$T_TMP/nokey"
doctor_fails "a key the jump host does not know" "jump-1" "refuses your key" -- --site nokey
mkdir -p "$T_TMP/bin"
for t in ssh sh env true; do ln -s "$(command -v $t)" "$T_TMP/bin/$t"; done
doctor_fails "no ssh-keygen on PATH" "ssh-keygen" "install the OpenSSH client" PATH="$T_TMP/bin" --
run_gg doctor -q --site cedown
expect_eq "-q: only the failures and their fixes" "$(printf '%s\n' "$OUT" | grep -cv '^✗ \|^  *fix: ')" 0
printf '%s\n' "$OUT" | grep -q "^ *fix: check the CE URL ('gridgpu site show cedown')" && ok "the fix line" || not_ok "fix line ($OUT)"
expect_fail "--site names no site: refused before any check, as every command refuses it (2)" 2 "--site 'nosuch': no such site" doctor --site nosuch
printf '[site a]\nbogus = 1\n' >"$T_TMP/bad.conf"
doctor_fails "a broken configuration" "config" "correct the line" -- --config "$T_TMP/bad.conf"

# --- a site that takes bearer tokens --------------------------------------------------
check "site with token auth" "$GRIDGPU" site add tok --ce "$GG_TB_CE_URL" --auth token -q
env BEARER_TOKEN="$("$GG_TB_MINT_TOKEN")" X509_USER_PROXY="$T_TMP/none" "$GRIDGPU" --json doctor --site tok >"$T_TMP/.stdout" 2>&1
RC=$?; OUT=$(cat "$T_TMP/.stdout")
expect_eq "token site: passes without a proxy" "$RC $(failed) $(st token) $(st proxy) $(st ce)" "0 none ok skip ok"
printf '%s' "$OUT" | grep -q "accepts your token" && ok "token site: the CE accepts the token" || not_ok "token site: CE ($OUT)"
doctor_fails "token site without a token" "token" "token issuer" X509_USER_PROXY="$T_TMP/none" -- --site tok
doctor_fails "token site with an expired token" "token" "token issuer" BEARER_TOKEN="$("$GG_TB_MINT_TOKEN" --exp -60)" -- --site tok

# --- inside a session: the GPU checks (fake NVML and CUDA driver) ------------------------
SESS="GRIDGPU_SESSION=s1 LD_LIBRARY_PATH=$FAKE"
run_doc() { env "$@" "$GRIDGPU" --json doctor >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"; RC=$?; OUT=$(cat "$T_TMP/.stdout"); }
# shellcheck disable=SC2086
run_doc $SESS GG_FAKE_NVML="$SPECS/h100x2.conf" CUDA_VERSION=12.2.1 APPTAINER_CONTAINER=/images/work.sif GG_FAKE_CUDA_NAME="NVIDIA H100 80GB HBM3"
expect_eq "a good GPU session: all pass" "$RC $(failed) $(st gpu) $(st cuda-compat) $(st container) $(st gpu-alloc)" "0 none ok ok ok ok"
printf '%s' "$OUT" | grep -q "2 usable: NVIDIA H100 80GB HBM3 x2" && ok "the GPUs named" || not_ok "GPUs named ($OUT)"
printf '%s' "$OUT" | grep -q "1.0 MiB written to and read back from NVIDIA H100 80GB HBM3" && ok "the allocation done through libcuda" || not_ok "allocation ($OUT)"
# shellcheck disable=SC2086
doctor_fails "a driver too old for the image's CUDA" "cuda-compat" "image built for CUDA 12.2 or older" $SESS GG_FAKE_NVML="$SPECS/consumer.conf" CUDA_VERSION=12.4.1 APPTAINER_CONTAINER=/x.sif --
# shellcheck disable=SC2086
doctor_fails "no GPU given to the job" "gpu" "gridgpu request --gpus N" $SESS GG_FAKE_NVML="$SPECS/a100-mig.conf" CUDA_VISIBLE_DEVICES=NoDevFiles APPTAINER_CONTAINER=/x.sif --
expect_eq "no GPU given: no allocation tried" "$(st gpu-alloc)" skip
# shellcheck disable=SC2086
doctor_fails "a GPU that cannot allocate" "gpu-alloc" "try another node" $SESS GG_FAKE_NVML="$SPECS/h100x2.conf" GG_FAKE_CUDA=oom APPTAINER_CONTAINER=/x.sif --
# shellcheck disable=SC2086
doctor_fails "a GPU that returns other data" "gpu-alloc" "try another node" $SESS GG_FAKE_NVML="$SPECS/h100x2.conf" GG_FAKE_CUDA=corrupt APPTAINER_CONTAINER=/x.sif --
# shellcheck disable=SC2086
doctor_fails "a lost GPU" "gpu" "tell the site" $SESS GG_FAKE_NVML="$SPECS/errors.conf" APPTAINER_CONTAINER=/x.sif --
doctor_fails "a session on a node without the driver" "gpu container" "without the NVIDIA driver" GRIDGPU_SESSION=s1 --
mkdir -p "$T_TMP/nocuda" && cp "$FAKE/libnvidia-ml.so.1" "$T_TMP/nocuda/"
doctor_fails "NVML without libcuda (a container without --nv)" "gpu-alloc" "--nv" GRIDGPU_SESSION=s1 LD_LIBRARY_PATH="$T_TMP/nocuda" GG_FAKE_NVML="$SPECS/h100x2.conf" APPTAINER_CONTAINER=/x.sif --
done_testing
