#!/bin/sh
# bench/bench-session.sh [BUILDDIR]: sessions against the local test site, beside
# the peer tools measured in the same run. Not a test: it prints figures.
#
#   1. `gridgpu request --no-wait` vs `arcsub -T arcrest` of a job of the same
#      size (RUNS runs each, default 10): with a delegation gridgpu may reuse,
#      and with a new delegation every time; TLS connections per command.
#   2. Time from `gridgpu request` to a usable ssh prompt, split into the
#      client's part (until the job is submitted and staged) and waiting on the
#      CE (until the launcher publishes the sshd).
#   3. `gridgpu list` on 10,000 records vs `arcstat -a` on the jobs arcsub made
#      (the nearest comparable: arcstat asks the CE about each of its jobs).
#   4. Connect latency through both jump hosts: a fresh `ssh -J jump1,jump2`,
#      `gridgpu connect` without a control master, and with one.
#   5. gridgpu's own SSH client (libssh2, a pump thread per hop) beside OpenSSH
#      through the same two jump hosts: `freeze --session` of a sandbox on the
#      node vs `ssh NAME tar | gridgpu freeze -` (the same image either way).
# Env: GRIDGPU, RUNS, GG_TB_DIR (site state; it must be up: bench/run starts it).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
G=${GRIDGPU:-$B/bin/gridgpu}
RUNS=${RUNS:-10}
GG_TB_DIR=${GG_TB_DIR:-/tmp/gridgpu-testbed}
. "$GG_TB_DIR/env.sh"
for c in hyperfine arcsub arcstat arcclean python3 ssh; do
	command -v "$c" >/dev/null || { echo "bench-session: $c is not installed (make deps)" >&2; exit 1; }
done
[ -z "${GG_BENCH_TOOLS_ONLY:-}" ] || exit 0 # bench/run --tools
W=$(mktemp -d /tmp/gg-bench-session.XXXXXX)
export HOME=$W/home XDG_CONFIG_HOME=$W/home/.config XDG_STATE_HOME=$W/home/.local/state
export X509_USER_PROXY=$W/x509up X509_CERT_DIR=$GG_TB_CA_DIR
mkdir -p "$HOME"
cleanup() {
	names=$("$G" __complete sessions 2>/dev/null || true)
	[ -n "$names" ] && "$G" kill -q $names >/dev/null 2>&1
	"$G" clean -q >/dev/null 2>&1 || true
	arcclean -a -j "$W/jobs.dat" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM

"$G" proxy init -q --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin <"$GG_TB_USER_KEY_PASS_FILE"
"$G" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--connect-deadline 2m

median() { # hyperfine json → median seconds of the result named $2
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f" % d["results"][int(sys.argv[2])]["median"])' "$1" "$2"
}
ms() { python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * 1000))' "$1"; }
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

echo "== 1. submitting an interactive job: gridgpu request --no-wait vs arcsub -T arcrest ($RUNS runs each)"
"$G" request -q --no-wait --walltime 1h >/dev/null # a delegation to reuse
conns=$("$G" request -v --no-wait --walltime 1h 2>&1 >/dev/null | sed -n 's/^\([0-9]*\) TLS connection.*/\1/p')
rm -f "$XDG_STATE_HOME/gridgpu/delegations.json"
conns_new=$("$G" request -v --no-wait --walltime 1h 2>&1 >/dev/null | sed -n 's/^\([0-9]*\) TLS connection.*/\1/p')
xrsl='&(executable="/bin/sh")(arguments="-c" "sleep 1")(jobname="bench")'
# One --prepare per command (given once, hyperfine applies it to all). The test
# site's "worker" is this machine: each run's job starts a launcher and an sshd
# here a moment later, so every run (of either tool) first lets the one before
# settle for 2 s; on a real site the worker nodes are other machines.
hyperfine -N -w 1 --runs "$RUNS" --export-json "$W/submit.json" \
	--prepare "sleep 2" \
	--prepare "sh -c 'rm -f $XDG_STATE_HOME/gridgpu/delegations.json; sleep 2'" \
	--prepare "sleep 2" \
	-n "gridgpu request --no-wait (delegation reused)" "$G request -q --no-wait --walltime 1h" \
	-n "gridgpu request --no-wait (new delegation)" "$G request -q --no-wait --walltime 1h" \
	-n "arcsub -T arcrest" "arcsub -C $GG_TB_CE_URL -T arcrest -j $W/jobs.dat -e '$xrsl'" >/dev/null 2>&1
