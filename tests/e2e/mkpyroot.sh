#!/bin/sh
# mkpyroot.sh DIR [PROG...]: mkrootfs.sh's root file system with Python 3 and pip
# added, for images in which the tests install Python packages: this machine's
# Debian python3.11 (/usr/bin/python3.11, never a python of PATH such as pyenv's)
# with its standard library and python3-pip, and the libraries they load.
# Pruned to stay small and quick to freeze: no byte code (__pycache__: Python
# writes it in the sandbox when it runs), no test suite, static library, idle,
# tkinter, lib2to3, ensurepip or documentation, and none of the extension modules
# that need libraries the tests never use (ssl, OpenSSL hashes, sqlite, curses, dbm, readline).
# No EXTERNALLY-MANAGED marker: pip installs in the image's /usr/local as a user
# would in a container of their own.
set -eu
root=$1
here=$(dirname "$0")
py=/usr/bin/python3.11
lib=/usr/lib/python3.11
pip=/usr/lib/python3/dist-packages
[ -x "$py" ] && [ -d "$lib" ] && [ -d "$pip/pip" ] || {
	echo "mkpyroot.sh: needs Debian's python3.11 and python3-pip (scripts/deps.sh installs them)" >&2
	exit 1
}
sh "$here/mkrootfs.sh" "$@"
mkdir -p "$root/usr/bin" "$root/usr/lib" "$root$pip" "$root/usr/local/lib/python3.11/dist-packages" \
	"$root/usr/local/bin"
cp "$py" "$root/usr/bin/python3.11"
ln -sf python3.11 "$root/usr/bin/python3"
ln -sf /usr/bin/python3.11 "$root/bin/python3"
# the standard library, and pip with what it vendors
tar -C /usr/lib -cf - --exclude=__pycache__ --exclude=EXTERNALLY-MANAGED --exclude=sitecustomize.py \
	--exclude='python3.11/test' --exclude='python3.11/config-*' --exclude='python3.11/idlelib' \
	--exclude='python3.11/tkinter' --exclude='python3.11/turtledemo' --exclude='python3.11/lib2to3' \
	--exclude='python3.11/ensurepip' --exclude='python3.11/pydoc_data' python3.11 |
	tar -C "$root/usr/lib" -xf -
for m in "$root$lib"/lib-dynload/*.so; do
	case $(basename "$m" | sed 's/\.cpython-.*//') in
	_ssl | _hashlib | _sqlite3 | _curses | _curses_panel | _dbm | readline | _test* | _ctypes_test | _xx* | \
		xxlimited* | nis | ossaudiodev | audioop | _crypt) rm -f "$m" ;;
	esac
done
(cd "$pip" && tar -cf - --exclude=__pycache__ pip pip-*.dist-info) | tar -C "$root$pip" -xf -
# the libraries python and the extension modules kept load
for f in "$py" "$root$lib"/lib-dynload/*.so; do
	ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
done | sort -u | while read -r l; do
	mkdir -p "$root$(dirname "$l")"
	cp -n "$(readlink -f "$l")" "$root$l"
done
