#!/bin/sh
# abi-check.sh dump SO OUT   write the ABI of SO (its exported functions and the
#                            types of include/gridgpu/ they reach) to OUT
# abi-check.sh check SO BASE compare SO with the dump BASE (abi/README): exit 1
#                            when a function was removed or changed or a public
#                            type it reaches changed (size, members, offsets);
#                            functions added are listed and allowed
# Uses libabigail (Debian: abigail-tools). SO must have debug info (-g).
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
	rc=0
	abidiff --no-added-syms --no-show-locs "$base" "$tmp/current.abi" >"$tmp/diff" || rc=$?
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
