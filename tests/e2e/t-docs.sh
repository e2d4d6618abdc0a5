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
# gridgpu-json(7) is made from the JSON Schemas the tests validate --json against.
check "gridgpu-json(7) is what doc/json/*.schema.json give (scripts/json-man.py)" /usr/bin/python3 "$top/scripts/json-man.py" --check
bad=""
for s in "$top"/doc/json/*.schema.json; do
	/usr/bin/python3 -c 'import json,sys,jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))' "$s" 2>/dev/null || bad="$bad $(basename "$s")"
done
expect_eq "every doc/json schema is a valid JSON Schema" "${bad:-none}" none
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
global=$("$GRIDGPU" __complete global-options)
bad=""
for f in "$man"/*.1; do
	sed -n '/^\.SH EXAMPLES/,/^\.SH SEE/p' "$f" | sed 's/\\-/-/g; s/\\e$//' | grep '^ *gridgpu ' >"$T_TMP/ex"
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
				bad="$bad $(basename "$f"):$cmd${sub:+ $sub}:$o"
		done
	done <"$T_TMP/ex"
done
expect_eq "every option in the EXAMPLES exists for its command" "${bad:-none}" none
done_testing
