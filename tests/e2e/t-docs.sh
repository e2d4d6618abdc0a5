#!/bin/sh
# Every command has a man page that documents every option of its table, the
# pages render without warnings, and gridgpu(1) lists every command.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
man=$top/man
for cmd in $("$GRIDGPU" __complete commands); do
	[ "$cmd" = help ] && continue
	page=$man/gridgpu-$cmd.1
	# A page may document several commands: its NAME line lists them all.
	[ -f "$page" ] || page=$(grep -l "^gridgpu.*gridgpu\\\\-${cmd}[ ,]" "$man"/*.1 | head -1)
	if [ -z "$page" ] || [ ! -f "$page" ]; then not_ok "$cmd has a man page"; continue; fi
	ok "$cmd has a man page ($(basename "$page"))"
	missing=""
	# A command's options, and each sub-command's own (site add, proxy init, ...).
	subs=$("$GRIDGPU" __complete subcommands "$cmd")
	for sub in "" $subs; do
		[ -n "$sub" ] && ! grep -q "^\.B gridgpu $cmd $sub\b" "$page" && missing="$missing $cmd-$sub"
		for opt in $("$GRIDGPU" __complete options "$cmd" $sub | sed 's/=$//'); do
			"$GRIDGPU" __complete global-options | sed 's/=$//' | grep -qx -- "$opt" && continue
			esc=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
			grep -q -- "$esc" "$page" || missing="$missing $opt"
		done
	done
	expect_eq "gridgpu-$cmd page documents every option${subs:+ and sub-command}" "${missing:-none}" none
	ecmd=$(printf '%s' "$cmd" | sed 's/-/\\\\-/g')
	grep -q -e "^\.B $ecmd\b" -e "\\\\fB$ecmd\b" "$man/gridgpu.1" && ok "gridgpu(1) lists $cmd" || not_ok "gridgpu(1) lists $cmd"
done
# site set's KEYs: gridgpu-site(1) lists exactly what completion offers after
# "site set NAME" (site add's value options, made from the library's list of
# site keys, GG_SITE_KEYS; tests/unit/test_site.c checks the page against it too).
keys_page=$(sed -n '/is the name of a value option of/,/the value is checked/p' "$man/gridgpu-site.1" |
	sed -n 's/^\.\(RB\|BR\) \(( \)\{0,1\}\([a-z\\-]*\) .*/\3/p' | sed 's/\\-/-/g' | sort | tr '\n' ' ')
keys_cmd=$("$GRIDGPU" __complete line -- gridgpu site set x '' | tail -n +2 | sort | tr '\n' ' ')
expect_eq "gridgpu-site(1) lists every site set KEY completion offers" "$keys_page" "$keys_cmd"
# gridgpu-json(7) is made from the JSON Schemas the tests validate --json against.
check "gridgpu-json(7) is what doc/json/*.schema.json give (scripts/json-man.py)" /usr/bin/python3 "$top/scripts/json-man.py" --check
bad=""
for s in "$top"/doc/json/*.schema.json; do
	/usr/bin/python3 -c 'import json,sys,jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))' "$s" 2>/dev/null || bad="$bad $(basename "$s")"
done
expect_eq "every doc/json schema is a valid JSON Schema" "${bad:-none}" none
# request, submit and freeze share one section on the container run (its
# mounts, $HOME, environment): the same text in the three pages
run_sec() { sed -n '/^\.SS The container run$/,/^\.S[SH] /p' "$man/gridgpu-$1.1" | sed '$d'; }
sec=$(run_sec request)
[ -n "$sec" ] && [ "$sec" = "$(run_sec submit)" ] && [ "$sec" = "$(run_sec freeze)" ] &&
	ok "gridgpu-request(1), -submit(1) and -freeze(1) share the section The container run" ||
	not_ok "The container run differs between request, submit and freeze (or is missing)"
for f in "$man"/*.1 "$man"/*.7; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	expect_eq "$(basename "$f") renders without warnings" "${w:-none}" none
	grep -q '^\.SH EXAMPLES' "$f" && ok "$(basename "$f") has EXAMPLES" || not_ok "$(basename "$f") has EXAMPLES"
done

# gridgpu(1)'s table of short options is the command table's: each "-X, --LONG"
# in the help of each command and sub-command (but -h, -q, -v, the global
# ones) is a row "-X COMMAND --LONG", and each row is one of them.
from_help=$(for cmd in $("$GRIDGPU" __complete commands); do
	subs=$("$GRIDGPU" __complete subcommands "$cmd")
	for sub in ${subs:-""}; do
		# shellcheck disable=SC2086 # no sub-command: no word
		"$GRIDGPU" help "$cmd" $sub | sed -n 's/^ *-\([^hqv]\), \(--[a-z-]*\).*/-\1 \2/p' |
			while read -r short long; do echo "$short ${cmd}${sub:+ $sub} $long"; done
	done
done | sort)
# A row: short, commands (", " between; "proxy info, destroy" is two of proxy's), long.
from_page=$(sed -n '/^\.TS/,/^\.TE/p' "$man/gridgpu.1" | sed 's/\\-/-/g' |
	awk -F '\t' '$1 ~ /^-.$/ { n = split($2, c, ", "); for (i = 1; i <= n; i++) {
		if (c[i] !~ / / && i > 1 && split(c[i-1], w, " ") == 2) c[i] = w[1] " " c[i]
		print $1 " " c[i] " " $3 } }' | sort)
