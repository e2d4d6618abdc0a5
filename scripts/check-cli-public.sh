#!/bin/sh
# check-cli-public.sh BIN: the command as a client of its own library
# (make cli-public-check). It holds when
#  - every gg_ function BIN takes from libgridgpu.so is declared GG_API in
#    include/gridgpu/*.h (cli/ is compiled with -Iinclude alone, so a call to
#    an internal function would not compile; this also catches a declaration
#    copied into cli/),
#  - BIN has no static copy of the library (it defines no gg_ function),
#  - each cli/cmd-*.c is under 300 lines (parse, one call, print), and
#  - no file of cli/ runs a subprocess (connect execs ssh: it replaces itself).
# Exit 1, saying which, when one does not.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
grep -h '^GG_API' "$top"/include/gridgpu/*.h | grep -o '\bgg_[A-Za-z0-9_]*(' |
	sed 's/($//' | sort -u >"$tmp/declared"
nm -D --undefined-only "$bin" | awk '{ print $NF }' | sed 's/@.*//' | grep '^gg_' |
	sort -u >"$tmp/used" || true
internal=$(comm -23 "$tmp/used" "$tmp/declared")
if [ -n "$internal" ]; then
	echo "check-cli-public: $bin calls what include/gridgpu/ does not declare:" $internal >&2
	rc=1
fi
[ -s "$tmp/used" ] || { echo "check-cli-public: $bin takes nothing from libgridgpu.so" >&2; rc=1; }
copy=$(nm --defined-only "$bin" | awk '$2 ~ /^[TtDdBbRr]$/ && $3 ~ /^gg_/ { print $3 }' | head -5)
if [ -n "$copy" ]; then
	echo "check-cli-public: $bin has a static copy of the library:" $copy >&2
	rc=1
fi
for f in "$top"/cli/cmd-*.c; do
	n=$(wc -l <"$f")
	if [ "$n" -ge 300 ]; then
		echo "check-cli-public: cli/${f##*/} has $n lines: a command parses, makes one library call and prints (under 300)" >&2
		rc=1
	fi
done
spawn=$(grep -nE '\b(fork|vfork|popen|system|posix_spawnp?|execv|execvpe|execl|execlp)\(' \
	"$top"/cli/*.c || true)
if [ -n "$spawn" ]; then
	echo "check-cli-public: cli/ runs a subprocess itself (the library's runner does that):" >&2
	echo "$spawn" | sed "s|^$top/|  |" >&2
	rc=1
fi
[ $rc -eq 0 ] &&
	echo "check-cli-public: $(wc -l <"$tmp/used") library calls, all GG_API; no static copy; cli/cmd-*.c under 300 lines; no subprocess"
exit $rc