reuse=$(median "$W/submit.json" 0); fresh=$(median "$W/submit.json" 1); arc=$(median "$W/submit.json" 2)
printf '  %-48s %8s ms   %s\n' "gridgpu request --no-wait, delegation reused" "$(ms "$reuse")" "$(ratio "$reuse" "$arc")x arcsub (target <= 0.2), $conns TLS connection(s)"
printf '  %-48s %8s ms   %s\n' "gridgpu request --no-wait, new delegation" "$(ms "$fresh")" "$(ratio "$fresh" "$arc")x arcsub (target <= 0.5), $conns_new TLS connection(s)"
printf '  %-48s %8s ms\n' "arcsub -T arcrest (delegation + submit)" "$(ms "$arc")"

echo "== 2. request to a usable ssh prompt"
for i in 1 2 3; do
	t0=$(date +%s.%N)
	name=$("$G" request -q --no-wait --walltime 1h)
	t1=$(date +%s.%N)
	"$G" connect -q "$name" -- -o ControlPath=none true
	t2=$(date +%s.%N)
	python3 -c 'import sys; a,b,c=map(float,sys.argv[1:4]); print("  run %s: total %.0f ms = client %.0f ms + waiting on the CE and the first ssh %.0f ms" % (sys.argv[4], (c-a)*1000, (b-a)*1000, (c-b)*1000))' "$t0" "$t1" "$t2" "$i"
done

