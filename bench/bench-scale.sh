#!/bin/sh
# bench/bench-scale.sh [BUILDDIR]: many jobs (issue 52), beside the peer tool
# measured in the same run. Not a test: it prints figures.
#   0. `gridgpu submit --count N` beside `arcsub -T arcrest` of N job
#      descriptions in one run (one file of N: "+(&...)(&...)"), the same
#      wrapper and image uploaded as inputs by both, one after the other
#      (SUBMIT_RUNS of each, interleaved; arcsub's jobs are killed and cleaned
#      after each run, gridgpu's but the last). The N jobs of the last gridgpu
#      run are those of 1.
#   1. N jobs on the local test site (N=200; N=2000 with N=2000): `gridgpu
#      submit --count N` of a job that sleeps, so that they stay queued or
#      running; once the CE's states have settled, `gridgpu list --sync` beside
#      `arcstat -a` on the same jobs (arcsync fills arcstat's job list from the
#      CE), RUNS of each, interleaved A B A B; medians; gridgpu twice: through
#      a warm connection keeper (the default: its TLS connection kept from the
#      sync before) and cold (--no-keep: a handshake per command); the floor
#      of a client that connects once per command: `curl` of A-REX's least
#      answer (GET /rest) over one fresh TLS connection; the CPU of each
#      command and of A-REX's WS daemon per run. Then the system calls of
#      one unchanged sync (strace -c, when installed): fsync, rename, openat.
#   2. 10,000 records simulated in the store, on two fake CEs that the fault
#      proxy (tests/e2e/faultproxy.py, mode "jobs") answers for, one of them
#      slow (each answer after SLOW_MS, default 1000): `gridgpu list --sync`,
#      RUNS runs, interleaved with `curl` of the slow CE's job list alone
#      (its answer time: the floor); then neither CE slow for reference. Both
#      through a warm keeper and cold (--no-keep).
# Env: GRIDGPU, N (default 200), RUNS (default 5), SUBMIT_RUNS (default 1), PARTS=2
# (part 2 alone),
# SUBMIT_ONLY=1 (only 0: stop after it), ARCSUB=0 (part 0 without arcsub:
# it submits one job at a time, ~1.3 s each, so N=2000 alone takes ~45 min;
# the whole bench at N=2000 with ARCSUB=0 is ~25-40 min on 2 cores, at
# N=200 with arcsub ~10 min), SLOW_MS, FP_PORT (the first
# of the fake CEs' two ports; default GG_TB_PORT_BASE+60, else 9600), GG_TB_DIR
# (the site must be up: bench/run), BEFORE (another gridgpu binary, a build of
# an earlier commit, measured interleaved beside GRIDGPU: before and after in
# the same run).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G=${GRIDGPU:-$B/bin/gridgpu}
N=${N:-200}
RUNS=${RUNS:-5}
SUBMIT_RUNS=${SUBMIT_RUNS:-1}
SLOW_MS=${SLOW_MS:-1000}
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
. "$GG_TB_DIR/env.sh"
FP_PORT=${FP_PORT:-$((${GG_TB_PORT_BASE:-9540} + 60))}
for c in arcsub arcstat arcsync arcclean arckill curl python3; do
	command -v "$c" >/dev/null || { echo "bench-scale: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
W=$(mktemp -d /tmp/gg-bench-scale.XXXXXX)
export HOME=$W/home XDG_CONFIG_HOME=$W/home/.config XDG_STATE_HOME=$W/home/.local/state
unset XDG_RUNTIME_DIR # the keeper's socket in $W: it ends when $W is removed
export X509_USER_PROXY=$W/x509up X509_CERT_DIR=$GG_TB_CA_DIR
mkdir -p "$HOME"
R=$XDG_STATE_HOME/gridgpu/records
keepers_stop() { # the connection keepers of this run (their pids in their lock files)
	for f in "$XDG_STATE_HOME"/gridgpu/keep/*.lock; do
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	return 0
}
fp_stop() {
	for d in "$W/fp1" "$W/fp2"; do
		[ -f "$d/pid" ] && kill "$(cat "$d/pid")" 2>/dev/null
	done
	return 0
}
cleanup() {
	fp_stop
	rm -f "$R"/sim-*.json
	names=$("$G" __complete sessions 2>/dev/null || true)
	[ -n "$names" ] && "$G" kill -q $names >/dev/null 2>&1
	"$G" clean -q --all >/dev/null 2>&1 || true
	arcclean -a -j "$W/jobs.dat" >/dev/null 2>&1 || true
	arckill -a -j "$W/arcsub.dat" >/dev/null 2>&1 || true
	arcclean -a -f -j "$W/arcsub.dat" >/dev/null 2>&1 || true
	keepers_stop
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
"$G" proxy init -q --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
"$G" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap

# interleaved NAME=COMMAND ...: RUNS runs of each, in turn (A B A B); prints
# "NAME median" lines (seconds); with CPU_PID set, each line ends with
# "cpu=MS/MS": the median CPU of the command and of that process (A-REX's
# WS/REST daemon, all its threads) per run, in ms
interleaved() {
	python3 - "$RUNS" "${CPU_PID:-0}" "$@" <<'EOF'
import os, resource, statistics, subprocess, sys, time
runs, pid, cmds = int(sys.argv[1]), int(sys.argv[2]), [a.split("=", 1) for a in sys.argv[3:]]
tck = os.sysconf("SC_CLK_TCK")
def pcpu():
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tck
    except (OSError, IndexError, ValueError):
        return 0.0
def ccpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
t = {n: [] for n, _ in cmds}
cc = {n: [] for n, _ in cmds}
sc = {n: [] for n, _ in cmds}
for _ in range(runs):
    for n, c in cmds:
        c0, s0, a = ccpu(), pcpu(), time.monotonic()
        subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t[n].append(time.monotonic() - a)
        if pid:
            time.sleep(0.05) # the daemon's threads done with the connection
        cc[n].append(ccpu() - c0)
        sc[n].append(pcpu() - s0)
for n, _ in cmds:
    cpu = " cpu=%.0f/%.0f" % (1000 * statistics.median(cc[n]), 1000 * statistics.median(sc[n])) if pid else ""
    print(n, "%.4f" % statistics.median(t[n]), " ".join("%.3f" % v for v in t[n]) + cpu)
EOF
}
ms() { python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * 1000))' "$1"; }
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }
field() { sed -n "s/^$1 \([0-9.]*\) .*/\1/p" "$2"; }
syscalls() { # the counts of one command's fsync, syncfs, rename, openat
	command -v strace >/dev/null || { echo "(strace not installed)"; return; }
	strace -c -f -o "$W/strace.txt" "$@" >/dev/null 2>&1 || true
	python3 - "$W/strace.txt" <<'EOF'
import sys
c = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) >= 5 and f[-1] in ("fsync", "syncfs", "rename", "linkat", "openat", "total"):
        c[f[-1]] = f[3] if f[-1] != "total" else f[2]
print(", ".join("%s %s" % (k, c.get(k, "0")) for k in ("fsync", "syncfs", "rename", "linkat", "openat")))
EOF
}

if [ "${PARTS:-0 1 2}" != 2 ]; then # PARTS=2: part 2 alone (it needs no jobs on the site)
echo "== 0. $N jobs: gridgpu submit --count $N vs arcsub -T arcrest of $N descriptions ($SUBMIT_RUNS run(s) each, interleaved)"
sh "$top/tests/e2e/mkrootfs.sh" "$W/sandbox" sleep >/dev/null
"$G" freeze -q "$W/sandbox" -o "$W/sleep.sif"
wrapper=$top/libexec/gridgpu/batch-wrapper
off=$(python3 -c 'import struct,sys
f=open(sys.argv[1],"rb"); h=f.read(128); n=struct.unpack_from("<q",h,88)[0]; o=struct.unpack_from("<q",h,96)[0]
f.seek(o)
for i in range(n):
    d=f.read(585)
    if d[4] and struct.unpack_from("<i",d,0)[0]==0x4004: print(struct.unpack_from("<q",d,17)[0]); break' "$W/sleep.sif")
python3 - "$N" "$wrapper" "$W/sleep.sif" "$off" >"$W/many.xrsl" <<'EOF'
import sys
n, wrapper, image, off = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
one = ('(&(executable="/bin/sh")(arguments="gridgpu-wrapper" "-o" "%s" "-r" "bwrap" "image.sif" "--" '
       '"sleep" "7200")(inputfiles=("gridgpu-wrapper" "%s")("image.sif" "%s"))'
       '(outputfiles=("gridgpu-job.out" ""))(stdout="gridgpu-job.out")(walltime="120")(jobname="bench-%%d"))'
       % (off, wrapper, image))
print("+" + "".join(one % i for i in range(n)))
EOF
secs() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }
"$G" --site tb submit -q "$W/sleep.sif" --walltime 1h -- true >/dev/null # a delegation to reuse, as arcsub's
"$G" clean -q --all >/dev/null 2>&1 || true
: >"$W/t0.txt"
for r in $(seq "$SUBMIT_RUNS"); do
	t0=$(date +%s.%N)
	"$G" --site tb submit -q "$W/sleep.sif" --count "$N" --walltime 2h -- sleep 7200 >/dev/null 2>"$W/submit.err" ||
		{ echo "bench-scale: submit --count $N failed: $(tail -1 "$W/submit.err")" >&2; exit 1; }
	t1=$(date +%s.%N)
	if [ "${ARCSUB:-1}" = 1 ]; then
		arcsub -C "$GG_TB_CE_URL" -T arcrest -j "$W/arcsub.dat" "$W/many.xrsl" >"$W/arcsub.out" 2>&1 ||
			echo "  (arcsub: $(tail -1 "$W/arcsub.out"))"
	else
		echo "Job submitted: (ARCSUB=0, not run)" >"$W/arcsub.out"
	fi
	t2=$(date +%s.%N)
	echo "gridgpu $(secs "$t0" "$t1") arcsub $(secs "$t1" "$t2") $(grep -c 'Job submitted' "$W/arcsub.out")" >>"$W/t0.txt"
	arckill -a -j "$W/arcsub.dat" >/dev/null 2>&1 || true
	arcclean -a -f -j "$W/arcsub.dat" >/dev/null 2>&1 || true
	if [ "$r" -lt "$SUBMIT_RUNS" ]; then
		names=$("$G" __complete sessions 2>/dev/null || true)
		[ -n "$names" ] && "$G" kill -q $names >/dev/null 2>&1
		"$G" clean -q --all >/dev/null 2>&1 || true
	fi
done
python3 - "$W/t0.txt" "$N" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
g = statistics.median(float(r[1]) for r in rows)
a = statistics.median(float(r[3]) for r in rows)
print("  %-44s %8.1f s   %s" % ("gridgpu submit --count %s" % sys.argv[2], g, "%.2fx arcsub" % (g / a) if a > 0.5 else "(arcsub not run)"))
print("  %-44s %8.1f s   (%s submitted)" % ("arcsub -T arcrest, %s descriptions" % sys.argv[2], a, rows[-1][4]))
for r in rows:
    print("    runs: gridgpu %s s, arcsub %s s" % (r[1], r[3]))
EOF
[ -z "${SUBMIT_ONLY:-}" ] || exit 0

echo "== 1. $N jobs on the test site: gridgpu list --sync vs arcstat -a ($RUNS runs each, interleaved)"
# The CE takes the jobs through its states for a while (A-REX moves them in
# batches): until no record is in one of A-REX's states before the batch
# system and two syncs in a row leave every record as it was (the store's
# directory untouched), at most 10 minutes.
moving() {
	python3 - "$R" <<'EOF'
import json, os, sys
early = ("ACCEPTING", "ACCEPTED", "PREPARING", "PREPARED", "SUBMITTING")
n = 0
for f in os.listdir(sys.argv[1]):
    if f.endswith(".json"):
        n += json.load(open(os.path.join(sys.argv[1], f))).get("ce_state", "") in early
print(n)
EOF
}
still=0
for _ in $(seq 120); do
	before=$(stat -c %y "$R")
	"$G" list --sync >/dev/null 2>&1 || true
	if [ "$(stat -c %y "$R")" = "$before" ] && [ "$(moving)" = 0 ]; then
		still=$((still + 1))
		[ "$still" -ge 2 ] && break
	else
		still=0
	fi
	sleep 5
done
[ "$still" -ge 2 ] || echo "  (the CE's states had not settled after 10 minutes: figures include writes)"
# A-REX starting 200 jobs in Slurm runs a config parser per job for minutes
# after the states settle: until the load average is under 1 (at most 5
# minutes), so that both tools are measured beside a quiet CE.
for _ in $(seq 60); do
	awk '{ exit !($1 < 1.0) }' /proc/loadavg && break
	sleep 5
done
echo "  (load average at the runs: $(cut -d' ' -f1-3 /proc/loadavg))"
# arcstat's job list: the CE's jobs (arcsync), then only those of these records
arcsync -C "$GG_TB_CE_URL" -j "$W/jobs.dat" -f -T >/dev/null 2>&1
python3 - "$W/jobs.dat" "$R" <<'EOF'
import json, os, sqlite3, sys
ours = set()
for f in os.listdir(sys.argv[2]):
    if f.endswith(".json"):
        ours.add(json.load(open(os.path.join(sys.argv[2], f))).get("job_id"))
db = sqlite3.connect(sys.argv[1])
for (i,) in db.execute("select id from jobs").fetchall():
    if i.rstrip("/").rsplit("/", 1)[-1] not in ours:
        db.execute("delete from jobs where id = ?", (i,))
db.commit()
EOF
njobs=$(arcstat -a -j "$W/jobs.dat" 2>/dev/null | grep -c '^Job:' || true)
# the floor of any client that opens a connection per command: curl's one
# TLS handshake with the proxy and A-REX's least answer (GET /rest, 17 bytes)
floor="curl -s -o /dev/null --capath $X509_CERT_DIR --cert $X509_USER_PROXY --key $X509_USER_PROXY $GG_TB_CE_URL/rest"
"$G" list --sync >/dev/null 2>&1 || true # the keeper started (and its connections made, next)
"$G" list --sync >/dev/null 2>&1 || true
CPU_PID=$(cat "$GG_TB_DIR/run/arex-ws.pid" 2>/dev/null || echo 0) \
	interleaved "sync=$G list --sync" "arcstat=arcstat -a -j $W/jobs.dat" "floor=$floor" \
	"cold=$G --no-keep list --sync" ${BEFORE:+"before=$BEFORE list --sync"} >"$W/t1.txt"
g=$(field sync "$W/t1.txt"); a=$(field arcstat "$W/t1.txt"); f=$(field floor "$W/t1.txt")
c=$(field cold "$W/t1.txt")
printf '  %-44s %8s ms   %sx arcstat -a (target <= 0.5)\n' "gridgpu list --sync, $N unchanged, warm keeper" "$(ms "$g")" "$(ratio "$g" "$a")"
printf '  %-44s %8s ms   %sx arcstat -a\n' "the same, cold (--no-keep)" "$(ms "$c")" "$(ratio "$c" "$a")"
[ -z "${BEFORE:-}" ] || { b=$(field before "$W/t1.txt")
	printf '  %-44s %8s ms   %sx arcstat -a\n' "the same, BEFORE's gridgpu" "$(ms "$b")" "$(ratio "$b" "$a")"; }
printf '  %-44s %8s ms\n' "arcstat -a, $njobs jobs" "$(ms "$a")"
printf '  %-44s %8s ms   %sx arcstat -a (the floor)\n' "curl: one handshake, A-REX's least answer" "$(ms "$f")" "$(ratio "$f" "$a")"
echo "    (cpu=CLIENT/A-REX: median CPU ms per run of the command and of A-REX's WS daemon)"
sed 's/^/    runs: /' "$W/t1.txt"
echo "  one unchanged list --sync: $(syscalls "$G" list --sync)"
names=$("$G" __complete sessions 2>/dev/null || true)
[ -n "$names" ] && "$G" kill -q $names >/dev/null 2>&1
"$G" clean -q --all >/dev/null 2>&1 || true
arcclean -a -j "$W/jobs.dat" >/dev/null 2>&1 || true

fi

echo "== 2. 10,000 records on two fake CEs (fault proxy), one answering after $SLOW_MS ms"
fp() { # fp DIR PORT MODE...: a fake CE, once it listens
	_d=$1 _p=$2
	shift 2
	python3 "$top/tests/e2e/faultproxy.py" --port "$_p" --dir "$_d" --ca-cert "$GG_TB_DIR/ca/ca.pem" \
		--ca-key "$GG_TB_DIR/ca/ca.key" --mode "$*" >"$_d.out" 2>&1 &
	for _ in $(seq 100); do grep -q '^listening' "$_d/log" 2>/dev/null && return 0; sleep 0.1; done
	echo "bench-scale: the fault proxy on port $_p did not start: $(cat "$_d.out")" >&2
	exit 1
}
fp "$W/fp1" "$FP_PORT" jobs sima 5000 RUNNING
fp "$W/fp2" $((FP_PORT + 1)) jobs simb 5000 RUNNING delay "$SLOW_MS"
python3 - "$R" "$FP_PORT" <<'EOF'
import json, os, random, sys, time
d, port = sys.argv[1], int(sys.argv[2])
os.makedirs(d, mode=0o700, exist_ok=True)
now = int(time.time()) - 86400
for i in range(10000):
    ce, p = (port, "sima") if i % 2 == 0 else (port + 1, "simb")
    r = {"version": 1, "kind": "job", "name": "sim-%d" % i,
         "uid": "%012x" % random.getrandbits(48), "site": "tb",
         "ce": "https://localhost:%d/arex" % ce, "job_id": "%s%d" % (p, i // 2),
         "state": "running", "ce_state": "RUNNING", "created": now + i, "updated": now + i,
         "walltime": 14400, "gpus": 1, "cpus": 4, "auth": "proxy"}
    with open(os.path.join(d, "sim-%d.json" % i), "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
EOF
"$G" list --sync >/dev/null 2>&1 || true # the store's own layout of each record, once
slow="curl -s -o /dev/null --capath $X509_CERT_DIR --cert $X509_USER_PROXY --key $X509_USER_PROXY"
slow="$slow https://localhost:$((FP_PORT + 1))/arex/rest/1.0/jobs?state=RUNNING"
"$G" list --sync >/dev/null 2>&1 || true # the keeper's connections to the two CEs
interleaved "two=$G list --sync" "slow=$slow" "twocold=$G --no-keep list --sync" \
	${BEFORE:+"before=$BEFORE list --sync"} >"$W/t2.txt"
g=$(field two "$W/t2.txt")
printf '  %-44s %8s ms   (target <= 2000 ms)\n' "gridgpu list --sync, 10,000 records, 2 CEs" "$(ms "$g")"
printf '  %-44s %8s ms\n' "the same, cold (--no-keep)" "$(ms "$(field twocold "$W/t2.txt")")"
printf '  %-44s %8s ms\n' "curl of the slow CE's job list alone" "$(ms "$(field slow "$W/t2.txt")")"
[ -z "${BEFORE:-}" ] || printf '  %-44s %8s ms\n' "the same, BEFORE's gridgpu" "$(ms "$(field before "$W/t2.txt")")"
sed 's/^/    runs: /' "$W/t2.txt"
echo "  one unchanged list --sync: $(syscalls "$G" list --sync)"
printf "jobs simb 5000 RUNNING\n" >"$W/fp2/mode.p" && mv "$W/fp2/mode.p" "$W/fp2/mode"
interleaved "fast=$G list --sync" >"$W/t3.txt"
printf '  %-44s %8s ms\n' "the same, neither CE slow" "$(ms "$(field fast "$W/t3.txt")")"
fp_stop
rm -f "$R"/sim-*.json
