#!/bin/sh
# mkrootfs.sh DIR [PROG...]: a minimal root file system (sh, cat, ls, echo, id,
# hostname, and the PROGs given, with their libraries, copied from this machine)
# for images the tests freeze.
set -eu
root=$1
shift
mkdir -p "$root/bin" "$root/data" "$root/tmp" "$root/etc"
for prog in sh cat ls id hostname uname env "$@"; do
	p=$(command -v "$prog" 2>/dev/null) || continue
	case $p in /*) ;; *) p=$(PATH=/usr/bin:/bin which "$prog" 2>/dev/null) || continue ;; esac
	p=$(readlink -f "$p")
	cp "$p" "$root/bin/$prog"
	ldd "$p" 2>/dev/null | awk '/=>/ {print $3} /^\t\/lib/ {print $1}' | while read -r lib; do
		[ -f "$lib" ] || continue
		mkdir -p "$root$(dirname "$lib")"
		cp -n "$lib" "$root$lib"
	done
done
# the dynamic loader under its usual names
for ld in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do
	[ -e "$ld" ] || continue
	mkdir -p "$root$(dirname "$ld")"
	cp -n "$(readlink -f "$ld")" "$root$ld"
done
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
