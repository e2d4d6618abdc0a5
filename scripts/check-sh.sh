#!/bin/sh
# scripts/check-sh.sh BUILD: the scripts that run on the site's nodes stay POSIX sh.
# libexec/gridgpu/* (the launcher and the batch wrapper, run by the CE's job) and the
# gridgpu-enter script the library writes (BUILD/tests/enter_dump prints it, for each
# runtime) are parsed by dash and by posh (a shell with nothing beyond POSIX), and
# "shellcheck -s sh" finds no warning in them (its notes are left to the author).
# Exit 0: all pass; 1: each failure listed; 2: a tool is missing (make deps).
set -u
b=${1:-build}
cd "$(dirname "$0")/.." || exit 2
for t in dash posh shellcheck; do
	command -v "$t" >/dev/null 2>&1 || { echo "check-sh: $t is not installed: run 'make deps'" >&2; exit 2; }
done
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
files=""
for f in libexec/gridgpu/*; do files="$files $f"; done
for r in apptainer bwrap; do
	"$b/tests/enter_dump" "$r" >"$tmp/gridgpu-enter.$r" || { echo "check-sh: $b/tests/enter_dump $r failed" >&2; exit 1; }
	files="$files $tmp/gridgpu-enter.$r"
done
bad=0 n=0
for f in $files; do
	n=$((n + 1))
	name=${f#"$tmp"/}
	for sh in dash posh; do
		if ! out=$("$sh" -n "$f" 2>&1); then
			echo "check-sh: $name: $sh -n: $out" >&2
			bad=$((bad + 1))
		fi
	done
	if ! out=$(shellcheck -s sh -S warning "$f" 2>&1); then
		echo "check-sh: $name: shellcheck -s sh:" >&2
		echo "$out" >&2
		bad=$((bad + 1))
	fi
done
if [ "$bad" -gt 0 ]; then
	echo "check-sh: $bad failures in $n node scripts" >&2
	exit 1
fi
echo "check-sh: $n node scripts parse with dash and posh, shellcheck -s sh finds no warning"
