#!/bin/sh
# scripts/deb-check.sh (make deb-check): the Debian packages, built, lintian-clean, and
# installed, upgraded and removed cleanly in a pristine root -- what piuparts checks,
# done by hand in fresh-check's cached Debian 12 root (tests/fresh/fresh-check).
#
# 1. dpkg-buildpackage -b of HEAD (git archive: uncommitted changes are not in it) in
#    build-deb/; lintian on the .changes: no error, no warning.
# 2. In a throw-away overlay over $GG_FRESH_DIR/base (a minbase debootstrap), in a
#    mount namespace of its own: the file list first; the three .debs installed with an
#    older version number (the same build repacked as VERSION~pre by dpkg-deb, to go
#    through dpkg's upgrade path); gridgpu runs; upgraded to the built ones; runs; then
#    purged with the dependencies apt installed for them: the file list is as before
#    (dpkg's and apt's own state and caches aside).
# --no-build: the .debs of the last run in build-deb/ (step 2 only).
# Exit 0 all passed; 1 a step failed; 2 the host cannot run it.
set -eu
build=1
[ "${1:-}" != --no-build ] || build=0
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${GG_FRESH_DIR:-/var/cache/gridgpu-fresh}
base=$dir/base
out=$top/build-deb
die() { echo "deb-check: $*" >&2; exit 2; }
say() { echo "deb-check: $*"; }
[ "$(id -u)" = 0 ] || die "needs root (the pristine root's overlay and chroot)"
for c in dpkg-buildpackage lintian unshare git; do
	command -v "$c" >/dev/null 2>&1 || die "$c is not installed: run 'make deps'"
done
[ -e "$base/.fresh-stamp" ] || die "no pristine root in $base: run 'make fresh-check' once (it builds it)"
now() { date +%s; }
t0=$(now)

# ---- 1. build and lintian ----------------------------------------------------------
if [ "$build" = 1 ]; then
	rm -rf "$out" && mkdir -p "$out/src"
	git -C "$top" archive --prefix=gridgpu/ HEAD | tar -x -C "$out/src"
	t=$(now)
	(cd "$out/src/gridgpu" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
		{ "$top/scripts/failed-lines.sh" "$out/build.log"; tail -30 "$out/build.log"; } >&2
		echo "deb-check: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
		exit 1
	}
	mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out/"
	say "built in $(($(now) - t)) s: $(cd "$out" && echo ./*.deb)"
	t=$(now)
	if ! lintian --fail-on error,warning --info "$out"/*.changes >"$out/lintian.log" 2>&1; then
		cat "$out/lintian.log" >&2
		echo "deb-check: lintian: FAILED" >&2
		exit 1
fi
say "lintian: no error, no warning ($(grep -c '^[IP]:' "$out/lintian.log" || true) notes) in $(($(now) - t)) s"
fi

# ---- 2. install, upgrade, remove in the pristine root -----------------------------
ver=$(dpkg-deb -f "$(ls "$out"/gridgpu_*.deb)" Version)
rm -rf "$out/new" "$out/old" && mkdir -p "$out/new" "$out/old"
for p in gridgpu libgridgpu0 libgridgpu-dev; do cp "$out/${p}_"*.deb "$out/new/"; done
for d in "$out"/new/*.deb; do # the same build, an older version
	x=$(mktemp -d)
	dpkg-deb -R "$d" "$x"
	sed -i "s/^Version: .*/Version: ${ver}~pre/; s/(= ${ver})/(= ${ver}~pre)/g" "$x/DEBIAN/control"
	dpkg-deb -b "$x" "$out/old/" >/dev/null
	rm -rf "$x"
