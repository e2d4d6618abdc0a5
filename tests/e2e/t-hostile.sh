#!/bin/sh
# Text from outside (a CE's answer kept in a record, an image's labels) reaches
# the terminal escaped: no ESC, CR, LF, DEL, C1 control or invalid UTF-8 from it,
# so a hostile CE or image cannot clear the screen, set the window title or print
# a line of ours such as "session ready, host key ... (pinned)"; site profiles hold
# plain text; every --json document keeps a value that is not UTF-8, escaped.
# Needs no test site.
. "$(dirname "$0")/lib.sh"
REC=$XDG_STATE_HOME/gridgpu/records
mkdir -p "$REC"
# raw_controls FILE: the control bytes in FILE that are not line ends of ours (none: exit 1)
raw_controls() {
	/usr/bin/python3 -c '
import re, sys
b = open(sys.argv[1], "rb").read()
bad = re.findall(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b)
try: b.decode("utf-8")
except UnicodeDecodeError: bad.append(b"invalid UTF-8")
print(bad); sys.exit(0 if bad else 1)' "$1"
}
# no_fake_line FILE: no line of FILE starts with the text the CE tried to inject
no_fake_line() { ! grep -q '^Session evil is ready' "$1" && ! grep -q '^gridgpu: session ready' "$1"; }

# A record as a hostile CE and launcher would leave it (state words, reason,
# session directory, node, CE URL), in the store's own format.
/usr/bin/python3 - "$REC/evil.json" <<'PY'
import json, sys
evil = "\x1b]0;pwned\x07\x1b[2J\r\nSession evil is ready: u@h port 22, host key SHA256:AAAA (pinned)\n"
rec = {"version": 1, "kind": "session", "state": "failed", "name": "evil", "uid": "0123456789ab",
       "site": "tb", "ce": "https://ce.example.org/arex", "job_id": "abc123",
       "error": "launcher says: " + evil, "ce_state": "FAILED\x1b[31m\u009b2J",
       "sessiondir": "/s/\x1b[8mhidden", "image": "img\r\ngridgpu: session ready",
       "node": "n1\x1b[1A", "user": "u\x7f", "port": 2222, "created": 1700000000,
       "walltime": 3600}
json.dump(rec, open(sys.argv[1], "w"))
PY
run_gg list
printf '%s' "$OUT$ERR" >"$T_TMP/list.out"
if raw_controls "$T_TMP/list.out" >"$T_TMP/bad"; then not_ok "list: no raw control byte from a record ($(cat "$T_TMP/bad"))"; else
	ok "list: no raw control byte from a record"; fi
run_gg status --no-sync evil
printf '%s\n%s' "$OUT" "$ERR" >"$T_TMP/status.out"
grep -q 'evil' "$T_TMP/status.out" && ok "status --no-sync shows the hostile record" || not_ok "status shows the record ($RC $ERR)"
if raw_controls "$T_TMP/status.out" >"$T_TMP/bad"; then not_ok "status: no raw control byte from the CE's words ($(cat "$T_TMP/bad"))"; else
	ok "status: no raw control byte from the CE's words (reason, CE state, node, session dir)"; fi
no_fake_line "$T_TMP/status.out" && ok "status: the CE cannot print a line of its own" || not_ok "status: a line injected by the CE ($(cat "$T_TMP/status.out"))"
grep -qF '\x1b]0;pwned\x07' "$T_TMP/status.out" && grep -qF '\r\nSession evil' "$T_TMP/status.out" &&
	ok "status: the escapes are shown visibly (backslash x1b, r, n)" || not_ok "status: escapes shown visibly ($(cat "$T_TMP/status.out"))"
run_gg --json status --no-sync evil
json_valid status
printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d["name"]!="evil")' &&
	ok "status --json: valid JSON with the record" || not_ok "status --json ($OUT)"

# An error message with bytes that are not UTF-8 (a name given by the user):
# --json still prints its error object, the terminal gets them escaped.
run_gg --json status "$(printf 'no\377such\033[2J')"
printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; e=json.load(sys.stdin)["error"]; sys.exit(not (e["exit"]==5 and e["kind"]=="not-found"))' &&
	ok "--json: an error whose message is not UTF-8 is still a JSON error (exit 5)" || not_ok "--json error with invalid UTF-8 ($RC '$OUT')"
