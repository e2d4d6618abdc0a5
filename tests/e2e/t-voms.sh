#!/bin/sh
# gridgpu proxy init --voms against the test site's real VOMS server: the
# attributes as voms-proxy-info and arcproxy see them, proxy info's ACs, A-REX
# authorising (and mapping) by FQAN, and every bad input refused with one line,
# the right exit code and no proxy written (an old one left intact).
. "$(dirname "$0")/lib.sh"
if [ -z "${GG_TB_VOMSES:-}" ]; then
	echo "1..0 # SKIP the test site has no VOMS server"
	exit 0
fi
export X509_CERT_DIR="$GG_TB_CA_DIR" X509_VOMS_DIR="$GG_TB_VOMS_DIR" VOMS_USERCONF="$GG_TB_VOMSES"
PASS=$GG_TB_USER_KEY_PASS_FILE
P=$T_TMP/x509up
VOKEY=$T_TMP/vokey.pem
cp "$GG_TB_VO_USER_KEY" "$VOKEY" && chmod 600 "$VOKEY"
init() { # ARGS...: proxy init of the test user into $P
	"$GRIDGPU" proxy init -C "$GG_TB_USER_CERT" -K "$GG_TB_USER_KEY" --pass-stdin -o "$P" "$@" \
		<"$PASS" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
	ERR=$(cat "$T_TMP/.stderr")
}
# bad DESC CODE MESSAGE ARGS...: refused with CODE and MESSAGE, the old proxy untouched
bad() {
	d=$1 code=$2 msg=$3
	shift 3
	before=$(sha256sum "$P" | cut -d' ' -f1)
	init "$@"
	if [ "$RC" = "$code" ] && printf '%s' "$ERR" | grep -qF -- "$msg" &&
		[ "$(printf '%s\n' "$ERR" | grep -c .)" = 1 ]; then
		ok "$d: exit $code, one line"
	else
		not_ok "$d: exit $RC (want $code), stderr: $ERR"
	fi
	expect_eq "$d: the old proxy is left intact" "$(sha256sum "$P" | cut -d' ' -f1)" "$before"
	if [ -z "$(find "$T_TMP" -maxdepth 1 -name 'x509up*.tmp')" ]; then
		ok "$d: no temporary file left"
	else
		not_ok "$d: temporary file left: $(ls "$T_TMP")"
	fi
}

# ---- the attributes, as the peers see them ---------------------------------------------
init --voms testvo:/testvo/analysis
expect_eq "proxy init --voms testvo:/testvo/analysis succeeds" "$RC" 0
expect_eq "proxy init --voms says which attributes the VO's server gave, on one line" \
	"$(printf '%s\n' "$ERR" | grep -c '^attributes of VO testvo: /testvo/analysis/Role=NULL/Capability=NULL, /testvo/Role=NULL/Capability=NULL$')" 1
voms-proxy-info --all --file "$P" >"$T_TMP/vpi" 2>&1
grep -q '^attribute : /testvo/analysis/Role=NULL/Capability=NULL$' "$T_TMP/vpi" &&
	ok "voms-proxy-info --all shows /testvo/analysis" || not_ok "voms-proxy-info: $(cat "$T_TMP/vpi")"
grep -q '^VO        : testvo$' "$T_TMP/vpi" && ok "voms-proxy-info sees VO testvo" || not_ok "voms-proxy-info VO"
"$GRIDGPU" proxy info -f "$P" >"$T_TMP/gpi"
expect_eq "gridgpu proxy info shows the same attributes as voms-proxy-info" \
	"$(grep '^attribute' "$T_TMP/gpi" | sort | tr '\n' ' ')" \
	"$(grep '^attribute' "$T_TMP/vpi" | sort | tr '\n' ' ')"
expect_eq "... and the same issuer" "$(grep -c "^issuer    : $GG_TB_VOMS_DN\$" "$T_TMP/gpi")" 1
arcproxy -I -P "$P" -T "$GG_TB_CA_DIR" -s "$GG_TB_VOMS_DIR" >"$T_TMP/arc" 2>&1
expect_eq "arcproxy -I shows the same FQANs" \
	"$(sed -n 's/^attribute : \(\/testvo[^ ]*\)$/\1/p' "$T_TMP/arc" | sort | tr '\n' ' ')" \
	"$(sed -n 's/^attribute : \(.*\)\/Role=NULL\/Capability=NULL$/\1/p' "$T_TMP/gpi" | sort | tr '\n' ' ')"
