#!/bin/sh
# gridgpu(1)'s EXIT STATUS, walked: every case the page lists under a status
# is caused against the test site (in every command where the page says so,
# the commands taken from cli/commands.def), and each time the exit status,
# the --json error's kind and exit, and its what (bare, no quotes) are checked.
# The cases come from the page (exit-cases.py): a case added to the page
# without a trigger here fails, and so does a code that drifts from it.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
HERE=$GG_TOP/tests/e2e
cd "$T_TMP" || exit 1

# check_error STATUS KINDS DESC: the last run ($RC, $OUT, $ERR) failed as the
# page says: exit STATUS, the --json error's kind one of KINDS (comma-separated)
# with exit STATUS and a what without quotes, one "gridgpu: " line on stderr;
# $WANT_MSG (when set) in the message.
check_error() {
	_why=$(printf '%s' "$OUT" | python3 -c 'import json, sys
st, kinds, msg = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
try:
    e = json.loads(sys.stdin.read())["error"]
except Exception as x:
    sys.exit("no --json error object (%s)" % x)
bad = []
if e["kind"] not in kinds: bad.append("kind %s, want %s" % (e["kind"], "|".join(kinds)))
if str(e["exit"]) != st: bad.append("json exit %s" % e["exit"])
if "\x27" in e["what"] or "\"" in e["what"]: bad.append("what quoted: %s" % e["what"])
if msg and msg not in e["message"]: bad.append("message without %r: %s" % (msg, e["message"]))
sys.exit("; ".join(bad))' "$1" "$2" "${WANT_MSG:-}" 2>&1)
	if [ "$RC" = "$1" ] && [ -z "$_why" ] && printf '%s\n' "$ERR" | grep -q '^gridgpu: '; then
		ok "$3: exit $1 (${2%%,*})"
	else
		not_ok "$3: exit $RC, want $1: ${_why:-} $(printf '%s' "$ERR" | head -n 2)"
	fi
}
# want STATUS KINDS DESC ARGS...: gridgpu --json ARGS fails as the page says.
want() {
	_s=$1 _k=$2 _d=$3
	shift 3
	"$GRIDGPU" --json "$@" </dev/null >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
	OUT=$(cat "$T_TMP/.stdout") ERR=$(cat "$T_TMP/.stderr")
	check_error "$_s" "$_k" "$_d"
}
# want_env STATUS KINDS DESC VAR=VALUE ARGS...: the same with VAR=VALUE.
want_env() {
	_s=$1 _k=$2 _d=$3 _e=$4
	shift 4
	env "$_e" "$GRIDGPU" --json "$@" </dev/null >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
	OUT=$(cat "$T_TMP/.stdout") ERR=$(cat "$T_TMP/.stderr")
	check_error "$_s" "$_k" "$_d"
}

# ---- the page and the command table ------------------------------------------------
if ! python3 "$HERE/exit-cases.py" "$GG_TOP/man/gridgpu.1" >"$T_TMP/cases" 2>"$T_TMP/cases.err"; then
	not_ok "gridgpu(1) EXIT STATUS lists its cases: $(cat "$T_TMP/cases.err")"
fi
[ "$(wc -l <"$T_TMP/cases")" -ge 10 ] && ok "gridgpu(1) lists $(wc -l <"$T_TMP/cases") documented errors" ||
	not_ok "gridgpu(1) lists too few cases: $(cat "$T_TMP/cases")"
# Every kind of the library's table (lib/core/err.c) is named under its exit status.
sed -n 's/^\t{GG_[A-Z]*, "\([a-z-]*\)", \([0-9]*\)},$/\1 \2/p' "$GG_TOP/lib/core/err.c" >"$T_TMP/kinds"
bad=
while read -r kind code; do
	[ "$kind" = ok ] && continue
	awk -F '\t' -v k="$kind" -v c="$code" '$1 == c && ("," $2 ",") ~ ("," k ",") { f = 1 } END { exit !f }' "$T_TMP/cases" ||
		bad="$bad $kind=$code"
done <"$T_TMP/kinds"
[ "$(wc -l <"$T_TMP/kinds")" -ge 10 ] && [ -z "$bad" ] && ok "each kind of lib/core/err.c is under its exit status in gridgpu(1)" ||
	not_ok "kinds not under their exit status in gridgpu(1):${bad:- (no kinds table read)}"
# The commands a user can type (aliases too), from cli/commands.def: a command
# with sub-commands as each sub-command (and alone when one is its default);
# OPERAND is its operand kind (OPT_RECORD...).
python3 - "$GG_TOP/cli/commands.def" >"$T_TMP/commands" <<'EOF'
import csv, re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"GG_(SUB)?COMMAND\((.*)\)\s*$", line)
    if m:
        f = next(csv.reader([m.group(2)], skipinitialspace=True))
        rows.append((f[0] + " " + f[1] if m.group(1) else f[0], f[-2], f[-1], f[1] == "cli_run_subcommand"))