printf '%s' "$ERR" >"$T_TMP/err.out"
if raw_controls "$T_TMP/err.out" >"$T_TMP/bad"; then not_ok "the error on stderr has no raw control byte ($(cat "$T_TMP/bad"))"; else
	ok "the error on stderr has no raw control byte"; fi
run_gg --json list --bogus
json_valid error
printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; e=json.load(sys.stdin)["error"]; sys.exit(not (e["exit"]==2 and e["kind"]=="usage"))' &&
	ok "--json: a usage error is a JSON error too (exit 2)" || not_ok "--json usage error ($RC '$OUT')"

# An image whose labels a hostile builder chose.
sh "$GG_TOP/tests/e2e/mkrootfs.sh" "$T_TMP/sandbox" >/dev/null 2>&1
label=$(printf 'x\033]0;pwned\007\033[2J\r\ngridgpu: session ready\302\233')
run_gg freeze -q "$T_TMP/sandbox" -o "$T_TMP/evil.sif" --label "evil=$label"
if [ "$RC" = 0 ]; then
	run_gg inspect "$T_TMP/evil.sif"
	printf '%s\n%s' "$OUT" "$ERR" >"$T_TMP/inspect.out"
	grep -q 'evil: x' "$T_TMP/inspect.out" && ok "inspect shows the hostile label" || not_ok "inspect shows the label ($RC $(cat "$T_TMP/inspect.out"))"
	if raw_controls "$T_TMP/inspect.out" >"$T_TMP/bad"; then not_ok "inspect: no raw control byte from a label ($(cat "$T_TMP/bad"))"; else
		ok "inspect: no raw control byte from an image label"; fi
	no_fake_line "$T_TMP/inspect.out" && ok "inspect: a label cannot print a line of its own" || not_ok "inspect: a line injected by a label"
else
	# freeze refuses such a label itself: then no image can carry one from us
	ok "freeze refuses a label with control characters (exit $RC)"
fi

# Paths that are not UTF-8 (a Latin-1 directory name): --json keeps them,
# escaped, instead of dropping the member or printing null.
bad=$(printf 'sb\377x')
mkdir -p "$T_TMP/$bad" && cp -R "$T_TMP/sandbox/." "$T_TMP/$bad/"
run_gg --json freeze "$T_TMP/$bad" -o "$T_TMP/$bad.sif"
printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["source"].endswith("sb\\xffx") and d["output"].endswith("sb\\xffx.sif")))' &&
	ok "freeze --json: a source and an output path that are not UTF-8 are kept, escaped" || not_ok "freeze --json non-UTF-8 paths ($RC '$OUT' $ERR)"
for c in inspect verify; do
	run_gg --json "$c" "$T_TMP/$bad.sif"
	printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; sys.exit(not d["path"].endswith("sb\\xffx.sif"))' &&
		ok "$c --json: a path that is not UTF-8 is kept, escaped" || not_ok "$c --json non-UTF-8 path ($RC '$(printf '%s' "$OUT" | head -c 300)' $ERR)"
done
# ---- Site profiles: plain text. A value with a terminal escape, in a file
# edited by hand or given to site add/set, is refused (exit 2, one line naming
# the key, nothing raw); other odd text (not UTF-8, a bidi override) is shown
# escaped by site show, site list and a dry run, never raw. ----
CFG=$XDG_CONFIG_HOME/gridgpu/config
mkdir -p "$(dirname "$CFG")"
printf '[site evil]\nce = https://ce.invalid/arex\njump = u@jump.invalid\nqueue = gpu\033[2J\n' >"$CFG"
# refused_key KEY DESCRIPTION: the last run_gg failed with exit 2, one line on
# stderr naming KEY and the control character, no raw byte, nothing on stdout
refused_key() {
	printf '%s' "$OUT$ERR" >"$T_TMP/r.out"
	if [ "$RC" = 2 ] && [ -z "$OUT" ] && [ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] &&
		printf '%s' "$ERR" | grep -q "$1: the value has a control character (U+001B)" &&
		! raw_controls "$T_TMP/r.out" >/dev/null; then ok "$2"; else not_ok "$2 ($RC '$OUT' '$ERR')"; fi
}
for c in "site show evil" "site list" "request --dry-run --site evil" "ssh-config"; do
	# shellcheck disable=SC2086 # the words of the command
	run_gg $c
	refused_key queue "$c: a profile edited to hold ESC[2J is refused, naming the key"