run_gg proxy info -f "$P" --json
json_valid proxy-info
expect_eq "--json: acs[0].vo" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["acs"][0]["vo"])')" testvo
run_gg proxy info -f "$P" --acexists testvo
expect_eq "--acexists testvo: exit 0" "$RC" 0
run_gg proxy info -f "$P" --acexists atlas
expect_eq "--acexists atlas: exit 1" "$RC" 1
run_gg proxy info -f "$P" --valid 24h
expect_eq "--valid 24h: exit 1 (12 h proxy and AC)" "$RC" 1
init --voms testvo:/testvo/analysis --valid 1h --voms-lifetime 3h
expect_eq "the AC's lifetime is capped by the proxy's" \
	"$("$GRIDGPU" proxy info -f "$P" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["acs"][0]["time_left"] <= d["time_left"] + 1)')" True

# ---- bad inputs ---------------------------------------------------------------------------
init --voms testvo:/testvo/analysis
bad "not a member of /testvo/prod" 3 "Unable to satisfy G/testvo/prod" --voms testvo:/testvo/prod
bad "unknown VO" 2 "no VOMS server known for VO 'atlas'" --voms atlas
bad "a mistyped VO names the nearest the vomses know" 2 "no VOMS server known for VO 'testv0'; did you mean 'testvo'?" --voms testv0
DEAD=$(free_port)
mkdir -p "$T_TMP/vomses"
printf '"testvo" "localhost" "%s" "%s" "testvo"\n' "$DEAD" "$GG_TB_VOMS_DN" >"$T_TMP/vomses/a-dead"
VOMS_USERCONF=$T_TMP/vomses bad "VOMS server down" 4 "localhost:$DEAD" --voms testvo
cat "$GG_TB_VOMSES"/* >"$T_TMP/vomses/b-good"
VOMS_USERCONF=$T_TMP/vomses init --voms testvo:/testvo/analysis
expect_eq "the next server of the VO when the first is down" "$RC" 0
# a TLS server with the same certificate that answers a web page
GARBAGE=$(free_port)
openssl s_server -accept "$GARBAGE" -cert "$GG_TB_HOST_CERT" -key "$GG_TB_HOST_KEY" -www -quiet \
	>/dev/null 2>&1 &
SPID=$!
poll 10 sh -c "ss -Hltn 'sport = :$GARBAGE' | grep -q ."
printf '"testvo" "localhost" "%s" "%s" "testvo"\n' "$GARBAGE" "$GG_TB_VOMS_DN" >"$T_TMP/garbage"
VOMS_USERCONF=$T_TMP/garbage bad "VOMS server answering garbage" 4 "answer is not one (bad XML)" --voms testvo
kill "$SPID" 2>/dev/null
mkdir -p "$T_TMP/vomsdir/testvo"
printf '/DC=org/DC=example/CN=someone else\n/DC=org/DC=example/CN=gridgpu Test CA\n' \
	>"$T_TMP/vomsdir/testvo/localhost.lsc"
X509_VOMS_DIR=$T_TMP/vomsdir bad "server certificate not matching its .lsc" 3 "not what" --voms testvo
rm "$T_TMP/vomsdir/testvo/localhost.lsc"
X509_VOMS_DIR=$T_TMP/vomsdir bad "no .lsc for the server" 3 "no trust for VOMS server" --voms testvo
# a server of the VO whose clock is 10 min ahead: the VO's own server and
# database, started again under faketime on a port of its own
SKEW=$(free_port)
sed -e "s/^--port=.*/--port=$SKEW/" -e "s/^--uri=.*/--uri=localhost:$SKEW/" \
	-e "s|^--logfile=.*|--logfile=$T_TMP/voms-skew.log|" "$GG_TB_DIR/voms/voms.conf" >"$T_TMP/voms-skew.conf"
chmod 0600 "$T_TMP/voms-skew.conf"
# (libfaketime preloaded, not the faketime wrapper: that waits for the server,
# which daemonises)
FAKETIME=+10m FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 | head -n 1) \
	/usr/sbin/voms -conf "$T_TMP/voms-skew.conf" </dev/null >"$T_TMP/voms-skew.out" 2>&1 &