parents = {n for n, _, _, p in rows if p}
default = {n.split()[0] for n, _, flags, _ in rows if "CMD_DEFAULT" in flags}
for name, operand, flags, parent in rows:
    if name in ("__complete",) or (parent and name not in default):
        continue
    print("%s\t%s" % (name, operand))
EOF
cmds() { cut -f1 "$T_TMP/commands"; }
[ "$(cmds | wc -l)" -ge 25 ] && ok "$(cmds | wc -l) commands in cli/commands.def" || not_ok "commands.def read: $(cat "$T_TMP/commands")"

# ---- the test site ------------------------------------------------------------------
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap
"$GRIDGPU" site add glasgow -q --ce https://ce.example.org/arex
"$GRIDGPU" site add down -q --ce https://localhost:1/arex
# the storage's https door: a web server, not an A-REX
"$GRIDGPU" site add notce -q --ce "https://${GG_TB_SE_DOOR_DAVS#davs://}/arex"
sh "$HERE/mkrootfs.sh" "$T_TMP/sb"
"$GRIDGPU" freeze -q "$T_TMP/sb" -o work.sif || not_ok "freeze the test sandbox"

# ---- each case ----------------------------------------------------------------------
case_1_output() {
	want 1 "$2" "freeze into a directory that is not there" freeze -q sb -o /no/such/x.sif
}
case_2_unknown() {
	want 2 "$2" "an unknown command" nosuchcommand
	for c in $(cmds | tr ' ' '+'); do
		# shellcheck disable=SC2046 # the command's words
		want 2 "$2" "$(echo "$c" | tr + ' ') --no-such-option" $(echo "$c" | tr + ' ') --no-such-option
	done
}
case_2_duration() {
	n=0
	for c in $(cmds | tr ' ' '+'); do
		# shellcheck disable=SC2046 # the command's words
		for o in $("$GRIDGPU" help $(echo "$c" | tr + ' ') | grep -o -- '--[a-z-]* DUR' | cut -d' ' -f1 | sort -u); do
			n=$((n + 1))
			# shellcheck disable=SC2046
			want 2 "$2" "$(echo "$c" | tr + ' ') $o 4 (no unit)" $(echo "$c" | tr + ' ') "$o" 4
		done
	done
	[ "$n" -ge 10 ] && ok "$n duration options walked" || not_ok "only $n duration options found by 'gridgpu help'"
	want 2 "$2" "proxy init --valid 12 (as the page says)" proxy init --valid 12
}
case_2_site() {
	for c in $(cmds | tr ' ' '+'); do
		[ "$c" = help ] && continue # help takes gridgpu's options as any word
		WANT_MSG="did you mean 'glasgow'"
		# shellcheck disable=SC2046
		want 2 "$2" "--site glasow $(echo "$c" | tr + ' ')" --site glasow $(echo "$c" | tr + ' ')
	done
	WANT_MSG=
}
case_2_file() { # STATUS KINDS TEXT
	# each bold name of the case: a missing file (and, where it says, not a regular one)
	for w in $(printf '%s\n' "$3" | sed -n 's/.*regular file:\(.*\)/\1/p' | grep -o '\*[^*]*\*' | tr -d '*' | tr ' ' '+'); do
		case $w in
		submit) want 2 "$2" "submit of a missing image" --site tb submit nosuch.sif --walltime 1h -- true ;;
		inspect)
			want 2 "$2" "inspect of a missing image" inspect nosuch.sif
			want 2 "$2" "inspect of a directory" inspect sb
			;;
		verify) want 2 "$2" "verify of a missing image" verify nosuch.sif ;;
		freeze) want 2 "$2" "freeze of a missing source" freeze nosuch -o x.sif ;;
		--config)
			want 2 "$2" "--config of a missing file" --config nosuch.conf list
			want 2 "$2" "--config of a directory" --config "$T_TMP" list
			;;
		--cert) want 2 "$2" "proxy init --cert of a missing file" proxy init --cert nosuch.pem -o p.pem ;;
		--key) want 2 "$2" "proxy init --key of a missing file" proxy init --cert "$GG_TB_USER_CERT" --key nosuch.pem -o p.pem ;;
		--input) want 2 "$2" "submit --input of a missing file" --site tb submit work.sif --input nosuch.txt --walltime 1h -- true ;;
		request+--image) want 2 "$2" "request --image of a missing file" --site tb request --image /no/such.tar --walltime 1h ;;
		*) not_ok "gridgpu(1) names '$w' for a missing file: no trigger for it in t-exits.sh" ;;
		esac
	done
}
case_2_storage() {
	run=t-exits-$$
	want 2 "$2" "submit --input a file the storage does not have" --site tb submit work.sif \
		--input "$GG_TB_SE_ROOT//store/data/$run/nosuch.bin" --walltime 1h -- true
	want 2 "$2" "submit --output into a directory the storage does not have" --site tb submit work.sif \
		--output "r.txt=$GG_TB_SE_ROOT//store/user/$run/nosuchdir/r.txt" --walltime 1h -- true
}
case_2_config() {
	printf '[site a]\nce = https://x/arex\nbogus = 1\n' >bad.conf
	want 2 "$2" "a configuration file with an unknown key" --config bad.conf list
}
case_3_none() {
	want_env 3 "$2" "request with no proxy" X509_USER_PROXY="$T_TMP/none" --site tb request --walltime 1h
	want 3 "$2" "proxy info --file of no proxy" proxy info --file "$T_TMP/none"
}
case_3_unusable() {
	cp "$X509_USER_PROXY" open.pem && chmod 644 open.pem
	want_env 3 "$2" "request with a proxy others can read" X509_USER_PROXY="$T_TMP/open.pem" --site tb request --walltime 1h
	echo "not a proxy" >junk.pem && chmod 600 junk.pem
	want_env 3 "$2" "request with a file that is no proxy" X509_USER_PROXY="$T_TMP/junk.pem" --site tb request --walltime 1h
}
case_3_expired() {
	want 3 "$2" "proxy init from an expired certificate" proxy init --cert "$GG_TB_EXPIRED_CERT" --key "$GG_TB_EXPIRED_KEY" -o exp.pem
}
case_3_refused() {
	"$GRIDGPU" proxy init -q --cert "$GG_TB_BAD_USER_CERT" --key "$GG_TB_BAD_USER_KEY" -o untrusted.pem </dev/null
	WANT_MSG="refused your credential"
	want_env 3 "$2" "request with a proxy of a CA the CE does not trust" \
		X509_USER_PROXY="$T_TMP/untrusted.pem" --site tb request --walltime 1h
	WANT_MSG=
}
# the test site's jump host that asks for a TOTP code (tests/testbed/totp.sh):
# its master's socket in this test's own directory
otp_site() {
	export XDG_RUNTIME_DIR="$T_TMP/rt"
	mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
	"$GRIDGPU" site show otp >/dev/null 2>&1 ||
		"$GRIDGPU" site add otp -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMPOTP" --jump "$GG_TB_JUMP1" \
			--jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
			--worker-address 127.0.0.1 --second-factor 1
}
case_3_code() {
	otp_site
	good=$("$GG_TB_TOTP_CODE" "$GG_TB_DIR")
	n=$(printf '%s' "$good" | sed 's/^0*//')
	printf '%06d\n' $(((${n:-0} + 1) % 1000000)) >"$T_TMP/bad.code"
	python3 "$HERE/pty-run.py" --code "$T_TMP/bad.code" --timeout 60 -- \
		sh -c "'$GRIDGPU' --json login otp >'$T_TMP/.stdout' 2>'$T_TMP/.stderr'; echo \$? >'$T_TMP/.rc'" >/dev/null 2>&1
	RC=$(cat "$T_TMP/.rc") OUT=$(cat "$T_TMP/.stdout") ERR=$(cat "$T_TMP/.stderr")
	check_error 3 "$2" "login with a wrong one-time code"
}
case_4_login() {
	otp_site
	want 4 "$2" "request through a second-factor hop with no login open" --site otp request --walltime 1h
	want 4 "$2" "login --check with no login open" login --check otp
}
case_4_unreachable() {
	want 4 "$2" "request to a CE that does not listen" --site down request --walltime 1h
}
case_4_unusable() {
	want 4 "$2" "request to a web server that is no CE" --site notce request --walltime 1h
}
case_4_hostkey() {
	ssh-keygen -q -t ed25519 -N '' -f "$T_TMP/mitm" </dev/null
	J1=${GG_TB_JUMP1#*@}
	awk -v h="[${J1%:*}]:${J1##*:}" -v k="$(cut -d' ' -f1,2 "$T_TMP/mitm.pub")" '$1 == h {print h, k; next} {print}' \
		"$GG_TB_SSH_KNOWN_HOSTS" >"$T_TMP/wrong_known_hosts"
	"$GRIDGPU" site add tbk -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
		--identity "$GG_TB_SSH_KEY" --known-hosts "$T_TMP/wrong_known_hosts" --worker-address 127.0.0.1
	want 4 host-key "request through a jump host with another key" --site tbk request --name hk --walltime 10m
	"$GRIDGPU" kill -q hk >/dev/null 2>&1
}
case_5_record() {
	for c in $(awk -F '\t' '$2 ~ /^OPT_(RECORD|SESSION|LIVE|JOB)$/ {print $1}' "$T_TMP/commands"); do
		want 5 "$2" "$c of no such session or job" "$c" nosuch
	done
	want 5 "$2" "freeze --session of no such session" freeze --session nosuch -o x.sif
}
case_5_site() {
	for c in $(awk -F '\t' '$2 == "OPT_SITE" {print $1}' "$T_TMP/commands" | tr ' ' '+'); do
		# shellcheck disable=SC2046
		case $c in
		site+set) want 5 "$2" "site set of no such site" site set nosuch queue q ;;
		*) want 5 "$2" "$(echo "$c" | tr + ' ') of no such site" $(echo "$c" | tr + ' ') nosuch ;;
		esac
	done
}
case_6_job() {
	"$GRIDGPU" --site tb submit -q work.sif --name jf --walltime 10m -- sh -c 'echo failing >&2; exit 3' >/dev/null
	# get and status print their own document (one on stdout, gridgpu-json(7)),
	# its state failed; the exit status is the page's
	for c in "get --wait --timeout 3m" "status"; do
		# shellcheck disable=SC2086 # the command's words
		run_gg --json $c jf
		st=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["state"])' 2>&1)
		expect_eq "${c%% *} --json of a job whose command failed: exit $1, one document, its state failed" "$RC $st" "$1 failed"
	done
}
case_6_check() {
	"$GRIDGPU" site add tbs -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
		--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
		--runtime bwrap
	sh "$HERE/mkrootfs.sh" "$T_TMP/sbg" grep >/dev/null 2>&1
	if ! "$GRIDGPU" --site tbs request -q --name xs --image "$T_TMP/sbg" --walltime 10m >/dev/null 2>"$T_TMP/.rq"; then
		not_ok "a session to check in: $(head -n 2 "$T_TMP/.rq")"
		return
	fi
	# work.sif has no grep: check's document says so, submit --check sends nothing
	run_gg --json check work.sif --session xs -- grep -q x /dev/null
	same=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["same"])' 2>&1)
	expect_eq "check --json of an image without the command's program: exit $1, one document, not the same" "$RC $same" "$1 False"
	want "$1" "$2" "submit --check of an image without the command's program" \
		--site tbs submit --check --session xs work.sif -- grep -q x /dev/null
	"$GRIDGPU" kill -q xs >/dev/null 2>&1
}
case_130_int() {
	mkfifo in.fifo
	sleep 120 >in.fifo & # holds the pipe open, writes nothing
	hold=$!
	"$GRIDGPU" --json freeze - -o int.sif <in.fifo >"$T_TMP/.stdout" 2>"$T_TMP/.stderr" &
	pid=$!
	# read(0) in one of its threads: freeze waits for its standard input
	poll 20 sh -c 'cat /proc/$1/task/*/syscall 2>/dev/null | grep -q "^0 0x0 "' sh "$pid" ||
		not_ok "freeze did not come to read its standard input"
	kill -INT "$pid"
	wait "$pid"
	RC=$?
	kill "$hold" 2>/dev/null
	OUT=$(cat "$T_TMP/.stdout") ERR=$(cat "$T_TMP/.stderr")
	check_error 130 "$2" "SIGINT while freeze reads its standard input"
}