done
work=$(mktemp -d "$dir/deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper" "$work/ovl" "$work/root" "$dir/apt-archives/partial"
cp /etc/resolv.conf "$work/resolv.conf"
cat >"$out/inside.sh" <<'IN'
set -eu
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
files() { # what is on the root, less dpkg's and apt's own state, caches and logs, and
	# the backups of the account files (as piuparts leaves them out)
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
		-o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
		-o -path /debs -o -path /root -o -path '/etc/*-' \) -prune -o -print | sort
}
pkgs() { dpkg-query -W -f='${db:Status-Status} ${Package}\n' | awk '$1 == "installed" {print $2}' | sort; }
step() { echo "deb-check: $*"; }
apt-get update -qq >/dev/null
files >/tmp/before
pkgs >/tmp/pkgs-before
apt-get install -y -q --no-install-recommends /debs/old/*.deb >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }
v=$(dpkg-query -W -f='${Version}' gridgpu)
gridgpu --version | head -1 | grep -q '^gridgpu ' || { echo "deb-check: gridgpu $v does not run"; exit 1; }
[ -x /usr/libexec/gridgpu/session-launcher ] || { echo "deb-check: no /usr/libexec/gridgpu/session-launcher"; exit 1; }
step "installed $v ($(dpkg -L gridgpu libgridgpu0 libgridgpu-dev | wc -l) paths), gridgpu runs"
apt-get install -y -q --no-install-recommends /debs/new/*.deb >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }
v2=$(dpkg-query -W -f='${Version}\n' gridgpu libgridgpu0 libgridgpu-dev | sort -u)
[ "$v2" != "$v" ] && [ "$(echo "$v2" | wc -l)" = 1 ] || { echo "deb-check: upgrade left versions $v2"; exit 1; }
gridgpu --version | head -1 | grep -q '^gridgpu ' || { echo "deb-check: gridgpu $v2 does not run"; exit 1; }
pkg-config --modversion gridgpu >/dev/null 2>&1 || [ -e /usr/lib/*/pkgconfig/gridgpu.pc ] || { echo "deb-check: no gridgpu.pc"; exit 1; }
step "upgraded $v -> $v2, gridgpu runs"
apt-get purge -y -q gridgpu libgridgpu0 libgridgpu-dev >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }
# and what apt installed for them (as piuparts does: autoremove keeps what the base
# root's packages recommend, such as git's openssh-client)
deps=$(pkgs | comm -13 /tmp/pkgs-before -)
# shellcheck disable=SC2086 # package names
[ -z "$deps" ] || apt-get purge -y -q $deps >>/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }
left=$(dpkg -l | awk '/^[a-z][a-z] +(gridgpu|libgridgpu)/ {print $2}')
[ -z "$left" ] || { echo "deb-check: still known to dpkg: $left"; exit 1; }
files >/tmp/after
if ! cmp -s /tmp/before /tmp/after; then
	echo "deb-check: the root differs from before the install:"
	diff /tmp/before /tmp/after | head -30
	exit 1
fi
step "purged, and $(echo $deps | wc -w) packages apt installed for it: the root is as before ($(wc -l </tmp/before) paths compared)"
IN
t=$(now)
# shellcheck disable=SC2016 # expanded by that shell
unshare --mount --fork --propagation private sh -c '
	set -e
	w=$1 base=$2 debs=$3 aptc=$4
	R=$w/root
	mount -t overlay overlay -o "lowerdir=$base,upperdir=$w/upper,workdir=$w/ovl" "$R"
	mount -t proc proc "$R/proc"
	mount --rbind /dev "$R/dev"
	mount -t tmpfs tmpfs "$R/tmp"
	mount -t tmpfs tmpfs "$R/run"
	mkdir -p "$R/debs"
	mount --bind "$debs" "$R/debs"
	mount --bind "$aptc" "$R/var/cache/apt/archives"
	cp "$w/resolv.conf" "$R/etc/resolv.conf"
	exec chroot "$R" /usr/bin/env -i HOME=/root sh /debs/inside.sh
' sh "$work" "$base" "$out" "$dir/apt-archives" && rc=0 || rc=$?
[ "$rc" = 0 ] || { echo "deb-check: install/upgrade/remove FAILED in the pristine root" >&2; exit 1; }
say "install, upgrade, purge in a pristine Debian 12 root: $(($(now) - t)) s; all $(($(now) - t0)) s"