if poll 10 sh -c "ss -Hltn 'sport = :$SKEW' | grep -q ."; then
	skew_pid=$(ss -Hltnp "sport = :$SKEW" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n 1)
	printf '"testvo" "localhost" "%s" "%s" "testvo"\n' "$SKEW" "$GG_TB_VOMS_DN" >"$T_TMP/skew"
	VOMS_USERCONF=$T_TMP/skew bad "VOMS server's clock 10 min ahead" 3 "is the VOMS server's clock ahead?" --voms testvo
	[ -z "$skew_pid" ] || kill "$skew_pid" 2>/dev/null
else
	not_ok "a VOMS server under faketime did not listen: $(cat "$T_TMP/voms-skew.out" "$T_TMP/voms-skew.log" 2>/dev/null | tail -n 3)"
fi
# a VOMS server of the VO whose ACs last 2 min at most (its --timeout): the AC
# is taken, and proxy init says the server shortened it (before: refused, exit 3,
# the server's warning read as an error)
SHORT=$(free_port)
sed -e "s/^--port=.*/--port=$SHORT/" -e "s/^--uri=.*/--uri=localhost:$SHORT/" -e "s/^--timeout=.*/--timeout=120/" \
	-e "s|^--logfile=.*|--logfile=$T_TMP/voms-short.log|" "$GG_TB_DIR/voms/voms.conf" >"$T_TMP/voms-short.conf"
chmod 0600 "$T_TMP/voms-short.conf"
/usr/sbin/voms -conf "$T_TMP/voms-short.conf" </dev/null >"$T_TMP/voms-short.out" 2>&1 &
if poll 10 sh -c "ss -Hltn 'sport = :$SHORT' | grep -q ."; then
	short_pid=$(ss -Hltnp "sport = :$SHORT" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n 1)
	printf '"testvo" "localhost" "%s" "%s" "testvo"\n' "$SHORT" "$GG_TB_VOMS_DN" >"$T_TMP/short"
	VOMS_USERCONF=$T_TMP/short init --voms testvo:/testvo/analysis
	expect_eq "an AC shortened by its server to 2 min: proxy init exit 0" "$RC" 0
	printf '%s\n' "$ERR" | grep -q "^gridgpu: warning: the attribute certificate of VO testvo is valid until .* only (.*), not the 12h asked: VOMS server localhost:$SHORT shortened it" &&
		ok "proxy init warns that the AC is shorter than the proxy" || not_ok "no warning of the short AC: $ERR"
	printf '%s\n' "$ERR" | grep -qF "gridgpu: warning: VOMS server localhost:$SHORT: localhost:$SHORT: The validity of this VOMS AC in your proxy is shortened to 120 seconds!" &&
		ok "... and shows the server's warning" || not_ok "the server's warning not shown: $ERR"
	"$GRIDGPU" proxy info -f "$P" >"$T_TMP/short.txt"
	grep -q "^timeleft  : 0:0[0-2]:[0-9][0-9] (until .*), before the proxy's end\$" "$T_TMP/short.txt" &&
		ok "proxy info: the AC's end, before the proxy's" || not_ok "proxy info: $(cat "$T_TMP/short.txt")"
	"$GRIDGPU" proxy info -f "$P" --json >"$T_TMP/short.json"
	expect_eq "proxy info: the AC ends 2 min after it starts, the proxy 12 h after" \
		"$(python3 -c 'import json,sys,datetime as d; j=json.load(open(sys.argv[1])); t=lambda s: d.datetime.fromisoformat(s.replace("Z","+00:00")); a=j["acs"][0]; print(int((t(a["not_after"])-t(a["not_before"])).total_seconds()), j["time_left"] > 11*3600)' "$T_TMP/short.json")" "120 True"
	VOMS_USERCONF=$T_TMP/short init --voms testvo:/testvo/analysis --valid 2m
	expect_eq "2 min asked of it: exit 0, no warning" "$RC $(printf '%s\n' "$ERR" | grep -c warning)" "0 0"
	[ -z "$short_pid" ] || kill "$short_pid" 2>/dev/null
else
	not_ok "a VOMS server with 2 min ACs did not listen: $(cat "$T_TMP/voms-short.out" "$T_TMP/voms-short.log" 2>/dev/null | tail -n 3)"
fi
init --voms testvo --voms-lifetime 2s
expect_eq "a proxy with a 2 s AC" "$RC" 0
if poll 10 sh -c "! '$GRIDGPU' proxy info -q -f '$P' --acexists testvo"; then
	ok "--acexists answers 1 once the AC has expired"
else
	not_ok "--acexists still 0 after the AC's end"
