#!/bin/sh
# scripts/check-darwin-link.sh (make portable-check): the Makefile's link on macOS,
# checked without a Mac. `make -n` with configure's GG_OS=Darwin (its value there;
# nothing is built, installed or configured) must link a Mach-O .dylib named @rpath/libgridgpu.0.dylib with
# its libgridgpu.dylib beside it, give the command the rpath @loader_path/../lib, and
# install the .dylib with a gridgpu.pc whose Libs set that rpath; and
# use none of GNU ld's flags (-soname, --no-undefined, $ORIGIN) nor the ELF names. Whether Apple's ld takes it needs a Mac.
# Exit 0: as expected; 1: each line missing or unexpected listed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=build-darwin-dry
# configure's output as on a Mac, of its own: make -n still remakes an included
# config.mk that is out of date (running configure), and this one has no rule
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/config.mk" <<'MK'
VERSION = 0.1.0
prefix = /usr/local
exec_prefix = ${prefix}
bindir = ${exec_prefix}/bin
libdir = ${exec_prefix}/lib
libexecdir = ${exec_prefix}/libexec
includedir = ${prefix}/include
datarootdir = ${prefix}/share
mandir = ${datarootdir}/man
GG_OS = Darwin
CC = cc
MK
cmds=$(make -C "$top" -n --no-print-directory CONFIG_MK="$tmp/config.mk" B=$b \
	$b/bin/gridgpu install DESTDIR=/nonexistent 2>&1) || {
	echo "check-darwin-link: make -n with GG_OS=Darwin failed:" >&2
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
want "s|@PC_RPATH@|-Wl,-rpath,\${libdir}|"
bad=$(printf '%s\n' "$cmds" | grep -nE -- '-soname|--no-undefined|ORIGIN|libgridgpu\.so' || true)
if [ -n "$bad" ]; then
	echo "check-darwin-link: GNU ld's flags or ELF names in the Darwin build:" >&2
	echo "$bad" | cut -c1-160 | sed 's/^/  /' >&2
	rc=1
fi
[ "$rc" != 0 ] || echo "check-darwin-link: GG_OS=Darwin links libgridgpu.0.dylib (@rpath), the command with @loader_path/../lib, installs it"
exit "$rc"
