#!/bin/sh
# Tokens obtained, not only found (issue 17 item 3): a site's token_command
# (a script asking the test issuer for short tokens: 20 s) keeps a long
# 'get --wait' authorised across token expiries; a real oidc-agent, its
# account made by oidc-gen against the test issuer, gives a site's tokens;
# bad sources are one line each, exit 3, no secret shown, no record left.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_CERT_DIR="$GG_TB_CA_DIR" X509_USER_PROXY="$T_TMP/no-proxy"
RECS=$XDG_STATE_HOME/gridgpu/records
ISS=$GG_TB_TOKEN_ISSUER
secret_of() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$GG_TB_ISSUER_CLIENTS" "$1"; }
# tokens the issuer gave one client with one grant (its log, one line each)
issued() { grep -c "token issued client=$1 grant=$2 " "$GG_TB_ISSUER_LOG"; }

# A token_command as htgettoken would be: secrets read from files, never argv.
cat >"$T_TMP/get-token" <<'EOF'
#!/usr/bin/python3
import base64, json, ssl, sys, urllib.parse, urllib.request
iss, clients, ca, cid = sys.argv[1:5]
d = json.load(open(clients))
form = urllib.parse.urlencode({"grant_type": "password", "username": "gridgpu-test",
                               "password": d["users"]["gridgpu-test"]["password"]}).encode()
req = urllib.request.Request(iss + "/token", data=form)
basic = base64.b64encode(("%s:%s" % (cid, d["clients"][cid]["secret"])).encode()).decode()
req.add_header("Authorization", "Basic " + basic)
ctx = ssl.create_default_context(cafile=ca)
print(json.load(urllib.request.urlopen(req, context=ctx, timeout=20))["access_token"])
EOF
chmod 0700 "$T_TMP/get-token"
# the site's command is a short wrapper: a value in the configuration may be
# 180 characters at most, and the paths above are longer at the second site
printf "#!/bin/sh\nexec '%s/get-token' '%s' '%s' '%s' gridgpu-short\n" "$T_TMP" "$ISS" "$GG_TB_ISSUER_CLIENTS" "$GG_TB_CA_CERT" >"$T_TMP/tok"
chmod 0700 "$T_TMP/tok"
printf '#!/bin/sh\necho "no luck: \033[31mthe issuer said no" >&2\nexit 7\n' >"$T_TMP/fails"
printf '#!/bin/sh\necho "secret-GARBAGE-42 is not a token!"\n' >"$T_TMP/garbage"
chmod 0700 "$T_TMP/fails" "$T_TMP/garbage"

mkdir -p "$XDG_CONFIG_HOME/gridgpu"
cat >"$XDG_CONFIG_HOME/gridgpu/config" <<EOF
[site tc]
ce = $GG_TB_CE_URL
runtime = bwrap
token_command = $T_TMP/tok

[site ta]
ce = $GG_TB_CE_URL
runtime = bwrap
jump = $GG_TB_JUMP1
jump = $GG_TB_JUMP2
identity = $GG_TB_SSH_KEY
known_hosts = $GG_TB_SSH_KNOWN_HOSTS
${GG_TB_GPU_RTE:+gpu_rte = $GG_TB_GPU_RTE}
oidc_account = tb17
token_scopes = openid compute.create compute.read compute.cancel compute.modify
token_audience = $GG_TB_CE_URL

[site missing]
ce = $GG_TB_CE_URL
token_command = $T_TMP/no-such-htgettoken -a issuer

[site fails]
ce = $GG_TB_CE_URL
token_command = $T_TMP/fails

[site garbage]
ce = $GG_TB_CE_URL
token_command = $T_TMP/garbage

[site unknown]
ce = $GG_TB_CE_URL
oidc_account = no-such-account
EOF

# The lifetime of the issuer's gridgpu-short tokens (20 s; 40 s at a site made
# before), read from one: the waits below cross three of them.
LIFE=$("$T_TMP/tok" 2>/dev/null | python3 -c 'import base64, json, sys
p = sys.stdin.read().strip().split(".")[1]
d = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
print(d["exp"] - d["iat"])' 2>/dev/null)
case $LIFE in [1-9] | [1-9][0-9] | [1-9][0-9][0-9]) ok "the issuer's short tokens live ${LIFE}s" ;;
*) not_ok "the lifetime of a gridgpu-short token: '$LIFE'"; LIFE=40 ;; esac
HOLD_S=$((3 * LIFE + 10))

