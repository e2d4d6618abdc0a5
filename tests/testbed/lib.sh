# shellcheck shell=bash disable=SC2034 # the variables are used by the sourcing scripts
# Shared helpers of the gridgpu local test site (site-up, site-down, site-status,
# mint-token).  Sourced, never run.  Pitfall numbers (§10 pN, §9 pN) refer to
# /work/shared/notes/arex.md.

# ---- shape of the site ---------------------------------------------------------
# Two sites can run side by side (CI groups, engineers sharing a machine): the
# namespace, the ports and the state dir come from the environment.  The
# defaults give the historical site: netns ggsite, ports 9522-9524, 9543-9544.
#   GG_TB_NS         network namespace (default ggsite)
#   GG_TB_PORT_BASE  jump1 = BASE+2, jump2 = +3, worker = +4, Slurm login node = +5,
#                    jumpotp (TOTP) = +8, REST = +23,
#                    issuer = +24, VOMS = +25, slurmctld = +30, slurmd = +31,
#                    storage element (root:// and https:// on one port) = +40,
#                    its XCache = +41, its door (a redirector) = +42 (default 9520)
#   GG_TB_DIR        state dir (default /tmp/gridgpu-testbed)
#   GRIDGPU_TESTBED_LRMS  slurm (default) or fork: A-REX's batch system.  Slurm
#                    is the site the tests, make demo and the benchmarks run
#                    against; every e2e file passes on it.  fork (A-REX runs
#                    jobs as plain processes: no queue, no GPUs handed out)
#                    is kept for a quick look without Slurm; no test needs
#                    it (t-slurm skips there, t-newcomer maps GPUs to its
#                    one queue)
#   GRIDGPU_TESTBED_GPUS  the node's (fake) GPUs, Slurm's gres and the GPU RTE's
#                    table: a100 (default: 3 A100-SXM4-40GB, cc 8.0, and an
#                    A100-SXM4-80GB split into 7 MIG 1g.10gb) or t4 (4 Tesla T4,
#                    16 GB class: 15360 MiB as nvidia-smi says it, cc 7.5, no
#                    MIG).  Two sites side by side with different GPUs: what
#                    matchmaking (submit/request --site auto) is tested on
TB_USER=gguser              # unprivileged account jobs and ssh logins map to
TB_JOB_USER2=ggprod         # the account the VO's production role maps to
TB_VO=testvo                # the site's VO (VOMS server, A-REX authgroups)
TB_TOKEN_SUB=gridgpu-test
TB_TOKEN_KID=gridgpu-test-key
TB_CA_DN="/DC=org/DC=example/CN=gridgpu Test CA"
TB_BAD_CA_DN="/DC=org/DC=example/CN=gridgpu Untrusted CA"
TB_USER_DN="/DC=org/DC=example/CN=gridgpu Test User"
TB_EXPIRED_DN="/DC=org/DC=example/CN=gridgpu Expired User"
TB_BAD_USER_DN="/DC=org/DC=example/CN=gridgpu Untrusted User"
TB_VO_USER_DN="/DC=org/DC=example/CN=gridgpu VO Member" # A-REX admits it by VOMS attributes only
TB_VO_OUTSIDER_DN="/DC=org/DC=example/CN=gridgpu VO Outreach" # in the VO, in no group A-REX admits
TB_HOST_DN="/DC=org/DC=example/CN=localhost"
TB_PY=/usr/bin/python3      # Debian's python (python3-cryptography); not a pyenv shim
TB_MARKER=.gridgpu-testbed  # marks a directory as a test-site state dir
TB_XRD_USER=ggxrd           # the storage element and the cache run as this account (xrootd refuses root)

# Sanitised environment for every daemon we start, so that the caller's X509_*,
# BEARER_TOKEN, LD_* etc. never leak into A-REX or (through it) into jobs.
TB_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root)

