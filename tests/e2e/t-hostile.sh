#!/bin/sh
# Text from outside (a CE's answer kept in a record, an image's labels) reaches
# the terminal escaped: no ESC, CR, LF, DEL, C1 control or invalid UTF-8 from it,
# so a hostile CE or image cannot clear the screen, set the window title or print
# a line of ours such as "session ready, host key ... (pinned)". Needs no test site.
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
cmp -s "$CFG" "$T_TMP/cfg.before" && ok "the refused values left the configuration as it was" || not_ok "configuration changed by a refused value"
# valid but odd: not UTF-8 (CE, image) and a right-to-left override (queue)
X=$(printf '\377')
RLO=$(printf '\342\200\256')
run_gg site add odd --ce "https://ce.invalid/ar${X}ex" --jump u@jump.invalid --image "/img${X}.sif" --queue "q${RLO}x"
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

done_testing