done
printf '[site evil]\nce = https://ce.invalid/arex\njump = u@jump.invalid\n' >"$CFG"
cp "$CFG" "$T_TMP/cfg.before"
run_gg site set evil queue "$(printf 'gpu\033]0;pwned\007')"
refused_key queue "site set: a value with a terminal escape is refused"
run_gg site add evil2 --ce https://ce.invalid/arex --image "$(printf 'i\033[2J')"
refused_key image "site add: a value with a terminal escape is refused"
# slurm+ssh:// (issue 49): a login node or user with shell syntax, a '..' step, a
# bad port, a GPU type with a blank, a GPU mapping it does not know: refused
for v in 'slurm+ssh://u@h;id' 'slurm+ssh://$(id)@h' 'slurm+ssh://u@h/a/../b' 'slurm+ssh://u@h:99999'; do
	expect_fail "site add --ce '$v': refused (exit 2)" 2 "slurm+ssh://USER@LOGIN" site add sl1 --ce "$v"
done
expect_fail "site add --slurm-gpu-type 'a 100': refused" 2 "expected a Slurm GPU type" \
	site add sl2 --ce slurm+ssh://u@h --slurm-gpu-type 'a 100'
expect_fail "site add --slurm-gpu mig: refused" 2 "slurm-gpu" site add sl3 --ce slurm+ssh://u@h --slurm-gpu mig
cmp -s "$CFG" "$T_TMP/cfg.before" && ok "the refused values left the configuration as it was" || not_ok "configuration changed by a refused value"
# valid but odd: not UTF-8 (CE, image) and a right-to-left override (queue)
X=$(printf '\377')
RLO=$(printf '\342\200\256')
run_gg site add odd --ce "https://ce.invalid/ar${X}ex" --jump u@jump.invalid --image "node:/img${X}.sif" --queue "q${RLO}x"
expect_eq "site add: text that is not UTF-8 or hides a bidi override is taken" "$RC" 0
# no_raw DESCRIPTION TEXT: the last output has no raw control (but the tabs of
# the script a dry run shows), no invalid UTF-8, no raw RLO, and holds TEXT
no_raw() {
	printf '%s\n%s' "$OUT" "$ERR" | tr -d '\t' >"$T_TMP/o.out"
	if [ "$RC" = 0 ] && ! raw_controls "$T_TMP/o.out" >/dev/null && ! grep -qF "$RLO" "$T_TMP/o.out" &&
		grep -qF "$2" "$T_TMP/o.out"; then ok "$1"; else not_ok "$1 ($RC $(head -c 300 "$T_TMP/o.out"))"; fi
}
run_gg site show odd
no_raw "site show: the values are printed escaped, never raw" 'queue = q\xe2\x80\xaex'
run_gg site list
no_raw "site list: the CE is printed escaped" 'https://ce.invalid/ar\xffex'
run_gg request --dry-run --site odd
no_raw "request --dry-run: the job description and script show the values escaped" "IMAGE='/img\\xff.sif'"

