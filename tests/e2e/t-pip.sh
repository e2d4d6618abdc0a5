#!/bin/sh
# pip in a session, then as batch work (issue 46, item 5): a session made from an
# image with Python 3 and pip (tests/e2e/mkpyroot.sh: this machine's Debian
# python3.11 and python3-pip) and a wheel the test writes itself (mkwheel.py,
# offline), carried in the image at /opt/wheels.
# (a) `pip install --user` of it in the session puts it in Python's user site, in
#     the site's home, outside the sandbox: freeze --session names the user site on
#     one line, the image holds no ggprobe, --strict exits 2 and writes nothing.
# (b) uninstalled from there and installed without --user, it is in the sandbox
#     (/usr/local): freeze --session reports nothing for it, the image holds it, and
#     a batch job of that image imports it from the image, not from $HOME (where
#     Python's user site comes first on sys.path: a copy left there would win).
# gridgpu check (item 4) on both images: ggprobe from the site's home is a difference
# (exit 6, and submit --check sends nothing); from the sandbox, the same (exit 0).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T_TMP" || exit 1
# no_leftovers NAME: neither NAME nor NAME.* exists here
no_leftovers() { for f in "$1"*; do [ -e "$f" ] && return 1; done; return 0; }
# sif_list SIF: the paths in the image's squashfs partition, one a line
sif_list() {
	_off=$(grep -obUa hsqs "$1" | head -n 1 | cut -d: -f1)
	unsquashfs -l -o "$_off" "$1" 2>/dev/null | sed 's|^squashfs-root||'
}
ms() { echo $(($(date +%s%N) / 1000000)); }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile (bwrap)" "$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" \
	--jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--worker-address 127.0.0.1 --runtime bwrap

# the image: Python, pip, and the wheel
if ! sh "$top/tests/e2e/mkpyroot.sh" rootfs >mkpyroot.log 2>&1; then
	not_ok "a root file system with Python and pip: $(tail -n 3 mkpyroot.log)"
	done_testing
	exit 1
fi
mkdir -p rootfs/opt/wheels
WHL=/opt/wheels/$(basename "$(/usr/bin/python3 "$top/tests/e2e/mkwheel.py" ggprobe 1.0 rootfs/opt/wheels)")
/usr/bin/python3 "$top/tests/e2e/mkdocker.py" rootfs py.tar
echo "# the image: $(du -sk rootfs | cut -f1) KiB unpacked, $(($(wc -c <py.tar) / 1024)) KiB as a docker-archive"
# what a pip of the session runs: offline, nothing cached in the site's home
PIP="python3 -m pip --no-cache-dir --disable-pip-version-check"
IMPORT="python3 -c 'import ggprobe; print(ggprobe.__file__)'"
SB_SITE=/usr/local/lib/python3.11/dist-packages

# pip_user_session NAME: a session NAME of the image (py.tar) with ggprobe
# installed by `pip install --user` (in the site's home; $PIP, $WHL and $IMPORT
# above); sets PIP_SESSION (its name), PIP_HOME (its $HOME), PIP_USER_SITE (where
# ggprobe is) and PIP_RC (0 when all went well). For `gridgpu check IMAGE --session
# NAME --module ggprobe -- python3 -c ...` later: the image frozen from it is
# $PIP_USER_SIF (ggprobe missing); from the session of (b), $PIP_SB_SIF (ggprobe in
# /usr/local).
pip_user_session() {
	PIP_SESSION=$1 PIP_RC=1
	run_gg request --name "$1" --image py.tar --walltime 30m
	expect_eq "request --image: a session with Python and pip" "$RC" 0
	[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; return 1; }
	run_gg connect "$1" -- 'printf %s "$HOME"'
	PIP_HOME=$OUT PIP_USER_SITE=$OUT/.local/lib/python3.11/site-packages
	[ -n "$PIP_HOME" ] && [ -d "$PIP_HOME" ] || { not_ok "the session's \$HOME: '$PIP_HOME'"; return 1; }
	had_local=$([ -e "$PIP_HOME/.local" ] && echo yes)
	run_gg connect "$1" -- "$PIP install --no-index --user $WHL && $IMPORT"
	expect_eq "pip install --user of the wheel in the session: imported from Python's user site" \
		"$RC $(printf '%s\n' "$OUT" | tail -n 1)" "0 $PIP_USER_SITE/ggprobe/__init__.py"
	[ "$RC" = 0 ] || { printf '%s\n' "$OUT" "$ERR" | tail -n 5 | sed 's/^/#   /'; return 1; }
	PIP_RC=0
}
# what the test put in the site's home (the job user's, kept for other tests)
restore() {
	[ -n "${PIP_USER_SITE:-}" ] || return 0
	rm -rf "$PIP_USER_SITE/ggprobe" "$PIP_USER_SITE"/ggprobe-*.dist-info
	[ -n "$had_local" ] || find "$PIP_HOME/.local" -depth -type d -empty -delete 2>/dev/null
	return 0
}
trap 'restore; t_cleanup' EXIT