# --- (b) oidc-agent, made first: its account's password grant must not count in (a)
export OIDC_CONFIG_DIR="$T_TMP/oidc" OIDC_ENCRYPTION_PW="e2e-$(openssl rand -hex 8)"
mkdir -m 0700 "$OIDC_CONFIG_DIR"
oidc-agent --socket-path="$T_TMP/oidc-agent.sock" --json >"$T_TMP/agent.json" 2>"$T_TMP/agent.err"
# lib.sh's cleanup stays: the agent first, then the test's directory. The agent
# is more than its dpid (CI's fresh-check once found two oidc-agent processes left
# after kill dpid): every process on this test's socket goes.
stop_agent() { pkill -TERM -f -- "--socket-path=$T_TMP/oidc-agent.sock" 2>/dev/null; }
trap 'stop_agent; t_cleanup' EXIT
export OIDC_SOCK="$T_TMP/oidc-agent.sock"
# oidc-gen reads the client secret and the user's password from argv: a test
# user of a test issuer; gridgpu itself never takes them.
check "oidc-gen makes an account against the test issuer (password flow, no prompt)" \
	oidc-gen tb17 --issuer "$ISS" --client-id gridgpu-short \
	--client-secret "$(secret_of 'd["clients"]["gridgpu-short"]["secret"]')" \
	--flow=password --op-username gridgpu-test \
	--op-password "$(secret_of 'd["users"]["gridgpu-test"]["password"]')" \
	--cp "$GG_TB_CA_CERT" --pw-env --scope "openid offline_access compute.create compute.read compute.cancel compute.modify" \
	--prompt=none --confirm-default --no-url-call --no-webserver

# --- (a) token_command: a job that outlives three tokens ---------------------
# Its 'get --wait' runs beside (b)'s wait (each counts its own grant at the
# issuer: password for the token_command, refresh_token for the agent).
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" sleep
check "freeze the test sandbox" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
cd "$T_TMP" || exit 1
BEARER_TOKEN=$("$GG_TB_MINT_TOKEN" --exp -60) run_gg --site tc submit work.sif --name long \
	--walltime 30m -- sh -c "sleep $HOLD_S; echo outlived"
expect_eq "submit with the site's token_command (an expired BEARER_TOKEN is not used)" "$RC" 0
before=$(issued gridgpu-short password)
(
	t0=$(date +%s)
	"$GRIDGPU" get --wait --timeout 5m long >"$T_TMP/a.out" 2>"$T_TMP/a.err"
	echo "$? $(($(date +%s) - t0))" >"$T_TMP/a.rc"
) &
A_PID=$!

# --- (b) oidc-agent's tokens for a site ---------------------------------------
rt0=$(issued gridgpu-short refresh_token)
if [ -n "${GG_TB_SLURM_CONF:-}" ] && [ -n "${GG_TB_GPU_RTE:-}" ]; then
	# Another user's job holds every whole GPU of the node for three token
	# lifetimes and more: a 'request --gpus 1' waits in Slurm's queue through
	# three of the agent's tokens, polling the CE all along, then its sshd answers.
	HOLD=$(sl sbatch --parsable -p gpu --gres=gpu:a100:3 --time=5 -o /dev/null -J holder --wrap "sleep $HOLD_S" 2>&1)
	case $HOLD in '' | *[!0-9]*) not_ok "sbatch of the job that holds the GPUs: $HOLD" ;; esac
	t1=$(date +%s)
	run_gg --site ta request --name oa1 --gpus 1 --walltime 10m --timeout 6m
	took=$(($(date +%s) - t1))
	rt=$(($(issued gridgpu-short refresh_token) - rt0))
	[ "$RC" = 0 ] && [ "$took" -ge $((3 * LIFE)) ] && [ "$rt" -ge 3 ] &&
		ok "request --wait queued ${took}s behind another job (3 token lifetimes): ready, the agent refreshed $rt tokens at the issuer" ||
		not_ok "request --wait across token expiries: exit $RC after ${took}s, $rt refreshed; $ERR"
	printf '%s\n' "$ERR" | grep -q '^  oa1: queued' && ok "... shown queued while the other job held the GPUs" ||
		not_ok "request did not show oa1 as queued: $ERR"
	sl scancel "$HOLD" 2>/dev/null
