#!/bin/bash
# t-site-real.sh: proof that the local test site is real (TAP output).
#
# Needs a site brought up by tests/testbed/site-up and its environment
# (GG_TB_*; sourced from $GG_TB_DIR/env.sh, default /tmp/gridgpu-testbed, when
# not exported).  Runs as root (it looks into the network namespace).
#   (a) a job submitted with plain curl to A-REX's REST interface runs to FINISHED
#       inside the namespace, and its output comes back over REST
#   (b) ssh through jump1 and jump2 reaches the worker sshd inside the namespace
#   (c) the worker is not reachable directly, nor through jump1 alone
#   (d) the REST port in the root namespace is the socat bridge; arched lives inside
#   (e) a bearer token from mint-token is accepted, an expired one refused
set -u

if [ -z "${GG_TB_CE_URL:-}" ] || [ -z "${GG_TB_NETNS:-}" ]; then
	env_sh=${GG_TB_DIR:-/tmp/gridgpu-testbed}/env.sh
	# shellcheck source=/dev/null
	[ -r "$env_sh" ] && . "$env_sh"
fi

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	local l
	for l in "$@"; do printf '#   %s\n' "$l"; done
}
bail() { echo "Bail out! $*"; echo "1..$((n + 1))"; exit 1; }
diag() { printf '# %s\n' "$*"; }

for v in GG_TB_DIR GG_TB_NETNS GG_TB_CE_URL GG_TB_CA_DIR GG_TB_USER_CERT GG_TB_USER_KEY_PLAIN \
	GG_TB_SSH_CONFIG GG_TB_SSH_KEY GG_TB_SSH_KNOWN_HOSTS GG_TB_JOB_USER GG_TB_WORKER; do
	[ -n "${!v:-}" ] || bail "$v is not set: run tests/testbed/site-up and source its env.sh"