# ---- (a) pip install --user: reported, not in the image, --strict refuses -------------
pip_user_session pp
[ "$PIP_RC" = 0 ] || { "$GRIDGPU" kill "$PIP_SESSION" >/dev/null 2>&1; done_testing; exit 1; }
PIP_USER_SIF=$T_TMP/user.sif
t0=$(ms)
run_gg freeze --session "$PIP_SESSION" -o "$PIP_USER_SIF"
t1=$(ms)
expect_eq "freeze --session after pip install --user: the image is made" "$RC" 0
echo "# freeze --session: $((t1 - t0)) ms, the image $(($(wc -c <"$PIP_USER_SIF" 2>/dev/null || echo 0) / 1024)) KiB"
n=$(printf '%s\n' "$ERR" | grep -cF "Python's user site $PIP_USER_SITE (pip install --user) is outside the sandbox: install without --user in the session, or take it in with --include $PIP_USER_SITE")
expect_eq "... names Python's user site on one line, with what to do" "$n" 1
[ "$n" = 1 ] || printf '%s\n' "$ERR" | sed 's/^/#   /'
sif_list "$PIP_USER_SIF" >user.list
grep -q "^/usr/bin/python3.11$" user.list && ! grep -q ggprobe-1.0.dist-info user.list &&
	ok "... and the image has Python but not ggprobe" ||
	not_ok "the image: python $(grep -c '^/usr/bin/python3.11$' user.list), ggprobe: $(grep ggprobe user.list | head -n 3)"
expect_fail "freeze --session --strict: the user site is an error" 2 \
	"the image will not carry (--strict): nothing frozen" freeze --session "$PIP_SESSION" --strict -o strict.sif
no_leftovers strict.sif && ok "--strict: no image, no temp file" || not_ok "--strict left $(echo strict.sif*)"
# gridgpu check: the image's run finds ggprobe only in the site's home
run_gg check "$PIP_USER_SIF" --session "$PIP_SESSION" --module ggprobe -- python3 -c 'import ggprobe'
expect_eq "check --module ggprobe of that image: a difference (exit 6)" "$RC" 6
printf '%s\n' "$OUT" | grep -qxF "  module ggprobe: from $PIP_USER_SITE/ggprobe/__init__.py, under \$HOME: the site's home, not the image (another site will not have it): pip install it without --user in the session, or freeze with --include" &&
	ok "... says ggprobe comes from the site's home, with what to do" || not_ok "check said: $OUT $ERR"
expect_fail "submit --check of that image: nothing submitted (exit 6)" 6 "nothing submitted" \
	submit --check --module ggprobe --name pjx "$PIP_USER_SIF" -- python3 -c 'import ggprobe'
check "... no record" test ! -e "$XDG_STATE_HOME/gridgpu/records/pjx.json"

# ---- (b) pip install into the sandbox: nothing reported, the batch job imports it ----
run_gg connect "$PIP_SESSION" -- "$PIP uninstall -y ggprobe && $PIP install --no-index $WHL && $IMPORT"
expect_eq "pip install of the wheel without --user: imported from the sandbox" \
	"$RC $(printf '%s\n' "$OUT" | tail -n 1)" "0 $SB_SITE/ggprobe/__init__.py"
[ "$RC" = 0 ] || printf '%s\n' "$OUT" "$ERR" | tail -n 5 | sed 's/^/#   /'
PIP_SB_SIF=$T_TMP/sb.sif
run_gg freeze --session "$PIP_SESSION" -o "$PIP_SB_SIF"
expect_eq "freeze --session after pip install into the sandbox" "$RC" 0
# the site's home is the job user's of every test site on this machine: a test beside
# this one (t-freeze-report) may have its own files in the user site meanwhile
left=$(ls -A "$PIP_USER_SITE" 2>/dev/null)
if printf '%s\n' "$left" | grep -q '^ggprobe'; then
	not_ok "... pip uninstall left ggprobe in the user site: $(printf '%s' "$left" | tr '\n' ' ')"
elif printf '%s\n' "$ERR" | grep -q -e ggprobe -e "user site" && [ -z "$left" ]; then
	not_ok "... still reported: $ERR"
else
	ok "... nothing reported for it"
fi
sif_list "$PIP_SB_SIF" | grep -qx "$SB_SITE/ggprobe/__init__.py" && ok "... and the image holds it in /usr/local" ||
	not_ok "ggprobe is not in the image: $(sif_list "$PIP_SB_SIF" | grep ggprobe | head -n 3)"
run_gg check "$PIP_SB_SIF" --session "$PIP_SESSION" --module ggprobe -- python3 -c 'import ggprobe'
expect_eq "check --module ggprobe of the image with it in the sandbox: the same (exit 0)" "$RC:$OUT" \
	"0:the image runs it as the session $PIP_SESSION does (exit 0)"
[ "$RC" = 0 ] || printf '%s\n' "$ERR" | sed 's/^/#   /'

# the batch job: the session ends first (its slot), the empty user site stays in $HOME
"$GRIDGPU" kill "$PIP_SESSION" >/dev/null 2>&1
run_gg submit "$PIP_SB_SIF" --name pj --walltime 30m -- python3 -c 'import ggprobe; print(ggprobe.__file__)'
expect_eq "submit the frozen image with python3 -c 'import ggprobe'" "$RC" 0
run_gg get --wait --timeout 3m pj
J_OUT=$(cat pj/gridgpu-job.out 2>&1)
if [ "$J_OUT" = "$SB_SITE/ggprobe/__init__.py" ]; then
	ok "the batch job imports ggprobe from the image"
else
	not_ok "the batch job's import: '$J_OUT' (get: $RC $ERR)"
	sed 's/^/#   err: /' pj/gridgpu-job.err 2>/dev/null | tail -n 5
fi
restore
done_testing