fi
"$GRIDGPU" proxy info -f "$P" | grep -q 'timeleft  : 0:00:00 (until .*) expired' &&
	ok "proxy info reports the AC as expired" || not_ok "proxy info: $("$GRIDGPU" proxy info -f "$P")"
run_gg proxy info -f "$P" --valid 1m
expect_eq "--valid checks the ACs: exit 1" "$RC" 1

# FQANs and --order: the FQAN grammar, nothing else reaches a request (CR/LF
# went into the REST request line, '<' into the legacy XML)
CR=$(printf '\r')
bad "CR/LF in an FQAN" 2 "expected /VO[/group...][/Role=role]" --voms "testvo:/testvo/analysis$CR
X-Injected: 1"
bad "CR/LF in --order" 2 "proxy init --order: FQAN '/testvo\\r\\nX-Injected: 1'" --voms testvo --order "/testvo$CR
X-Injected: 1"
bad "XML in --order" 2 "proxy init --order: FQAN" --voms testvo \
	--order '/testvo</order><command>G/testvo/prod</command><order>/testvo'
bad "not a VO name" 2 "is not a VO name" --voms '../testvo:/testvo'

# a vomses alias other than the VO's name ("tv" for testvo): --voms takes the
# alias as voms-proxy-init does, the .lsc is the VO's (vomsdir/testvo/), the AC
# is testvo's (before: "no trust for VOMS server localhost of VO tv")
sed 's/^"testvo" /"tv" /' "$GG_TB_VOMSES"/* >"$T_TMP/alias"
VOMS_USERCONF=$T_TMP/alias init --voms tv:/testvo/analysis
expect_eq "--voms by the vomses alias: exit 0, no warning" "$RC $(printf '%s\n' "$ERR" | grep -c warning)" "0 0"
run_gg proxy info -f "$P" --acexists testvo
expect_eq "... the proxy has an AC of VO testvo" "$RC" 0
expect_eq "... with /testvo/analysis" "$("$GRIDGPU" proxy info -f "$P" | grep -c '^attribute : /testvo/analysis/Role=NULL/Capability=NULL$')" 1
VOMS_USERCONF=$T_TMP/alias bad "an FQAN named after the alias" 2 "vomses alias tv: FQAN '/tv/analysis' is not of VO testvo" --voms tv:/tv/analysis
# the alias and the VO's name are one VO: asked once, one AC with the FQAN
# either named (before: two requests, two ACs of testvo in the proxy)
VOMS_USERCONF=$T_TMP/alias init --voms tv --voms testvo:/testvo/analysis
expect_eq "--voms tv --voms testvo: exit 0" "$RC" 0
run_gg proxy info -f "$P" --json
expect_eq "... one AC, of testvo, with /testvo/analysis" "$(printf '%s' "$OUT" | python3 -c '
import json, sys
a = json.load(sys.stdin)["acs"]
print(len(a), a[0]["vo"], "/testvo/analysis/Role=NULL/Capability=NULL" in a[0]["fqans"])')" "1 testvo True"

# ---- A-REX authorises by FQAN and maps the role, through gridgpu --------------------------
# The VO member's DN is admitted by nothing but its VOMS attributes: the
# production role maps to $GG_TB_JOB_USER2, /testvo/analysis to $GG_TB_JOB_USER,
# a proxy without them is refused (HTTP 403) and gridgpu says what it carries.
vo_init() { # OUT ARGS...
	o=$1
	shift
	"$GRIDGPU" proxy init -C "$GG_TB_VO_USER_CERT" -K "$VOKEY" -o "$o" "$@" >/dev/null 2>&1
}
vo_init "$T_TMP/role" --voms testvo:/testvo/analysis/Role=production
vo_init "$T_TMP/ana" --voms testvo:/testvo/analysis
vo_init "$T_TMP/plain"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS"
RECORDS=$XDG_STATE_HOME/gridgpu/records
# refused PROXY DESC WHAT: request refused with exit 3, one line naming WHAT, no record
refused() {
	X509_USER_PROXY=$1 run_gg --site tb request --no-wait --walltime 10m --name refused
	if [ "$RC" = 3 ] && [ "$(printf '%s\n' "$ERR" | grep -c .)" = 1 ] &&
		printf '%s' "$ERR" | grep -qF "the CE refused the credential (HTTP 403" &&
		printf '%s' "$ERR" | grep -qF -- "$3" &&
		printf '%s' "$ERR" | grep -qF "ask for the VO/role the site requires: gridgpu proxy init --voms"; then
		ok "$2: request refused, exit 3, one line: $3"
	else
		not_ok "$2: exit $RC (want 3), stderr: $ERR"
	fi
	expect_eq "$2: no record left" "$(find "$RECORDS" -mindepth 1 ! -name .lock 2>/dev/null | wc -l)" 0
	X509_USER_PROXY=$1 run_gg list
	expect_eq "$2: list shows nothing" "$RC $OUT$ERR" "0 no sessions or jobs: 'gridgpu request' starts a session"
}
refused "$T_TMP/plain" "a proxy without VOMS attributes" "your proxy carries no VOMS attributes"
# attributes of the VO, but of a group the site does not admit: refused, and
# gridgpu says which attributes the proxy carries
OUTKEY=$T_TMP/outkey.pem
cp "$GG_TB_VO_OUTSIDER_KEY" "$OUTKEY" && chmod 600 "$OUTKEY"
"$GRIDGPU" proxy init -C "$GG_TB_VO_OUTSIDER_CERT" -K "$OUTKEY" -o "$T_TMP/outreach" --voms testvo >/dev/null 2>&1
refused "$T_TMP/outreach" "a proxy of /testvo/outreach (a group the site does not admit)" \
	"your proxy's VOMS attributes: /testvo, /testvo/outreach"
# requested with the FQANs: the job's session directory belongs to the mapped
# account, and the job's processes run as it (the site's view, not gridgpu's)
job_id() { X509_USER_PROXY=$1 "$GRIDGPU" --json status "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])'; }
owner() { stat -c %U "$GG_TB_SESSION_DIR/$1" 2>/dev/null; }
job_users() { # JOBID: the owners of the processes working in the job's session directory
	for d in /proc/[0-9]*; do
		[ "$(readlink "$d/cwd" 2>/dev/null)" = "$GG_TB_SESSION_DIR/$1" ] && stat -c %U "$d" 2>/dev/null
	done | sort -u | tr '\n' ' '
}
seen=""
sjob_state() { # JOBID: the state of the Slurm job A-REX made of it ("-" on a site without Slurm)
	[ -n "$GG_TB_SLURM_CONF" ] || { echo -; return; }
	_l=$(sed -n 's/^localid=//p' "$GG_TB_CONTROL_DIR/job.$1.local" 2>/dev/null)
	[ -n "$_l" ] && sl squeue -h -j "$_l" -o %T 2>/dev/null || echo "not submitted yet"
}
started() { case $(sjob_state "$1") in - | RUNNING | COMPLETING | COMPLETED) true ;; *) false ;; esac; }
poll_started() { # JOBID SECS: until Slurm runs the job, asking it once a second
	_end=$(($(date +%s) + $2))
	until started "$1"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 1
	done
}
users_are() { seen=$(job_users "$1") && [ "$seen" = "$2" ]; }
mapped() { # PROXY ACCOUNT FQAN
	X509_USER_PROXY=$T_TMP/$1 run_gg --site tb request --no-wait --walltime 10m --name "v-$1"
	expect_eq "request with $3: exit 0" "$RC" 0
	J=$(job_id "$T_TMP/$1" "v-$1")
	poll 20 test -d "$GG_TB_SESSION_DIR/$J"
	expect_eq "A-REX maps $3 to $2 (the session directory's owner)" "$(owner "$J")" "$2"
	# A-REX's own helpers pass through the directory first (as root); the batch
	# system starts the job when it schedules it, which takes as long as the other
	# tests' jobs hold the node's CPUs and GPUs (they run beside this one): wait for
	# the job's processes as long as Slurm has not started the job, then 60 s more.
	if poll_started "$J" 600 && poll 60 users_are "$J" "$2 "; then
		ok "the job of $3 runs as $2 (its processes' owner)"
	else
		not_ok "the job of $3 runs as $2 (got '$seen'; Slurm: $(sjob_state "$J"))"
	fi
	X509_USER_PROXY=$T_TMP/$1 "$GRIDGPU" kill -q "v-$1" >/dev/null 2>&1
	X509_USER_PROXY=$T_TMP/$1 "$GRIDGPU" clean -q "v-$1" >/dev/null 2>&1
}
mapped role "$GG_TB_JOB_USER2" /testvo/analysis/Role=production
mapped ana "$GG_TB_JOB_USER" /testvo/analysis
done_testing