# Each case of the page to its trigger, by what it says.
while IFS="$(printf '\t')" read -r status kinds text; do
	case "$status:$text" in
	"1:an output file that cannot be written"*) case_1_output "$status" "$kinds" ;;
	"2:an unknown command, and an unknown option in every command"*) case_2_unknown "$status" "$kinds" ;;
	"2:a value that cannot be parsed: a duration without its unit"*"in every command"*) case_2_duration "$status" "$kinds" ;;
	"2:an unknown *--site* in every command"*) case_2_site "$status" "$kinds" ;;
	"2:a file named on the command line that is missing or not a regular file"*) case_2_file "$status" "$kinds" "$text" ;;
	"2:a storage file (or output directory) that the storage says is not there"*) case_2_storage "$status" "$kinds" ;;
	"2:a configuration file that cannot be used as one"*) case_2_config "$status" "$kinds" ;;
	"3:no proxy"*) case_3_none "$status" "$kinds" ;;
	"3:a proxy file that cannot be used"*) case_3_unusable "$status" "$kinds" ;;
	"3:a user certificate that has expired"*) case_3_expired "$status" "$kinds" ;;
	"3:a credential the CE refuses"*) case_3_refused "$status" "$kinds" ;;
	"3:a one-time code a jump host refuses"*) case_3_code "$status" "$kinds" ;;
	"4:a jump host that asks for a second factor with no login open"*) case_4_login "$status" "$kinds" ;;
	"4:a CE that cannot be reached"*) case_4_unreachable "$status" "$kinds" ;;
	"4:a CE that answers an error or something unusable"*) case_4_unusable "$status" "$kinds" ;;
	"4:an SSH host key of a jump host that is not the known one"*) case_4_hostkey "$status" "$kinds" ;;
	"5:no such session or job, in every command that names one"*) case_5_record "$status" "$kinds" ;;
	"5:no such site profile named as the operand of"*) case_5_site "$status" "$kinds" ;;
	"6:a batch job whose command failed"*) case_6_job "$status" "$kinds" ;;
	"6:an image that does not run the command as the session does"*) case_6_check "$status" "$kinds" ;;
	"130:Ctrl-C"*) case_130_int "$status" "$kinds" ;;
	*) not_ok "gridgpu(1) documents exit $status for '$text': no trigger for it in t-exits.sh" ;;
	esac
done <"$T_TMP/cases"
done_testing