TB_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ---- paths --------------------------------------------------------------------
# tb_paths DIR: set every TB_* path below DIR (made absolute).
tb_paths() {
	local d=${1:-${GG_TB_DIR:-/tmp/gridgpu-testbed}}
	case $d in /*) ;; *) d=$PWD/$d ;; esac
	TB_DIR=${d%/}
	TB_RUN=$TB_DIR/run
	TB_LOG=$TB_DIR/log
	TB_CA=$TB_DIR/ca                    # CA keys and openssl config (private)
	TB_CA_DIR=$TB_DIR/certificates      # trusted CA dir, hashed
	TB_BAD_CA_DIR=$TB_DIR/bad-certificates
	TB_HOSTD=$TB_DIR/host
	TB_USERD=$TB_DIR/user
	TB_ISS=$TB_DIR/issuer
	TB_AREX=$TB_DIR/arex
	TB_SSH=$TB_DIR/ssh
	TB_CREATED=$TB_RUN/created          # paths outside DIR we created (one a line)
	TB_SLURM=$TB_DIR/slurm              # Slurm and munge: config, state, spool
	TB_VOMS=$TB_DIR/voms                # VOMS server, its MariaDB, the clients' vomses and vomsdir
	TB_SE=$TB_DIR/storage               # XRootD storage element: config, data (/store), logs
	TB_XC=$TB_DIR/xcache                # XRootD proxy cache in front of it: config, cached blocks
	tb_shape
}

# tb_shape: the namespace, ports and batch system of the site in TB_DIR: the
# environment when set, else what site-up recorded in TB_DIR/run/shape, else
# the defaults.  Fails (exit 2) on a bad value.
tb_shape() {
	local ns='' base='' lrms='' gpus='' k v
	if [ -r "$TB_RUN/shape" ]; then
		while IFS='=' read -r k v; do
			case $k in ns) ns=$v ;; port_base) base=$v ;; lrms) lrms=$v ;; gpus) gpus=$v ;; esac
		done <"$TB_RUN/shape"
	fi
	TB_NS=${GG_TB_NS:-${ns:-ggsite}}
	TB_PORT_BASE=${GG_TB_PORT_BASE:-${base:-9520}}
	TB_LRMS=${GRIDGPU_TESTBED_LRMS:-${lrms:-slurm}}
	TB_GPUS=${GRIDGPU_TESTBED_GPUS:-${gpus:-a100}}
	case $TB_GPUS in a100 | t4) ;; *) echo "testbed: GRIDGPU_TESTBED_GPUS must be a100 or t4, not '$TB_GPUS'" >&2; exit 2 ;; esac
	case $TB_NS in '' | *[!a-zA-Z0-9_-]*) echo "testbed: GG_TB_NS must be a plain name, not '$TB_NS'" >&2; exit 2 ;; esac
	case $TB_PORT_BASE in '' | *[!0-9]*) echo "testbed: GG_TB_PORT_BASE must be a number, not '$TB_PORT_BASE'" >&2; exit 2 ;; esac
	if [ "$TB_PORT_BASE" -lt 1024 ] || [ "$TB_PORT_BASE" -gt 65000 ]; then
		echo "testbed: GG_TB_PORT_BASE must be 1024-65000, not $TB_PORT_BASE" >&2
		exit 2
	fi
	case $TB_LRMS in fork | slurm) ;; *) echo "testbed: GRIDGPU_TESTBED_LRMS must be fork or slurm, not '$TB_LRMS'" >&2; exit 2 ;; esac
	TB_REST_PORT=$((TB_PORT_BASE + 23))      # A-REX WS/REST, bridged to the root namespace
	TB_ISSUER_PORT=$((TB_PORT_BASE + 24))    # OIDC issuer, inside; bridged to the root namespace
	TB_VOMS_PORT=$((TB_PORT_BASE + 25))      # VOMS server, bridged to the root namespace
	TB_JUMP1_PORT=$((TB_PORT_BASE + 2))      # sshd jump1, root namespace
	TB_JUMP2_PORT=$((TB_PORT_BASE + 3))      # sshd jump2, inside; bridged to the root namespace
	TB_WORKER_PORT=$((TB_PORT_BASE + 4))     # sshd "worker", inside only
	TB_LOGIN_PORT=$((TB_PORT_BASE + 5))      # sshd "login", the Slurm login node, inside only
	TB_SLURMCTLD_PORT=$((TB_PORT_BASE + 30)) # slurmctld, inside only
	TB_SLURMD_PORT=$((TB_PORT_BASE + 31))    # slurmd, inside only
	TB_SE_PORT=$((TB_PORT_BASE + 40))        # XRootD SE: root:// and https:// (XrdHttp); bridged
	TB_XC_PORT=$((TB_PORT_BASE + 41))        # XRootD proxy cache (XCache), inside only
	TB_DOOR_PORT=$((TB_PORT_BASE + 42))      # XRootD door of the SE: redirects to it; bridged
	TB_CE_URL="https://localhost:$TB_REST_PORT/arex"
	TB_ISSUER="https://localhost:$TB_ISSUER_PORT"
	TB_NETNS_ETC=/etc/netns/$TB_NS
}

# tb_shape_guard WHAT: refuse (one line, exit 2) when TB_DIR/run/shape records
# a shape that the environment's GG_TB_NS, GG_TB_PORT_BASE,
# GRIDGPU_TESTBED_LRMS or GRIDGPU_TESTBED_GPUS contradicts: a command meant
# for one site must not act on another's directory (site-down with a second site's environment and the
# default DIR once stopped the shared site).
tb_shape_guard() {
	local k v rec=() bad='' gpus=a100
	[ -r "$TB_RUN/shape" ] || return 0
	while IFS='=' read -r k v; do
		case $k in
		gpus) gpus=$v; continue ;;
		ns) [ -z "${GG_TB_NS:-}" ] || [ "$GG_TB_NS" = "$v" ] || bad="$bad GG_TB_NS=$GG_TB_NS" ;;
		port_base) [ -z "${GG_TB_PORT_BASE:-}" ] || [ "$GG_TB_PORT_BASE" = "$v" ] || bad="$bad GG_TB_PORT_BASE=$GG_TB_PORT_BASE" ;;
		lrms) [ -z "${GRIDGPU_TESTBED_LRMS:-}" ] || [ "$GRIDGPU_TESTBED_LRMS" = "$v" ] || bad="$bad GRIDGPU_TESTBED_LRMS=$GRIDGPU_TESTBED_LRMS" ;;
		*) continue ;;
		esac
		rec+=("$k=$v")
	done <"$TB_RUN/shape"
	# a shape without gpus= is a100 (recorded only when not the default)
	rec+=("gpus=$gpus")
	[ -z "${GRIDGPU_TESTBED_GPUS:-}" ] || [ "$GRIDGPU_TESTBED_GPUS" = "$gpus" ] ||
		bad="$bad GRIDGPU_TESTBED_GPUS=$GRIDGPU_TESTBED_GPUS"
	[ -z "$bad" ] && return 0
	echo "testbed: $1: refusing: $TB_DIR is the site ${rec[*]}, but the environment says${bad} (name that site's DIR, or unset those)" >&2
	exit 2
}

# tb_shape_text: the shape as site-up records it in TB_DIR/run/shape (gpus=
# only when not the default: sites brought up before it existed stay the same).
tb_shape_text() {
	printf 'ns=%s\nport_base=%s\nlrms=%s\n' "$TB_NS" "$TB_PORT_BASE" "$TB_LRMS"
	[ "$TB_GPUS" = a100 ] || printf 'gpus=%s\n' "$TB_GPUS"
}

# ---- output -------------------------------------------------------------------
say() { printf 'testbed: %s\n' "$*"; }
warn() { printf 'testbed: warning: %s\n' "$*" >&2; }
# die MSG [LOGFILE...]: print the message and the tail of each log, exit 1.
die() {
	local msg=$1 f
	shift
	printf 'testbed: error: %s\n' "$msg" >&2
	for f in "$@"; do
		[ -s "$f" ] || continue
		printf 'testbed: --- last lines of %s ---\n' "$f" >&2
		tail -n 20 "$f" | sed 's/^/  | /' >&2
	done
	[ -z "${TB_DIE_HINT:-}" ] || printf 'testbed: %s\n' "$TB_DIE_HINT" >&2
	exit 1
}

# now_ms: monotonic-ish wall clock in milliseconds (for bounded waits).
now_ms() { local s; s=$(date +%s%N); echo $((s / 1000000)); }

# ---- processes ------------------------------------------------------------------
# pid_gone PID: true when the process no longer exists.  A zombie counts as gone:
# pid 1 of this VM reaps orphans only every ~2 s and kill -0 succeeds on a
# zombie (§10 pitfall 11).
pid_gone() {
	local line
	[ -r "/proc/$1/status" ] || return 0
	{
		while IFS= read -r line; do
			case $line in
			State:*[ZX]\ \(*) return 0 ;;
			State:*) return 1 ;;
			esac
		done <"/proc/$1/status"
	} 2>/dev/null
	return 0
}

# pid_cmdline PID: the command line with NULs as spaces.
pid_cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# pidfile_pid FILE PATTERN: print the pid from FILE when that process is alive and
# its command line contains PATTERN (guards against recycled pids); else fail.
pidfile_pid() {
	local pid
	[ -r "$1" ] || return 1
	# xrootd writes its pid file without a newline: read fails, the pid is there
	read -r pid <"$1" 2>/dev/null || [ -n "${pid:-}" ] || return 1
	case $pid in '' | *[!0-9]*) return 1 ;; esac
	pid_gone "$pid" && return 1
	case $(pid_cmdline "$pid") in *"$2"*) echo "$pid" ;; *) return 1 ;; esac
}

# descendants PID...: all descendants of the given pids, one a line.  Killed
# listeners (sshd, socat fork) leave their per-connection children running, so
# these are collected *before* the listener is signalled (§10 pitfall 10).
descendants() {
	ps -e -o pid= -o ppid= | awk -v roots="$*" '
		{ kids[$2] = kids[$2] " " $1 }
		END {
			n = split(roots, q, " "); h = 1
			while (h <= n) {
				p = q[h++]; m = split(kids[p], k, " ")
				for (j = 1; j <= m; j++) { q[++n] = k[j]; print k[j] }
			}
		}'
}

# wait_gone TIMEOUT_MS PID...: poll /proc every 0.1 s until all are gone.
wait_gone() {
	local limit=$1 p t0 alive
	shift
	t0=$(now_ms)
	while :; do
		alive=
		for p in "$@"; do pid_gone "$p" || alive="$alive $p"; done
		[ -z "$alive" ] && return 0
		[ $(($(now_ms) - t0)) -ge "$limit" ] && return 1
		sleep 0.1
	done
}

# kill_pids TIMEOUT_MS PID...: SIGTERM, bounded wait, then SIGKILL (+1 s wait).
# The pids that needed SIGKILL are left in TB_KILLED.
kill_pids() {
	local limit=$1 p left=()
	shift
	TB_KILLED=
	[ $# -eq 0 ] && return 0
	kill -TERM "$@" 2>/dev/null
	wait_gone "$limit" "$@" && return 0
	for p in "$@"; do pid_gone "$p" || left+=("$p"); done
	TB_KILLED=${left[*]}
	kill -KILL "${left[@]}" 2>/dev/null
	wait_gone 1000 "${left[@]}"
}

# stop_pidfile NAME PIDFILE PATTERN TIMEOUT_MS: stop a daemon and its whole tree.
stop_pidfile() {
	local name=$1 pf=$2 pat=$3 limit=$4 pid kids
	if pid=$(pidfile_pid "$pf" "$pat"); then
		kids=$(descendants "$pid")
		# shellcheck disable=SC2086 # word splitting of the pid list is intended
		if kill_pids "$limit" "$pid" $kids; then
			say "$name stopped (pid $pid${kids:+ and $(echo $kids | wc -w) children})"
		else
			warn "$name (pid $pid) did not stop"
		fi
	else
		say "$name not running"
	fi
	rm -f "$pf"
}

# tb_lock: serialise site-up/site-down on one DIR (fd 9; daemons must be
# started with 9>&- so that they do not inherit the lock).
tb_lock() {
	exec 9>"$TB_RUN/lock"
	flock -w 120 9 || die "another site-up/site-down holds $TB_RUN/lock"
}

# tb_accounts_lock / tb_accounts_unlock: the accounts are the machine's, not one DIR's.
# Two sites started side by side (e2e) both found an account missing and both ran
# useradd, and the second failed ("user already exists"); usermod and useradd also fail
# while another holds /etc/passwd's lock. So a site checks and changes accounts only
# under a machine-wide lock (fd 8).
tb_accounts_lock() {
	local f=/run/lock/gridgpu-testbed-accounts
	[ -d /run/lock ] || f=/tmp/gridgpu-testbed-accounts.lock
	exec 8>"$f"
	flock -w 120 8 || die "another site-up holds $f"
}
tb_accounts_unlock() { exec 8>&-; }

# ---- netns and listening ports -------------------------------------------------
ns_exists() { [ -e "/run/netns/$TB_NS" ]; }
# ns_ours: the namespace was made by site-up for this DIR (recorded in DIR).
ns_ours() { grep -qxF "netns:$TB_NS" "$TB_CREATED" 2>/dev/null; }
# ns_owner_guess: the state dir of the site whose daemons run in the namespace
# (from their command lines), for messages.
ns_owner_guess() {
	local p
	for p in $(ip netns pids "$TB_NS" 2>/dev/null); do
		{ pid_cmdline "$p"; echo; } | sed -n 's#.* -f \(/.*\)/ssh/[a-z0-9]*/sshd_config .*#\1#p; s#.*arched -c \(/.*\)/arex/tmp/.*#\1#p'
	done | head -n 1
}