done
[ "$(id -u)" = 0 ] || bail "needs root (ip netns exec, /proc/<pid>/ns of root daemons)"
MINT=${GG_TB_MINT_TOKEN:-$(dirname "$(readlink -f "$0")")/../testbed/mint-token}
REST=$GG_TB_CE_URL/rest/1.0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/t-site-real.XXXXXX")
JOB=
worker_port=${GG_TB_WORKER##*:}

# curl_cert ARGS...: REST call with the user's certificate; body to $WORK/body,
# prints the HTTP status.  Errors have an empty body and the text in the reason
# phrase (notes §9 p7), so headers are kept in $WORK/headers.
curl_cert() {
	curl -sS --max-time 20 -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' \
		--cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" --capath "$GG_TB_CA_DIR" \
		-H 'Accept: application/json' "$@" 2>"$WORK/curl.err"
}
reason() { sed -n '1s/^HTTP[^ ]* //p' "$WORK/headers" 2>/dev/null | tr -d '\r'; }
# json_field NAME FILE: the first "NAME":"value" in a JSON document
json_field() { grep -o "\"$1\":\"[^\"]*\"" "$2" | head -n 1 | sed 's/^"[^"]*":"//; s/"$//'; }

cleanup() {
	if [ -n "$JOB" ]; then
		curl_cert -X POST -H 'Content-Type: application/json' \
			--data "{\"job\":[{\"id\":\"$JOB\"}]}" "$REST/jobs?action=clean" >/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

site_ns=$(ip netns exec "$GG_TB_NETNS" readlink /proc/self/ns/net 2>/dev/null)
root_ns=$(readlink /proc/self/ns/net)
[ -n "$site_ns" ] || bail "cannot enter netns $GG_TB_NETNS (is the site up?)"
[ "$site_ns" != "$root_ns" ] || bail "netns $GG_TB_NETNS is the root namespace?"
diag "site netns $site_ns, root netns $root_ns"

# ---- (a) a real job through REST ------------------------------------------------
# (no "$(...)" in the job's shell code: xRSL has its own $(NAME) substitution)
xrsl='&(jobname="t-site-real")(executable="/bin/sh")(arguments="-c" "echo hello-from-site; readlink /proc/self/ns/net | sed s/^/netns=/; id -un | sed s/^/user=/")(stdout="out.txt")(outputfiles=("out.txt" ""))'
code=$(curl_cert -X POST --data-binary "$xrsl" "$REST/jobs?action=new")
# HTTP 201 is not success by itself: each job carries its own status-code (§9 p6)
JOB=$(json_field id "$WORK/body")
jcode=$(json_field status-code "$WORK/body")
if [ "$code" = 201 ] && [ "$jcode" = 201 ] && [ -n "$JOB" ]; then
	ok "(a) curl submitted an xRSL job to $REST/jobs?action=new (id $JOB)"
else
	not_ok "(a) curl submitted an xRSL job" "HTTP $code $(reason), job status-code '$jcode'" \
		"body: $(head -c 300 "$WORK/body" 2>/dev/null)" "curl: $(cat "$WORK/curl.err")"
fi

state='' t0=$(date +%s)
if [ -n "$JOB" ]; then
	# Waiting on an external system (the fork LRMS notices the exit on a 10 s
	# scan cycle), so poll with short sleeps under a deadline.  diagnose/status
	# is the fresh grid-manager state (§4.4).
	while [ $(($(date +%s) - t0)) -lt 60 ]; do
		code=$(curl_cert "$REST/jobs/$JOB/diagnose/status")
		state=$(tr -d '[:space:]' <"$WORK/body" 2>/dev/null)
		[ "$code" = 200 ] && [ "$state" = FINISHED ] && break
		sleep 1
	done
fi
if [ "$state" = FINISHED ]; then
	# FINISHED covers failures too: ask the REST state (FINISHED vs FAILED/KILLED)
	curl_cert "$REST/jobs?state=FINISHED,FAILED,KILLED" >/dev/null
	if grep -q "\"id\":\"$JOB\",\"state\":\"FINISHED\"" "$WORK/body"; then
		ok "(a) the job reached FINISHED in $(($(date +%s) - t0)) s"
	else
		not_ok "(a) the job reached FINISHED" "REST says: $(head -c 300 "$WORK/body")" \
			"errors: $(tail -n 5 "${GG_TB_CONTROL_DIR:-/nonexistent}/job.$JOB.errors" 2>/dev/null)"
	fi
else
	not_ok "(a) the job reached FINISHED within 60 s" "last state '$state' (HTTP $code)" \
		"errors: $(tail -n 5 "${GG_TB_CONTROL_DIR:-/nonexistent}/job.$JOB.errors" 2>/dev/null)"
fi

out=
code=$(curl_cert "$REST/jobs/$JOB/session/out.txt")
[ "$code" = 200 ] && out=$(cat "$WORK/body")
if grep -qx 'hello-from-site' <<<"$out"; then
	ok "(a) out.txt downloaded over REST says hello-from-site"
else
	not_ok "(a) out.txt downloaded over REST says hello-from-site" "HTTP $code $(reason)" "out.txt: $out"
fi
job_ns=$(sed -n 's/^netns=//p' <<<"$out")
job_user=$(sed -n 's/^user=//p' <<<"$out")
if [ "$job_ns" = "$site_ns" ] && [ "$job_user" = "$GG_TB_JOB_USER" ]; then
	ok "(a) the job ran inside netns $GG_TB_NETNS ($job_ns) as $job_user"
else
	not_ok "(a) the job ran inside netns $GG_TB_NETNS as $GG_TB_JOB_USER" \
		"job: netns '$job_ns' user '$job_user'; site netns $site_ns, root netns $root_ns"
fi

# ---- (b) two hops to the worker ------------------------------------------------------
# -F carries the hops' key and known_hosts (ssh -J passes -F, not -o, to the
# hops: §10 p7), and those for 127.0.0.1 itself.
got=$(timeout 30 ssh -F "$GG_TB_SSH_CONFIG" -J jump1,jump2 -p "$worker_port" \
	"$GG_TB_JOB_USER@127.0.0.1" 'readlink /proc/self/ns/net; id -un' 2>"$WORK/ssh.err")
rc=$?
if [ $rc = 0 ] && [ "$(head -n 1 <<<"$got")" = "$site_ns" ] && [ "$(sed -n 2p <<<"$got")" = "$GG_TB_JOB_USER" ]; then
	ok "(b) ssh -J jump1,jump2 -p $worker_port reaches the worker sshd inside the site netns"
else
	not_ok "(b) ssh -J jump1,jump2 -p $worker_port reaches the worker inside the site netns" \
		"rc $rc, got: $(tr '\n' ' ' <<<"$got")" "ssh: $(tail -n 3 "$WORK/ssh.err")"
fi

# ---- (c) no way around the jump hosts -------------------------------------------------
# the right key and known_hosts, so that only the network can be what stops us
SSH_FINAL=(-o "IdentityFile=$GG_TB_SSH_KEY" -o IdentitiesOnly=yes -o BatchMode=yes
	-o "UserKnownHostsFile=$GG_TB_SSH_KNOWN_HOSTS" -o StrictHostKeyChecking=yes -o ConnectTimeout=10)
timeout 30 ssh -F /dev/null "${SSH_FINAL[@]}" -p "$worker_port" "$GG_TB_JOB_USER@127.0.0.1" true 2>"$WORK/ssh.err"
rc=$?
if [ $rc != 0 ] && grep -q 'Connection refused' "$WORK/ssh.err"; then
	ok "(c) direct ssh -p $worker_port 127.0.0.1 from the root namespace is refused"
else
	not_ok "(c) direct ssh -p $worker_port 127.0.0.1 from the root namespace is refused" \
		"rc $rc: $(tail -n 2 "$WORK/ssh.err")"
fi
timeout 30 ssh -F "$GG_TB_SSH_CONFIG" "${SSH_FINAL[@]}" -J jump1 -p "$worker_port" \
	"$GG_TB_JOB_USER@127.0.0.1" true 2>"$WORK/ssh.err"
rc=$?
if [ $rc != 0 ] && grep -q 'open failed' "$WORK/ssh.err"; then
	ok "(c) ssh -J jump1 alone cannot reach the worker ($(grep -m1 'open failed' "$WORK/ssh.err" | tr -d '\r'))"
else
	not_ok "(c) ssh -J jump1 alone cannot reach the worker" "rc $rc: $(tail -n 2 "$WORK/ssh.err")"
fi

# ---- (d) topology: the bridge outside, arched inside -----------------------------------
rest_port=${GG_TB_CE_URL#https://*:}
rest_port=${rest_port%%/*}
listeners=$(ss -Hltnp "sport = :$rest_port")
lpids=$(grep -o 'pid=[0-9]*' <<<"$listeners" | cut -d= -f2 | sort -u)
bad=
for p in $lpids; do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = socat ] || bad="$bad $p:$(cat "/proc/$p/comm" 2>/dev/null)"
	[ "$(readlink "/proc/$p/ns/net")" = "$root_ns" ] || bad="$bad $p:not-in-root-netns"
done
if [ -n "$lpids" ] && [ -z "$bad" ]; then
	ok "(d) 127.0.0.1:$rest_port in the root namespace is the socat bridge (pid $(echo "$lpids" | paste -sd' '))"
else
	not_ok "(d) 127.0.0.1:$rest_port in the root namespace is the socat bridge" "listeners: $listeners" "bad:$bad"
fi
run=${GG_TB_RUN_DIR:-$GG_TB_DIR/run}
bad='' pids=''
for f in "$run/arex.pid" "$run/arex-ws.pid"; do
	p=$(cat "$f" 2>/dev/null)
	pids="$pids $p"
	if [ -z "$p" ] || [ "$(cat "/proc/$p/comm" 2>/dev/null)" != arched ]; then
		bad="$bad $f:no-arched"
	elif [ "$(readlink "/proc/$p/ns/net")" != "$site_ns" ]; then
		bad="$bad $p:netns=$(readlink "/proc/$p/ns/net")"
	fi
done
inside=$(ss -N "$GG_TB_NETNS" -Hltnp "sport = :$rest_port")
if [ -z "$bad" ] && grep -q '"arched"' <<<"$inside"; then
	ok "(d) both arched daemons (pids$pids) run in netns $GG_TB_NETNS, and arched listens there"
else
	not_ok "(d) both arched daemons run in netns $GG_TB_NETNS" "bad:$bad" "listening inside: $inside"
fi

# REST, jump2, the VOMS server and the token issuer (public services at a real
# site too; oidc-gen on the laptop asks the issuer) are bridged: the worker has
# no way in but through the jump hosts
outside=$(ss -Hltn "( sport = :$worker_port )")
if [ -z "$outside" ]; then
	ok "(d) nothing listens on the worker's port ($worker_port) in the root namespace"
else
	not_ok "(d) nothing listens on the worker's port in the root namespace" "$outside"
fi

# ---- (e) bearer tokens ------------------------------------------------------------------
tok=$("$MINT")
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' --capath "$GG_TB_CA_DIR" \
	-H "Authorization: Bearer $tok" -H 'Accept: application/json' "$REST/jobs" 2>"$WORK/curl.err")
if [ "$code" = 200 ]; then
	ok "(e) a token from mint-token is accepted (GET /jobs, no client cert: HTTP 200)"
else
	not_ok "(e) a token from mint-token is accepted" "HTTP $code $(cat "$WORK/curl.err")"
fi
tok=$("$MINT" --exp -60)
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' --capath "$GG_TB_CA_DIR" \
	-H "Authorization: Bearer $tok" -H 'Accept: application/json' "$REST/jobs" 2>"$WORK/curl.err")
if [ "$code" = 403 ]; then
	ok "(e) an expired token (mint-token --exp -60) is refused (HTTP 403)"
else
	not_ok "(e) an expired token is refused with 403" "HTTP $code $(cat "$WORK/curl.err")"
fi

# ---- clean the job --------------------------------------------------------------------------
if [ -n "$JOB" ]; then
	code=$(curl_cert -X POST -H 'Content-Type: application/json' \
		--data "{\"job\":[{\"id\":\"$JOB\"}]}" "$REST/jobs?action=clean")
	if [ "$code" = 201 ] && [ "$(json_field status-code "$WORK/body")" = 202 ]; then
		ok "job $JOB cleaned (?action=clean: 202 Queued for cleaning)"
		JOB=
	else
		not_ok "job $JOB cleaned" "HTTP $code, body $(head -c 300 "$WORK/body")"
	fi
fi

echo "1..$n"
[ "$failed" = 0 ]