echo "== 3. listing: gridgpu list on 10,000 records vs arcstat -a"
python3 - "$XDG_STATE_HOME/gridgpu/records" <<'EOF'
import json, os, random, sys, time
d = sys.argv[1]
now = int(time.time()) - 86400
for i in range(10000):
    r = {"version": 1, "kind": "job" if i % 3 else "session", "name": "bench-%d" % i,
         "uid": "%012x" % random.getrandbits(48), "site": "tb", "ce": "https://ce.example.org/arex",
         "job_id": "x" * 54, "state": "finished", "ce_state": "FINISHED", "created": now + i,
         "updated": now + i, "walltime": 14400, "gpus": 1, "cpus": 4, "auth": "proxy"}
    with open(os.path.join(d, "bench-%d.json" % i), "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
EOF
touch -d '2 seconds ago' "$XDG_STATE_HOME/gridgpu/records"
njobs=$(arcstat -a -j "$W/jobs.dat" 2>/dev/null | grep -c '^Job:' || true)
hyperfine -N -w 2 --runs "$RUNS" --export-json "$W/list.json" \
	-n "gridgpu list (10,000 records)" "$G list" \
	-n "gridgpu --json list (10,000 records)" "$G --json list" \
	-n "arcstat -a ($njobs jobs)" "arcstat -a -j $W/jobs.dat" >/dev/null 2>&1
l=$(median "$W/list.json" 0); lj=$(median "$W/list.json" 1); a=$(median "$W/list.json" 2)
printf '  %-48s %8s ms   (target <= 50 ms)\n' "gridgpu list, 10,000 records" "$(ms "$l")"
printf '  %-48s %8s ms\n' "gridgpu --json list, 10,000 records" "$(ms "$lj")"
printf '  %-48s %8s ms   (%s ms per job; gridgpu list: %s ms per 1,000 records)\n' "arcstat -a, $njobs jobs" "$(ms "$a")" \
	"$(python3 -c "print('%.1f' % ($a * 1000 / max($njobs, 1)))")" "$(python3 -c "print('%.2f' % ($l * 1000 / 10))")"
rm -f "$XDG_STATE_HOME"/gridgpu/records/bench-*.json

echo "== 4. connect latency through two jump hosts"
name=$("$G" request -q --walltime 1h --name lat)
"$G" --json status --no-sync lat >"$W/lat.json"
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$W/lat.json")
uid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uid"])' "$XDG_STATE_HOME/gridgpu/records/lat.json") # the store's own id: not in --json
KH=$XDG_CONFIG_HOME/gridgpu/ssh/known_hosts
KEY=$XDG_CONFIG_HOME/gridgpu/ssh/keys/$uid
"$G" connect lat -- true # start the control master
hyperfine -N -w 2 --runs "$RUNS" --export-json "$W/conn.json" \
	-n "ssh -J jump1,jump2 (fresh)" "ssh -F $GG_TB_SSH_CONFIG -J jump1,jump2 -p $port -i $KEY -o IdentitiesOnly=yes -o HostKeyAlias=gridgpu-$uid -o UserKnownHostsFile=$KH -o StrictHostKeyChecking=yes $GG_TB_JOB_USER@127.0.0.1 true" \
	-n "gridgpu connect, no control master" "$G connect lat -- -o ControlPath=none true" \
	-n "gridgpu connect, control master" "$G connect lat -- true" >/dev/null 2>&1
f=$(median "$W/conn.json" 0); n=$(median "$W/conn.json" 1); c=$(median "$W/conn.json" 2)
printf '  %-48s %8s ms\n' "ssh -J jump1,jump2, fresh" "$(ms "$f")"
printf '  %-48s %8s ms   %sx ssh -J\n' "gridgpu connect, no control master" "$(ms "$n")" "$(ratio "$n" "$f")"
printf '  %-48s %8s ms   %sx ssh -J (target <= 0.2)\n' "gridgpu connect, control master" "$(ms "$c")" "$(ratio "$c" "$f")"

echo "== 5. freeze --session (libssh2 through both hops) vs ssh NAME tar | gridgpu freeze - (OpenSSH)"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config
# A sandbox of ~64 MiB on the node: incompressible data and many small files.
"$G" connect lat -- 'rm -rf sb && mkdir -p sb/data sb/lib && head -c 48M /dev/urandom >sb/data/blob &&
	cp -r /usr/lib/python3 sb/lib/ 2>/dev/null; cp -r /usr/share/perl sb/lib/ 2>/dev/null; du -sm sb | cut -f1' >"$W/sbsize"
export SOURCE_DATE_EPOCH=1700000000
hyperfine -N -w 1 --runs "$RUNS" --export-json "$W/fs.json" \
	-n "gridgpu freeze --session (libssh2)" "$G freeze -q --session lat --path sb -o $W/a.sif --force" \
	-n "ssh tar | gridgpu freeze - (OpenSSH)" "sh -c 'ssh -F $CFG -o ControlPath=none lat tar -C sb --numeric-owner -cf - . | $G freeze -q - -o $W/b.sif --force'" >/dev/null 2>&1
a=$(median "$W/fs.json" 0); o=$(median "$W/fs.json" 1)
mb=$(cat "$W/sbsize")
printf '  %-48s %8s ms   %s MiB/s, %sx OpenSSH\n' "freeze --session, $mb MiB sandbox (libssh2)" "$(ms "$a")" \
	"$(python3 -c "print('%.0f' % ($mb / $a))")" "$(ratio "$a" "$o")"
printf '  %-48s %8s ms   %s MiB/s\n' "ssh tar | freeze - (OpenSSH, no control master)" "$(ms "$o")" "$(python3 -c "print('%.0f' % ($mb / $o))")"
cmp -s "$W/a.sif" "$W/b.sif" && echo "  the two images are byte-identical" || echo "  the two images differ (labels: the --session one names its source)"