# listening NS PORT: true when something listens on 127.0.0.1:PORT (NS "" = root).
listening() {
	local out
	if [ -n "$1" ]; then
		ns_exists || return 1
		out=$(ss -N "$1" -Hltn "sport = :$2" 2>/dev/null)
	else
		out=$(ss -Hltn "sport = :$2" 2>/dev/null)
	fi
	[ -n "$out" ]
}

# wait_for TIMEOUT_MS CMD...: poll CMD every 0.05 s until it succeeds.
wait_for() {
	local limit=$1 t0
	shift
	t0=$(now_ms)
	until "$@"; do
		[ $(($(now_ms) - t0)) -ge "$limit" ] && return 1
		sleep 0.05
	done
}

# tb_slurm CMD...: a Slurm command inside the namespace, with the site's slurm.conf.
tb_slurm() { ip netns exec "$TB_NS" env SLURM_CONF="$TB_SLURM/etc/slurm.conf" "$@"; }

# ---- files ---------------------------------------------------------------------
# put FILE MODE: write stdin to FILE atomically with MODE (temp file + rename).
put() {
	local tmp
	tmp=$(mktemp "$1.XXXXXX") || return 1
	cat >"$tmp" && chmod "$2" "$tmp" && mv -f "$tmp" "$1"
}