# ---- Every --json producer: a value that is not UTF-8 (\xff) or that holds
# control characters is kept, escaped, in a valid document; an input that must
# be exact is refused (exit 2, one line). Never a member or an item dropped. ----
C=$(printf '\033[2J\007')
covered=""
# json_has EXPR WHAT SCHEMA CMD: the last run_gg's stdout validates against
# SCHEMA and the Python expression EXPR (d: the document) holds; CMD is covered
json_has() {
	json_valid "$3"
	if /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$T_TMP/.stdout" "$1" 2>"$T_TMP/.py"; then ok "$2"; else
		not_ok "$2 ($RC $(head -c 400 "$T_TMP/.stdout") $ERR $(cat "$T_TMP/.py"))"; fi
	covered="$covered|$4|"
}
run_gg --json site add odd2 --ce "https://ce.invalid/x${X}" --jump "u@jump.invalid" --bind "/data${X}:/d" --gpu-rte "R$C"
[ "$RC" = 2 ] && ok "site add --json: a control character in a value is refused (exit 2)" || not_ok "site add --json control ($RC $OUT)"
run_gg --json site add odd2 --ce "https://ce.invalid/x${X}" --jump "u@jump.invalid" --bind "/data${X}:/d"
json_has 'd["ce"] == "https://ce.invalid/x\\xff" and d["binds"] == ["/data\\xff:/d"]' "site add --json: the CE and a bind that are not UTF-8 are kept, escaped" site "site add"
run_gg --json site set odd2 image "/i${X}.sif"
json_has 'd["image"] == "/i\\xff.sif" and d["ce"] == "https://ce.invalid/x\\xff"' "site set --json: values that are not UTF-8 are kept, escaped" site "site set"
run_gg --json site show odd
json_has 'd["ce"] == "https://ce.invalid/ar\\xffex" and d["image"] == "node:/img\\xff.sif" and d["queue"] == "q\u202ex"' "site show --json: every value kept, escaped" site "site show"
run_gg --json site list
json_has '{s["name"]: s["ce"] for s in d["items"]} == {"evil": "https://ce.invalid/arex", "odd": "https://ce.invalid/ar\\xffex", "odd2": "https://ce.invalid/x\\xff"}' "site list --json: every profile there, values escaped" site-list "site list"
run_gg --json request --dry-run --site odd
json_has 'd["endpoint"] == "https://ce.invalid/ar\\xffex" and "q\u202ex" in d["description"]' "request --dry-run --json: the CE kept, escaped (not an empty document)" dry-run request
run_gg --json submit "$T_TMP/$bad.sif" --dry-run --site odd -- echo "a${X}b$C"
json_has 'len(d["items"]) == 1 and d["items"][0]["ce"] == "https://ce.invalid/ar\\xffex"' "submit --dry-run --json: the job is there, its CE escaped (was {\"items\":[]})" dry-run submit
run_gg --json submit "$T_TMP/$bad.sif" --dry-run --site odd --output "o=root://se.invalid//d/o${X}" -- true
[ "$RC" = 2 ] && [ "$(printf '%s\n' "$ERR" | grep -c '^gridgpu: --output o: .*not valid UTF-8')" = 1 ] &&
	ok "submit: an --output URL that is not UTF-8 is refused at input (exit 2, naming --output)" || not_ok "submit --output not UTF-8 ($RC '$ERR')"
json_valid error
# --input-list FILE: odd lists refused with the line, escaped, before anything is sent
L=$T_TMP/list
printf 'x\n' >"$T_TMP/in-ok.txt"
printf '# nothing\n\n   \n' >"$L.empty"
printf '%s\n%s\n' "$T_TMP/in-ok.txt" "$T_TMP/no-such${C}${X}.txt" >"$L.missing"
printf 'file:///etc/passwd\n' >"$L.file"
seq 1001 | sed "s|.*|$T_TMP/in-ok.txt|" >"$L.long"
printf '%s\n%s\n' "$T_TMP/in-ok.txt" "root://se.invalid//d/in1" >"$L.ok"
for c in "$L.none:no such file" "$L.empty:no input" "$L.missing:line 2" "$L.file:line 1" "$L.long:at most 1000"; do
	run_gg submit "$T_TMP/$bad.sif" --dry-run --site odd --input-list "${c%%:*}" -- true
	[ "$RC" = 2 ] && printf '%s\n' "$ERR" | grep -q "^gridgpu: .*--input-list.*" &&
		printf '%s\n' "$ERR" | grep -q -- "${c#*:}" && ! raw_controls "$T_TMP/.stderr" >/dev/null &&
		ok "submit --input-list $(basename "${c%%:*}"): exit 2, naming it ('${c#*:}'), escaped" ||
		not_ok "submit --input-list $(basename "${c%%:*}"): ($RC '$ERR')"