printf '%s\n' "$from_help" >"$T_TMP/short.help"
printf '%s\n' "$from_page" >"$T_TMP/short.page"
# What only the help has (left) and only the page (indented).
d=$(comm -3 "$T_TMP/short.help" "$T_TMP/short.page" | tr '\t\n' '>;')
[ -n "$from_page" ] || d="no table"
expect_eq "gridgpu(1)'s short options table matches every command's options" "${d:-same}" same

# The EXAMPLES use only options their command has: each "--LONG" on a line that
# starts with "gridgpu" (up to a "--" that ends the options, or a comment, pipe
# or redirection) is one of the command's (or sub-command's) or a global one.
# "__complete options" ends the name of an option that takes a value with '='.
# bad_words LABEL <LINES: " LABEL:CMD[ SUB]:--OPT" for each such option that is
# not, " LABEL:CMD?" for a command gridgpu does not have.
global=$("$GRIDGPU" __complete global-options)
commands=$("$GRIDGPU" __complete commands)
bad_words() {
	while read -r line; do
		# shellcheck disable=SC2086 # the words of the line
		set -- $line
		shift
		cmd="" sub="" opts="" known=$global skip=0
		for w in "$@"; do
			if [ "$skip" = 1 ]; then skip=0; continue; fi
			case $w in
			-- | '#'* | '|'* | '&&' | '>'* | '<'*) break ;;
			--*=*) opts="$opts ${w%%=*}" ;;
			--*) opts="$opts $w"
			     printf '%s\n' "$known" | grep -qx -- "$w=" && skip=1 ;;
			-*) ;;
			*) if [ -z "$cmd" ]; then
				cmd=$w
				printf '%s\n' "$commands" | grep -qx -- "$cmd" || { printf ' %s:%s?' "$label" "$cmd"; cmd=""; break; }
			   elif [ -z "$sub" ] && "$GRIDGPU" __complete subcommands "$cmd" | grep -qx -- "$w"; then
				sub=$w
			   else
				continue
			   fi
			   # shellcheck disable=SC2086 # no sub-command: no word
			   known=$("$GRIDGPU" __complete options "$cmd" $sub 2>/dev/null) ;;
			esac
		done
		[ -n "$cmd" ] || continue
		for o in $opts; do
			printf '%s\n' "$known" | sed 's/=$//' | grep -qx -- "$o" ||
				printf ' %s:%s:%s' "$label" "$cmd${sub:+ $sub}" "$o"
		done
	done
}
bad=""
for f in "$man"/*.1; do
	sed -n '/^\.SH EXAMPLES/,/^\.SH SEE/p' "$f" | sed 's/\\-/-/g; s/\\e$//' | grep '^ *gridgpu ' >"$T_TMP/ex"
	label=$(basename "$f")
	bad="$bad$(bad_words <"$T_TMP/ex")"
done
expect_eq "every option in the EXAMPLES exists for its command" "${bad:-none}" none
# ---- the documents for three readers (issue 48) ----------------------------
# The physicist's README stays short; the site's, the contributor's and the
# benchmarks' documents exist.
n=$(wc -l <"$top/README.md")
[ "$n" -lt 250 ] && ok "README.md is under 250 lines ($n)" || not_ok "README.md is under 250 lines ($n)"
# What README's command blocks run from the checkout (./PROGRAM) is there in a
# fresh clone, a file git tracks: a fresh clone has no ./configure (issue 53).
missing=$(awk '/^```/ { f = !f; next } f' "$top/README.md" | sed 's/#.*//' | tr ';&|' '\n\n\n' |
	sed -n 's|^ *\./\([^ ]*\).*|\1|p' | while read -r prog; do
		git -C "$top" ls-files --error-unmatch "$prog" >/dev/null 2>&1 || echo "./$prog"
	done)
expect_eq "README's commands run nothing a fresh clone lacks" "${missing:-none}" none
docs="$top/README.md $top/doc/install.md $top/doc/site-admin.md $top/doc/architecture.md $top/bench/README.md"
for d in $docs; do
	[ -s "$d" ] && ok "${d#"$top"/} exists" || not_ok "${d#"$top"/} exists"