# sq STRING: STRING single-quoted for sh.
sq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# ---- component table -------------------------------------------------------------
# name|pidfile|cmdline pattern|netns ("" = root)|port ("" = none)
tb_components() {
	cat <<EOF
arex|$TB_RUN/arex.pid|arched -c $TB_AREX/tmp/|$TB_NS|
arex-ws|$TB_RUN/arex-ws.pid|arched -c $TB_AREX/tmp/|$TB_NS|$TB_REST_PORT
issuer|$TB_RUN/issuer.pid|oidc-issuer.py --dir $TB_DIR |$TB_NS|$TB_ISSUER_PORT
jump2|$TB_RUN/jump2.pid|$TB_SSH/jump2/sshd_config |$TB_NS|$TB_JUMP2_PORT
worker|$TB_RUN/worker.pid|$TB_SSH/worker/sshd_config |$TB_NS|$TB_WORKER_PORT
jump1|$TB_RUN/jump1.pid|$TB_SSH/jump1/sshd_config ||$TB_JUMP1_PORT
jumpotp|$TB_RUN/jumpotp.pid|$TB_SSH/jumpotp/sshd_config ||$((TB_PORT_BASE + 8))
bridge-rest|$TB_RUN/bridge-rest.pid|TCP-LISTEN:$TB_REST_PORT,bind=127.0.0.1||$TB_REST_PORT
bridge-jump2|$TB_RUN/bridge-jump2.pid|TCP-LISTEN:$TB_JUMP2_PORT,bind=127.0.0.1||$TB_JUMP2_PORT
mariadb|$TB_RUN/mariadb.pid|mariadbd --no-defaults --datadir=$TB_VOMS/db |$TB_NS|
voms|$TB_RUN/voms.pid|voms -conf $TB_VOMS/voms.conf|$TB_NS|$TB_VOMS_PORT
bridge-voms|$TB_RUN/bridge-voms.pid|TCP-LISTEN:$TB_VOMS_PORT,bind=127.0.0.1||$TB_VOMS_PORT
bridge-issuer|$TB_RUN/bridge-issuer.pid|TCP-LISTEN:$TB_ISSUER_PORT,bind=127.0.0.1||$TB_ISSUER_PORT
se|$TB_SE/run/xrootd.pid|xrootd -R $TB_XRD_USER -c $TB_SE/se.cfg|$TB_NS|$TB_SE_PORT
xcache|$TB_XC/run/xrootd.pid|xrootd -R $TB_XRD_USER -c $TB_XC/xcache.cfg|$TB_NS|$TB_XC_PORT
se-door|$TB_SE/door/run/xrootd.pid|xrootd -R $TB_XRD_USER -c $TB_SE/door/door.cfg|$TB_NS|$TB_DOOR_PORT
bridge-se|$TB_RUN/bridge-se.pid|TCP-LISTEN:$TB_SE_PORT,bind=127.0.0.1||$TB_SE_PORT
bridge-door|$TB_RUN/bridge-door.pid|TCP-LISTEN:$TB_DOOR_PORT,bind=127.0.0.1||$TB_DOOR_PORT
EOF
	[ "$TB_LRMS" = slurm ] || return 0
	cat <<EOF
munged|$TB_RUN/munged.pid|munged -F --socket=$TB_SLURM/run/munge.socket|$TB_NS|
slurmctld|$TB_RUN/slurmctld.pid|slurmctld -D -f $TB_SLURM/etc/slurm.conf|$TB_NS|$TB_SLURMCTLD_PORT
slurmd|$TB_RUN/slurmd.pid|slurmd -D -f $TB_SLURM/etc/slurm.conf|$TB_NS|$TB_SLURMD_PORT
login|$TB_RUN/login.pid|$TB_SSH/login/sshd_config |$TB_NS|$TB_LOGIN_PORT
EOF
}

comp() { # NAME -> sets C_PF C_PAT C_NS C_PORT from the component table
	local line
	line=$(tb_components | grep "^$1|")
	IFS='|' read -r _ C_PF C_PAT C_NS C_PORT <<<"$line"
}

# running NAME: print the pid when the component runs (and listens, if it has a port).
running() {
	local pid
	comp "$1"
	pid=$(pidfile_pid "$C_PF" "$C_PAT") || return 1
	if [ -n "$C_PORT" ]; then listening "$C_NS" "$C_PORT" || return 1; fi
	echo "$pid"
}
