#!/bin/sh
# check-cli-public.sh CLI_OBJ...: the gg_ functions the objects of cli/ call
# that include/gridgpu/*.h does not declare GG_API, by file (make
# cli-public-check, which first compiles each cli/*.c with -Iinclude alone).
# Exit 1 when there is any.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -h '^GG_API' "$top"/include/gridgpu/*.h | grep -o '\bgg_[A-Za-z0-9_]*(' |
	sed 's/($//' | sort -u >"$tmp/declared"
rc=0
for o in "$@"; do
	nm -u "$o" | awk '{ print $NF }' | grep '^gg_' | sort -u >"$tmp/used" || true
	internal=$(comm -23 "$tmp/used" "$tmp/declared")
	if [ -n "$internal" ]; then
		f=${o##*/}
		echo "check-cli-public: cli/${f%.o}.c calls what include/gridgpu/ does not declare:" \
			$internal >&2
		rc=1
	fi
done
[ $rc -eq 0 ] && echo "check-cli-public: cli/ calls only functions include/gridgpu/ declares GG_API"
exit $rc