done
run_gg submit "$T_TMP/$bad.sif" --dry-run --site odd --input-list "$L.ok" --count 2 -- true
expect_eq "submit --input-list with --count: exit 2" "$RC:$(printf '%s\n' "$ERR" | grep -c 'leave out --count')" "2:1"
run_gg --json submit "$T_TMP/$bad.sif" --dry-run --site odd --input-list "$L.ok" -- true
json_has 'len(d["items"]) == 2' "submit --input-list --dry-run --json: one job a line" dry-run submit
# --gpus 0-1 ("can use a GPU"): no other range, not with --mig, not for a session
for v in 0-2 1-0 0-1x "0-1$C"; do
	run_gg submit "$T_TMP/$bad.sif" --dry-run --site odd --gpus "$v" -- true
	[ "$RC" = 2 ] && printf '%s\n' "$ERR" | grep -q '^gridgpu: .*--gpus' && ! raw_controls "$T_TMP/.stderr" >/dev/null &&
		ok "submit --gpus '$(printf '%s' "$v" | cat -v)': exit 2, naming --gpus" || not_ok "submit --gpus odd ($RC '$ERR')"
done
run_gg submit "$T_TMP/$bad.sif" --dry-run --site odd --gpus 0-1 --mig 1g.10gb -- true
expect_eq "submit --gpus 0-1 --mig: exit 2" "$RC:$(printf '%s\n' "$ERR" | grep -c 'exclude each other')" "2:1"
run_gg request --dry-run --site odd --gpus 0-1
expect_eq "request --gpus 0-1: exit 2" "$RC:$(printf '%s\n' "$ERR" | grep -c 'only submit takes it')" "2:1"

# sites: the odd site's CE (not UTF-8) is a row with its reason (a proxy path that
# is not UTF-8), both kept escaped
X509_USER_PROXY="$T_TMP/none$X" run_gg --json sites --site odd --timeout 3s
json_has '[(r["site"], r["ce"], r["reachable"]) for r in d["sites"]] == [("odd", "https://ce.invalid/ar\\xffex", False)] and "none\\xff" in d["sites"][0]["reason"]' \
	"sites --json: the CE that is not UTF-8 kept, escaped, in the row and its reason" sites sites
# check: a session named with bytes that are not UTF-8 is not there; the error keeps them
run_gg --json check "$T_TMP/$bad.sif" --session "s${X}" -- echo "a${X}b"
json_has 'd["error"]["kind"] == "not-found" and "s\\xff" in d["error"]["message"]' \
	"check --json: no such session, its name kept escaped in the error" error check
