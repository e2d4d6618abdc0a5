#!/bin/sh
# scripts/check-darwin-link.sh (make portable-check): the Makefile's link on macOS,
# checked without a Mac. `make -n GG_OS=Darwin` (configure's value there; nothing is
# built or installed) must link a Mach-O .dylib named @rpath/libgridgpu.0.dylib with
# its libgridgpu.dylib beside it, give the command the rpath @loader_path/../lib, and
# install the .dylib; and use none of GNU ld's flags (-soname, --no-undefined,
# $ORIGIN) nor the ELF names (libgridgpu.so). Whether Apple's ld takes it needs a Mac.
# Exit 0: as expected; 1: each line missing or unexpected listed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=build-darwin-dry
cmds=$(make -C "$top" -n --no-print-directory GG_OS=Darwin B=$b \
	$b/bin/gridgpu install DESTDIR=/nonexistent prefix=/usr/local 2>&1) || {
	echo "check-darwin-link: make -n GG_OS=Darwin failed:" >&2
	echo "$cmds" | tail -5 >&2
	exit 1
}
rc=0
want() { # a fixed string some command must contain
	printf '%s\n' "$cmds" | grep -qF -- "$1" || { echo "check-darwin-link: no command has: $1" >&2; rc=1; }
}
want "-dynamiclib -install_name @rpath/libgridgpu.0.dylib"
want "-o $b/lib/libgridgpu.0.dylib"
want "ln -sf libgridgpu.0.dylib $b/lib/libgridgpu.dylib"
want "-lgridgpu -Wl,-rpath,'@loader_path/../lib'"
want "install -m 0755 $b/lib/libgridgpu.0.dylib /nonexistent/usr/local/lib/libgridgpu.0.dylib"
bad=$(printf '%s\n' "$cmds" | grep -nE -- '-soname|--no-undefined|ORIGIN|libgridgpu\.so' || true)
if [ -n "$bad" ]; then
	echo "check-darwin-link: GNU ld's flags or ELF names in the Darwin build:" >&2
	echo "$bad" | cut -c1-160 | sed 's/^/  /' >&2
	rc=1
fi
[ "$rc" != 0 ] || echo "check-darwin-link: GG_OS=Darwin links libgridgpu.0.dylib (@rpath), the command with @loader_path/../lib, installs it"
exit "$rc"