else
	run_gg --site ta request --name oa1 --no-wait --walltime 10m
	t1=$(date +%s) n=0 bad=0
	# a lifetime and 10 s of list --sync: the agent's token expires within it.
	while [ $(($(date +%s) - t1)) -lt $((LIFE + 10)) ]; do
		run_gg list --sync
		n=$((n + 1))
		[ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -Eq '^oa1 +ta ' || bad=$((bad + 1))
		sleep 5
	done
	rt=$(($(issued gridgpu-short refresh_token) - rt0))
	[ "$bad" = 0 ] && [ "$rt" -ge 2 ] &&
		ok "list --sync for $((LIFE + 10)) s: all $n synced, the agent refreshed $rt tokens at the issuer" ||
		not_ok "list --sync across an expiry ($bad of $n failed, $rt refreshed; $ERR)"
fi

# (a)'s wait, over by now or soon
wait "$A_PID"
read -r arc took <"$T_TMP/a.rc" 2>/dev/null
expect_eq "get --wait across token expiries: the job's end and its output" "${arc:-?} $(cat long/gridgpu-job.out 2>/dev/null)" "0 outlived"
fetched=$(($(issued gridgpu-short password) - before))
[ "${took:-0}" -ge $((3 * LIFE)) ] && [ "$fetched" -ge 3 ] &&
	ok "the wait took ${took}s (3 token lifetimes) and fetched $fetched tokens from the issuer" ||
	not_ok "a long wait with fresh tokens (took ${took:-?}s, $fetched tokens fetched, err: $(cat "$T_TMP/a.err"))"
expect_eq "the record says token" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["auth"])' "$RECS/oa1.json" 2>&1)" token
run_gg kill oa1
expect_eq "kill with the agent's token" "$RC" 0

# --- (c) bad sources: one line, exit 3, no secret, no record ------------------
bad_source() { # description site message
	run_gg --site "$2" request --name "bad-$2" --no-wait --walltime 10m
	if [ "$RC" = 3 ] && printf '%s' "$ERR" | grep -qF -- "$3" && [ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] &&
		! printf '%s%s' "$OUT" "$ERR" | grep -q "GARBAGE-42" && [ ! -e "$RECS/bad-$2.json" ]; then
		ok "$1: one line, exit 3, no record"
	else
		not_ok "$1 (exit $RC; stderr: $ERR; record: $(ls "$RECS" | grep "bad-$2"))"
	fi
}
bad_source "command missing" missing "token_command '$T_TMP/no-such-htgettoken' cannot be run: No such file or directory"
bad_source "command failing, its stderr escaped" fails 'failed (exit status 7): no luck: \x1b[31mthe issuer said no'
bad_source "command printing garbage (not shown)" garbage "token_command '$T_TMP/garbage' printed something that is not a bearer token"
bad_source "unknown oidc-agent account" unknown "oidc-agent account 'no-such-account': oidc-agent:"
OIDC_SOCK='' bad_source "oidc-agent not running" ta "oidc-agent is not running"
env -u OIDC_SOCK "$GRIDGPU" --site ta request --name bad-ta --no-wait >/dev/null 2>"$T_TMP/nosock"
expect_eq "no OIDC_SOCK at all: exit 3" "$?" 3