done

# The include graph of doc/architecture.md: the command shown under its
# docs:include-graph marker runs from the top of the tree and prints
# "from -> to" edges, among them the ones every build has, and none going up
# (into cli, or from core into another module of lib/).
awk '/^<!-- docs:include-graph -->/ { s = 1; next } s && /^```/ { if (++f == 2) exit; next } s && f == 1' \
	"$top/doc/architecture.md" >"$T_TMP/graph.sh"
(cd "$top" && sh "$T_TMP/graph.sh") >"$T_TMP/graph" 2>"$T_TMP/graph.err"
edges=$(grep -cE '^[a-z]+ -> [a-z]+$' "$T_TMP/graph")
others=$(grep -cvE '^[a-z]+ -> [a-z]+$' "$T_TMP/graph")
[ -s "$T_TMP/graph.sh" ] && [ ! -s "$T_TMP/graph.err" ] && [ "$edges" -ge 10 ] && [ "$others" = 0 ] &&
	ok "architecture.md's include-graph command runs and prints $edges edges" ||
	not_ok "architecture.md's include-graph command runs and prints edges (got $edges, $others other lines: $(head -3 "$T_TMP/graph.err"))"
for e in "cli -> gridgpu" "engine -> ce" "engine -> node" "node -> store" "ce -> http" "cred -> core"; do
	grep -qx -- "$e" "$T_TMP/graph" && ok "the include graph has $e" || not_ok "the include graph has $e"
done
# Up: into cli; from core into another module of lib/; from the store into the
# node or the engine, from the node into the engine, from any module into the
# doctor (the top).
up=$(grep -E -e '-> cli$' -e '^core -> (ce|cred|voms|http|ssh|gpu|image|store|node|engine|doctor)$' \
	-e '^store -> (node|engine)$' -e '^node -> engine$' -e '^[a-z]+ -> doctor$' "$T_TMP/graph" |
	grep -v '^gridgpu -> doctor$' | tr '\n' ';')
expect_eq "no include goes up the layers" "${up:-none}" none
# The command is a client of the public API (issue 48): it includes nothing of lib/.
inside=$(grep -E '^cli -> ' "$T_TMP/graph" | grep -vx 'cli -> gridgpu' | tr '\n' ';')
expect_eq "cli/ includes only include/gridgpu/" "${inside:-none}" none

# Every gridgpu command line the documents show (in their code blocks, lines
# joined at a trailing backslash) names a command gridgpu has and only options
# that command has; every `gridgpu WORD` in their text names a command.
bad=""
for d in $docs; do
	label=${d#"$top"/}
	awk '/^ *```/ { s = !s; next } s' "$d" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
		sed -n 's/^ *\(gridgpu .*\)/\1/p; s/.*|| *\(gridgpu .*\)/\1/p' >"$T_TMP/doclines"
	bad="$bad$(bad_words <"$T_TMP/doclines")"
	for c in $(grep -o '`gridgpu [a-z][a-z-]*' "$d" | sed 's/.* //' | sort -u); do
		printf '%s\n' "$commands" | grep -qx -- "$c" || bad="$bad $label:$c?"
	done
done
expect_eq "every gridgpu command and option the documents show exists" "${bad:-none}" none

# Every make target the documents name (`make TARGET ...` in their text, make
# TARGET in their code blocks) is a target of the Makefile.
bad=""
for d in $docs; do
	for t in $( (grep -o '`[^`]*`' "$d"; awk '/^ *```/ { s = !s; next } s' "$d") |
		grep -oE '(^|[^a-z-])make [a-z][a-z0-9-]*' | sed 's/.*make //' | sort -u); do
		grep -qE "^$t:" "$top/Makefile" || bad="$bad ${d#"$top"/}:$t"
	done
done
expect_eq "every make target the documents name exists" "${bad:-none}" none

# Every bench/bench-*.sh is in bench/README.md, and every file or anchor the
# documents link to is there (an anchor: a heading's GitHub slug).
bad=""
for b in "$top"/bench/bench-*.sh; do
	grep -qF "$(basename "$b")" "$top/bench/README.md" || bad="$bad $(basename "$b")"
done
expect_eq "bench/README.md names every benchmark" "${bad:-none}" none
bad=$(/usr/bin/python3 - "$top" $docs <<'PY'
import os, re, sys
top = sys.argv[1]
def slugs(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+ (.*)", line)
        if m:
            s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(s)
    return out
bad = []
for doc in sys.argv[2:]:
    text = open(doc, encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(dest) or (anchor and anchor not in slugs(dest)):
            bad.append(os.path.relpath(doc, top) + ":" + target)
print(" ".join(bad))
PY
)
expect_eq "every link and anchor in the documents resolves" "${bad:-none}" none
done_testing