# proxy init / info: the proxy's path and the token's source not UTF-8, the
# token's subject and issuer with control characters
mkdir -p "$HOME/.globus"
if openssl req -x509 -newkey rsa:2048 -nodes -keyout "$HOME/.globus/userkey.pem" -out "$HOME/.globus/usercert.pem" \
	-days 2 -subj "/DC=org/DC=example/CN=Hostile Tester" >/dev/null 2>&1; then
	chmod 600 "$HOME/.globus/userkey.pem"
	b64() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
	printf '%s.%s.sig' "$(b64 '{"alg":"none"}')" "$(b64 '{"sub":"a\u001b[2J\u0007","iss":"https://i\u001b.example"}')" >"$T_TMP/tok$X"
	chmod 600 "$T_TMP/tok$X"
	export BEARER_TOKEN_FILE="$T_TMP/tok$X"
	run_gg --json proxy init --out "$T_TMP/px$X" </dev/null
	json_has 'd["path"].endswith("px\\xff") and d["token"]["source"].endswith("tok\\xff") and d["token"]["sub"] == "a\x1b[2J\x07"' \
		"proxy init --json: the path and the token source kept, escaped; the token subject's controls kept" proxy-init "proxy init"
	run_gg --json proxy info --file "$T_TMP/px$X"
	json_has 'd["path"].endswith("px\\xff") and d["token"]["source"].endswith("tok\\xff") and d["token"]["iss"] == "https://i\x1b.example"' \
		"proxy info --json: the path and the token source kept, escaped" proxy-info "proxy info"
	unset BEARER_TOKEN_FILE
else
	not_ok "openssl could not make a test certificate"
fi

# doctor: a failing check whose detail is not UTF-8 (a proxy path) is there
X509_USER_PROXY="$T_TMP/none$X" run_gg --json doctor --site odd
json_has 'any(c["id"] == "proxy" and c["status"] == "fail" and "none\\xff" in c["detail"] for c in d["checks"]) and any(c["id"] == "ce" and "ar\\xffex" in c["detail"] for c in d["checks"])' \
	"doctor --json: the failing check and the CE, not UTF-8, are kept, escaped" doctor doctor

# records: a job whose strings are not UTF-8 or hold controls (in the store's
# own format: escaped and named in "escaped"), shown by every record producer
/usr/bin/python3 - "$REC/hj.json" <<'PY'
import json, sys
rec = {"version": 1, "kind": "job", "state": "finished", "name": "hj", "uid": "0123456789ac",
       "site": "odd", "ce": "https://ce.invalid/arex", "job_id": "abc124", "image": "img\u001b[2J",
       "image_path": "/x/\\xff\\x1b[2J.sif", "command": "echo \\xff\\x1b]0;t\\x07",
       "outputs_dir": "/o/\\xff", "error": "bad \\xff",
       "storage_outputs": "a.out root://se.invalid//d/a\\xff.out\nb.out root://se.invalid//d/b.out",
       "created": 1700000000, "walltime": 3600,
       "escaped": ["image_path", "command", "outputs_dir", "storage_outputs", "error"]}
json.dump(rec, open(sys.argv[1], "w"))
PY
rec_ok='[o["url"] for o in j["storage_outputs"]] == ["root://se.invalid//d/a\\xff.out", "root://se.invalid//d/b.out"] and j["image_path"] == "/x/\\xff\\x1b[2J.sif" and j["image"] == "img\x1b[2J" and j["reason"] == "bad \\xff"'
for c in list jobs; do
	run_gg --json "$c"
	json_has "[j for j in d['items'] if j['name'] == 'hj'] and all($rec_ok for j in d['items'] if j['name'] == 'hj')" \
		"$c --json: both storage outputs and every odd value kept, escaped" "$c" "$c"
done
run_gg --json status --no-sync hj
json_has "(lambda j: $rec_ok)(d)" "status --json: both storage outputs and every odd value kept, escaped" status status
run_gg --json get --urls hj
json_has '[(u["name"], u["url"]) for u in d["urls"]] == [("a.out", "root://se.invalid//d/a\\xff.out"), ("b.out", "root://se.invalid//d/b.out")]' \
	"get --urls --json: both outputs, the odd URL escaped" get get
cp "$REC/hj.json" "$T_TMP/hj.json"
run_gg --json kill hj
json_has "len(d['items']) == 1 and (lambda j: $rec_ok)(d['items'][0])" "kill --json: the record kept whole, escaped" kill kill
run_gg --json clean --keep-remote hj
json_has 'd["cleaned"] == ["hj"]' "clean --json: the record named (names are plain by rule)" clean clean

# request --race: odd counts refused before anything is recorded; a racer's
# record edited to carry controls in its race marks: list --json keeps them
# escaped, and a sync that settles its race (its client long gone) does not
# take a name that is not valid, nor print it raw.
for v in 0 9 -1 x '' 2x "$(printf '\377')"; do
	run_gg request --site auto --race "$v"
	[ "$RC" = 2 ] || not_ok "request --race '$v': exit $RC"
done
ok "request --race with odd counts: exit 2"
/usr/bin/python3 - "$REC/race-odd-1.json" <<'PY'
import json, sys
rec = {"version": 1, "kind": "session", "state": "queued", "name": "race-odd-1", "uid": "0123456789ad",
       "site": "odd", "ce": "https://ce.invalid/arex", "job_id": "abc125", "created": 1700000000,
       "walltime": 3600, "race": "r\u001b[2J", "race_name": "x\u001b]0;t\u0007y"}
json.dump(rec, open(sys.argv[1], "w"))
PY
run_gg --json list
json_has "[j for j in d['items'] if j.get('race') == 'r\x1b[2J' and j.get('race_name') == 'x\x1b]0;t\x07y']" \
	"list --json: a racer's race marks kept, escaped by JSON" list list
run_gg list --sync
printf '%s\n%s' "$OUT" "$ERR" >"$T_TMP/race.out"
if raw_controls "$T_TMP/race.out" >"$T_TMP/bad"; then not_ok "list --sync settling an edited race: no raw control byte ($(cat "$T_TMP/bad"))"; else
	ok "list --sync settling an edited race: no raw control byte"; fi
[ ! -e "$REC/race-odd-1.json" ] && [ -e "$REC/odd-1.json" ] && ! ls "$REC" | grep -q '^x' &&
	ok "... the racer kept as odd-1, not under the name that is not valid" || not_ok "records: $(ls "$REC")"
"$GRIDGPU" clean --keep-remote odd-1 >/dev/null 2>&1

# gpus: a GPU name (what NVML says) that is not UTF-8 and holds controls
FAKE=$(cd "$(dirname "$GRIDGPU")/.." && pwd)/tests/fakegpu
if [ -e "$FAKE/libnvidia-ml.so.1" ]; then
	printf 'driver 550.54.15\ncuda 12040\ngpu name="NVIDIA \377\033[2J X" uuid=GPU-c4a646d7-aa14-1dd1-f1b0-57288cda864d cc=8.9 mem=24564 free=23000 ecc=na mig=na\n' >"$T_TMP/gpu.conf"
	GG_FAKE_NVML="$T_TMP/gpu.conf" LD_LIBRARY_PATH="$FAKE" run_gg --json gpus
	json_has 'd["gpus"][0]["name"] == "NVIDIA \\xff\\x1b[2J X"' "gpus --json: a GPU name that is not UTF-8 kept, escaped" gpus gpus
else
	not_ok "gpus --json: the fake NVML is not built ($FAKE)"
fi
# freeze, inspect, verify: above (paths that are not UTF-8); version: no outside text
covered="$covered|freeze||inspect||verify|"
run_gg --json --version
json_valid version
# login (second-factor jump hosts): a hop number with a terminal escape or out
# of range refused, naming the key; an odd site name never printed raw.
run_gg site set odd second-factor "$(printf '1\033[2J')"
printf '%s%s' "$OUT" "$ERR" >"$T_TMP/sf.out"
[ "$RC" = 2 ] && printf '%s' "$ERR" | head -n 1 | grep -q -- "--second-factor '1\\\\x1b\[2J'" &&
	! raw_controls "$T_TMP/sf.out" >/dev/null &&
	ok "site set second-factor: a value with a terminal escape is refused, shown escaped" ||
	not_ok "site set second-factor with ESC[2J: $RC '$ERR'"
expect_fail "site set second-factor 99: refused" 2 "expected a jump host's number" site set odd second-factor 99
run_gg login "$(printf 'x\033[2Jy')"
printf '%s%s' "$OUT" "$ERR" >"$T_TMP/l.out"
[ "$RC" != 0 ] && ! raw_controls "$T_TMP/l.out" >/dev/null && ok "login of a site named with ESC[2J: refused, nothing raw" ||
	not_ok "login of an odd site name: $RC '$OUT' '$ERR'"
run_gg login --check odd
expect_eq "login --check of a site with no second-factor hop: usage (exit 2)" "$RC" 2
# Every command, each sub-command: its --json document is checked above, or it
# prints none (help, ssh-config, connect, login: text or ssh; proxy destroy, site
# remove: nothing but errors, which are JSON documents, checked above).
nodoc="|help||ssh-config||connect||login||proxy destroy||site remove|"
missing=""
for c in $("$GRIDGPU" __complete commands); do
	subs=$("$GRIDGPU" __complete subcommands "$c")
	for s in ${subs:-""}; do
		n=${s:+$c $s}
		n=${n:-$c}
		case "$covered$nodoc" in *"|$n|"*) ;; *) missing="$missing '$n'" ;; esac
	done
done
[ -z "$missing" ] && ok "every command's --json document was fed odd values" || not_ok "commands whose --json was not fed odd values:$missing"
done_testing