# --- (d) a token file another user wrote: refused with the reason, not sent ---
# /tmp/bt_u<uid> is the last place of the WLCG discovery; another local user
# (nobody) can write it first. The victim is uid 65533, used by no other test,
# so that this /tmp/bt_u<uid> is this test's alone.
if [ "$(id -u)" = 0 ]; then
	V=65533 VH=$T_TMP/victim PLANT=/tmp/bt_u65533 VTAG=planted$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	trap 'stop_agent; rm -f "$PLANT" /tmp/bt-target-$V; t_cleanup' EXIT
	mkdir -p "$VH/.config/gridgpu"
	printf '[site tv]\nce = %s\nauth = token\n' "$GG_TB_CE_URL" >"$VH/.config/gridgpu/config"
	cp "$GG_TB_USER_CERT" "$VH/cert.pem"
	cp "$GG_TB_USER_KEY_PLAIN" "$VH/key.pem"
	chown -R $V:$V "$VH"
	chmod 600 "$VH/key.pem"
	VGG=$(gridgpu_for_others)
	as_victim() {
		setpriv --reuid=$V --regid=$V --clear-groups env HOME="$VH" XDG_CONFIG_HOME="$VH/.config" \
			XDG_STATE_HOME="$VH/.state" X509_USER_PROXY="$VH/x509up" X509_CERT_DIR="$GG_TB_CA_DIR" \
			"$VGG" "$@" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
		RC=$?
		OUT=$(cat "$T_TMP/.stdout") ERR=$(cat "$T_TMP/.stderr")
	}
	# nobody's valid token, readable by all, where the victim's gridgpu looks
	rm -f "$PLANT"
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'umask 022; printf "%s\n" "$1" >"$2"' sh \
		"$("$GG_TB_MINT_TOKEN")" "$PLANT"
	expect_eq "nobody planted $PLANT (nobody's, mode 644)" "$(stat -c '%u %a' "$PLANT")" "65534 644"
	as_victim request --site tv --name "$VTAG" --no-wait --walltime 10m
	if [ "$RC" = 3 ] && printf '%s' "$ERR" | grep -qF "token file '$PLANT' is owned by uid 65534, not by you" &&
		[ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] && [ -z "$(ls -A "$VH/.state/gridgpu/records" 2>/dev/null)" ] &&
		[ -z "$(ce_jobs_with "$VTAG")" ]; then
		ok "request: a token in $PLANT written by another user is refused (one line, exit 3), not sent: no job, no record"
	else
		not_ok "request with another user's $PLANT (exit $RC; stderr: $ERR; jobs: $(ce_jobs_with "$VTAG"))"
	fi
	# doctor asks the CE with the token it found: the CE would accept this one
	as_victim doctor --site tv
	printf '%s' "$OUT$ERR" | grep -q "bearer token.*owned by uid 65534, not by you" &&
		! printf '%s' "$OUT$ERR" | grep -q "accepts your token" && [ "$RC" != 0 ] &&
		ok "doctor says why the token was refused, and does not send it to the CE" ||
		not_ok "doctor says why the token was refused, and does not send it ($RC: $OUT $ERR)"
	as_victim proxy init --cert "$VH/cert.pem" --key "$VH/key.pem" --out "$VH/x509up"
	as_victim proxy info
	[ "$RC" = 0 ] && printf '%s' "$ERR" | grep -qF "token file '$PLANT' is owned by uid 65534, not by you" &&
		! printf '%s' "$OUT" | grep -q "^token" && ok "proxy info says why the token was refused, and shows none" ||
		not_ok "proxy info says why the token was refused ($RC: $OUT / $ERR)"
	# a symbolic link nobody made, to nobody's token
	rm -f "$PLANT"
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'umask 022; printf "%s\n" "$1" >"$2"; ln -s "$2" "$3"' sh \
		"$("$GG_TB_MINT_TOKEN")" /tmp/bt-target-$V "$PLANT"
	as_victim request --site tv --name "$VTAG" --no-wait --walltime 10m
	if [ "$RC" = 3 ] && printf '%s' "$ERR" | grep -qF "token file '$PLANT' is a symbolic link made by uid 65534" &&
		[ -z "$(ce_jobs_with "$VTAG")" ]; then
		ok "request: a symbolic link another user made at $PLANT is refused, nothing sent"
	else
		not_ok "request with another user's link at $PLANT (exit $RC; stderr: $ERR; jobs: $(ce_jobs_with "$VTAG"))"
	fi
	# shellcheck disable=SC2046 # job ids
	ce_forget $(ce_jobs_with "$VTAG")
	rm -f "$PLANT" /tmp/bt-target-$V
fi
stop_agent
done_testing
