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
	[ -f "$page" ] || page=$(grep -l "^gridgpu.*gridgpu\\\\-$cmd[ ,]" "$man"/*.1 | head -1)
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
done
done_testing
