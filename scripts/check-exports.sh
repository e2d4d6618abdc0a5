#!/bin/sh
# check-exports.sh SO: the shared library exports exactly the functions that
# include/gridgpu/*.h declares GG_API, nothing more (an internal function) and
# nothing less (a public one left out or never defined). Exit 1 otherwise.
set -eu
so=${1:?usage: check-exports.sh libgridgpu.so.0}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -h '^GG_API' "$top"/include/gridgpu/*.h | grep -o '\bgg_[A-Za-z0-9_]*(' |
	sed 's/($//' | sort -u >"$tmp/declared"
# a function declared in a public header without the mark
unmarked=$(grep -n '^[A-Za-z_].*\bgg_[A-Za-z0-9_]*(' "$top"/include/gridgpu/*.h |
	grep -v ':\(GG_API\|typedef\|#\)' || true)
nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u >"$tmp/exported"
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
rc=0
if [ -n "$unmarked" ]; then
	echo "check-exports: functions declared in include/gridgpu/ without GG_API:" >&2
	echo "$unmarked" | sed 's/^/  /' >&2
	rc=1
fi
if [ -n "$extra" ]; then
	echo "check-exports: $so exports what include/gridgpu/ does not declare:" >&2
	echo "$extra" | sed 's/^/  /' >&2
	rc=1
fi
if [ -n "$missing" ]; then
	echo "check-exports: declared GG_API in include/gridgpu/ but not exported by $so:" >&2
	echo "$missing" | sed 's/^/  /' >&2
	rc=1
fi
[ $rc -eq 0 ] && echo "check-exports: $so exports the $(wc -l <"$tmp/declared") functions of include/gridgpu/, nothing else"
exit $rc
