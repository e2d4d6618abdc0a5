#!/bin/sh
# Install the Debian packages gridgpu's build, tests, demo and benchmarks need.
#   scripts/deps.sh          install what is missing (as root), print what it installs
#   scripts/deps.sh --check  exit 0 when everything is there, 1 (listing what is missing) otherwise
#   scripts/deps.sh --packaging [--check]  the same for what make deb-check and rpm-check need
#   scripts/deps.sh --client [--check]     the same for the client's build and unit tests
set -eu

# build
PKGS="gcc make autoconf automake pkgconf libssl-dev libcurl4-openssl-dev libjansson-dev
libarchive-dev libssh2-1-dev libinih-dev libcmocka-dev libsquashfs-dev libdeflate-dev"
# tests and the local test site
PKGS="$PKGS clang clang-format libclang-rt-14-dev openssl curl openssh-client openssh-server socat iproute2
procps zsh bash-completion man-db python3 python3-cryptography python3-jsonschema python3-pip nordugrid-arc-arex nordugrid-arc-client
nordugrid-arc-plugins-arcrest nordugrid-arc-plugins-needed voms-clients globus-proxy-utils
valgrind squashfs-tools squashfs-tools-ng siftool bubblewrap shellcheck posh gdb strace abigail-tools
slurmctld slurmd slurm-client munge util-linux
voms-server voms-mysql-plugin mariadb-server mariadb-client
oidc-agent-cli liboidc-agent4 faketime libpam-oath oathtool
xrootd-server xrootd-server-plugins xrootd-plugins xrootd-client nordugrid-arc-plugins-xrootd
nordugrid-arc-plugins-gfal gfal2 gfal2-plugin-http gfal2-plugin-xrootd davix"
# benchmarks
PKGS="$PKGS hyperfine time debootstrap zstd zlib1g-dev"

# make deb-check and rpm-check (scripts/deps.sh --packaging [--check]): these only
if [ "${1:-}" = --packaging ]; then
	PKGS="dpkg-dev debhelper lintian rpm"
	shift
fi
# the client alone, its build and unit tests (scripts/deps.sh --client [--check]): what
# tests/fresh/client-check installs in a Debian 13 root (no test site there)
if [ "${1:-}" = --client ]; then
	PKGS="gcc make autoconf automake pkgconf libssl-dev libcurl4-openssl-dev libjansson-dev
libarchive-dev libssh2-1-dev libinih-dev libcmocka-dev libsquashfs-dev libdeflate-dev
openssl openssh-client openssh-server python3 squashfs-tools procps valgrind dash posh shellcheck
faketime"
	shift
fi

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done

if [ "${1:-}" = --check ]; then
	[ -z "$missing" ] && exit 0
	echo "deps: missing:$missing" >&2
	exit 1
fi

if [ -z "$missing" ]; then
	echo "deps: all $(echo $PKGS | wc -w) packages are installed"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing:$missing" >&2
	echo "deps: run 'make deps' as root (it uses apt-get) or install them yourself" >&2
	exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
