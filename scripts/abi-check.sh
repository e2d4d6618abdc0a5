#!/bin/sh
# abi-check.sh dump SO OUT   write the ABI of SO (its exported functions and the
#                            types of include/gridgpu/ they reach) to OUT
# abi-check.sh check SO BASE compare SO with the dump BASE (abi/README): exit 1
#                            when a function was removed or changed or a public
#                            type it reaches changed (size, members, offsets);
#                            functions added are listed and allowed
# Uses libabigail (Debian: abigail-tools) and python3. SO must have debug info
# (-g). A struct named in abi/grow-at-end carries its own size (a callbacks
# struct the caller fills): members may be added at its end, and nothing else
# about it may change.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
so=${2:-}
if [ -z "$so" ] || [ -z "${3:-}" ]; then
	echo "usage: abi-check.sh dump SO OUT | check SO BASE" >&2
	exit 2
fi
for t in abidw abidiff readelf; do
	command -v "$t" >/dev/null 2>&1 || {
		echo "abi-check: $t is not installed: run 'make deps' (Debian: abigail-tools, binutils)" >&2
		exit 1
	}
done
readelf -S "$so" | grep -q '\.debug_info' || {
	echo "abi-check: $so has no debug information: build it with -g (CFLAGS)" >&2
	exit 1
}

# Only what a program compiled against include/gridgpu/ can see: types defined
# elsewhere (lib/'s own structs behind an opaque handle) are dropped, so that
# changing them is no ABI change.
dump() {
	abidw --headers-dir "$top/include/gridgpu" --drop-private-types --exported-interfaces-only \
		--no-show-locs --no-corpus-path --no-comp-dir-path --no-elf-needed \
		--type-id-style hash --out-file "$2" "$1"
}

# abidiff's suppression of the grow-at-end structs (it hides any change of
# theirs: members_kept checks them instead).
suppressions() {
	grep -v '^#' "$top/abi/grow-at-end" | while read -r t; do
		[ -n "$t" ] && printf '[suppress_type]\n  type_kind = struct\n  name = %s\n  has_data_member_inserted_at = end\n' "$t"
	done
}

# Each grow-at-end struct of BASE has the same members at the same offsets, of
# the same types, at the start of CURRENT's.
members_kept() {
	python3 - "$top/abi/grow-at-end" "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
names = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith('#')]
def members(path):
    out = {}
    for c in ET.parse(path).iter('class-decl'):
        if c.get('name') in names and c.get('is-declaration-only') != 'yes':
            out[c.get('name')] = [(m.get('layout-offset-in-bits'), v.get('name'), v.get('type-id'))
                                  for m in c.findall('data-member') for v in m.findall('var-decl')]
    return out
old, new = members(sys.argv[2]), members(sys.argv[3])
bad = 0
for n, was in old.items():
    now = new.get(n)
    if now is None:
        print(f"abi-check: struct {n} is gone")
        bad = 1
        continue
    for i, m in enumerate(was):
        if i >= len(now) or now[i] != m:
            got = f"'{now[i][1]}' at bit {now[i][0]}" if i < len(now) else "nothing"
            print(f"abi-check: struct {n}: member {i + 1} was '{m[1]}' at bit {m[0]}, now {got}"
                  + (" of another type" if i < len(now) and now[i][:2] == m[:2] else "")
                  + ": members may only be added at its end")
            bad = 1
            break
sys.exit(bad)
PY
}

case $mode in
dump)
	dump "$so" "$3"
	echo "abi-check: wrote $3 ($(grep -c '<elf-symbol' "$3") functions)"
	;;
check)
	base=$3
	[ -f "$base" ] || {
		echo "abi-check: no baseline $base: make one with 'make abi-dump' (abi/README)" >&2
		exit 1
	}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	dump "$so" "$tmp/current.abi"
	suppressions >"$tmp/supp"
	rc=0
	abidiff --no-added-syms --no-show-locs --suppressions "$tmp/supp" "$base" \
		"$tmp/current.abi" >"$tmp/diff" || rc=$?
	if [ $rc -eq 0 ] && ! members_kept "$base" "$tmp/current.abi" >"$tmp/diff"; then
		rc=4
	fi
	if [ $rc -ne 0 ]; then
		cat "$tmp/diff"
		if [ $((rc & 3)) -ne 0 ]; then
			echo "abi-check: abidiff failed (exit $rc)" >&2
		else
			echo "abi-check: FAILED: $so is not compatible with $base (above)." >&2
			echo "abi-check: keep what was public as it was and add to it (a new function, an" >&2
			echo "abi-check: opaque handle with setters); a deliberate break: see abi/README" >&2
		fi
		exit 1
	fi
	abidiff --added-fns --no-show-locs "$base" "$tmp/current.abi" >"$tmp/added" || true
	added=$(grep -c "^  \[A\] " "$tmp/added" || true)
	[ "$added" -eq 0 ] || grep "^  \[A\] " "$tmp/added"
	echo "abi-check: $so is compatible with $base ($added functions added)"
	;;
*)
	echo "usage: abi-check.sh dump SO OUT | check SO BASE" >&2
	exit 2
	;;
esac
