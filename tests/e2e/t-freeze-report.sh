#!/bin/sh
# freeze --session reports what the image will not carry (issue 46, item 3): a session
# in which the test plants each case in the site's home (outside the sandbox): Python's
# user site as `pip install --user` leaves it (the test image has no Python: the files
# are written in the session), a conda root, an export in ~/.bashrc, a PATH entry under
# $HOME from ~/.profile. Each is named on one line, nothing for a clean session;
# --strict exits 2 and writes nothing; --include PATH takes a reported path into the image.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T_TMP" || exit 1
py() { python3 -c "$@"; }
# no_leftovers NAME: neither NAME nor NAME.* exists here
no_leftovers() { for f in "$1"*; do [ -e "$f" ] && return 1; done; return 0; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile (bwrap)" "$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" \
	--jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" \
	--worker-address 127.0.0.1 --runtime bwrap
sh "$top/tests/e2e/mkrootfs.sh" rootfs bash mkdir tar rm >/dev/null 2>&1
python3 "$top/tests/e2e/mkdocker.py" rootfs fr.tar
run_gg request --name fr --image fr.tar --walltime 30m
expect_eq "request --image: a session with a sandbox" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
run_gg connect fr -- 'printf %s "$HOME"'
H=$OUT
[ -n "$H" ] && [ -d "$H" ] && ok "the session's \$HOME is the site's home ($H)" || not_ok "\$HOME: '$H'"

# the planted cases live in the job user's home, which is the site's: kept as they were
tag=gg46-$$
cp -p "$H/.bashrc" bashrc.orig 2>/dev/null; cp -p "$H/.profile" profile.orig 2>/dev/null
had_local=$([ -e "$H/.local" ] && echo yes)
restore() {
	rm -rf "$H/.local/lib/python3.11/site-packages/${tag}mod" "$H/.local/lib/python3.11/site-packages/${tag}mod-1.0.dist-info" \
		"$H/$tag-conda" "$H/$tag-tools"
	[ -n "$had_local" ] || find "$H/.local" -depth -type d -empty -delete 2>/dev/null
	[ -e bashrc.orig ] && cp -p bashrc.orig "$H/.bashrc"
	[ -e profile.orig ] && cp -p profile.orig "$H/.profile"
}
trap 'restore' EXIT

# a clean session: nothing said (nothing planted yet; the home's own start-up files set
# no variable with export)
run_gg freeze --session fr -o clean.sif
expect_eq "freeze --session of a clean session" "$RC" 0
printf '%s\n' "$ERR" | grep -q -e "$tag" -e "could not tell" && not_ok "a clean session: reported $ERR" ||
	ok "... the node answered, and none of the test's cases is reported"
run_gg --json freeze --session fr -o clean2.sif
expect_eq "--json: unfrozen is an empty list" "$(printf '%s' "$OUT" | py 'import json,sys; print([u for u in json.load(sys.stdin)["unfrozen"] if "gg46-" in u["path"] or u.get("name","").startswith("GG46")])')" "[]"

# plant every case, in the session
run_gg connect fr -- "s=\$HOME/.local/lib/python3.11/site-packages; mkdir -p \$s/${tag}mod \$s/${tag}mod-1.0.dist-info &&
	echo 'x = 1' >\$s/${tag}mod/__init__.py && printf 'Name: ${tag}mod\nVersion: 1.0\n' >\$s/${tag}mod-1.0.dist-info/METADATA &&
	mkdir -p \$HOME/$tag-conda/conda-meta \$HOME/$tag-conda/bin && echo conda >\$HOME/$tag-conda/bin/python &&
	mkdir -p \$HOME/$tag-tools/bin &&
	echo 'export GG46_VAR=1' >>\$HOME/.bashrc && echo 'export PATH=\"\$HOME/$tag-tools/bin:\$PATH\"' >>\$HOME/.profile"
expect_eq "the cases planted in the session" "$RC" 0
run_gg freeze --session fr -o rep.sif
expect_eq "freeze --session with them: the image is made" "$RC" 0
one() { # description pattern: exactly one line of stderr matches
	n=$(printf '%s\n' "$ERR" | grep -c -- "$2")
	[ "$n" = 1 ] && ok "$1" || not_ok "$1 ($n lines match '$2' in: $ERR)"
}
one "Python's user site (pip install --user): one line, what to do" \
	"Python's user site $H/.local/lib/python3.11/site-packages (pip install --user) is outside the sandbox: install without --user in the session, or take it in with --include"
one "the conda root under \$HOME" "the conda root $H/$tag-conda is under \$HOME, outside the sandbox: .*--include $H/$tag-conda"
one "the export in ~/.bashrc" "$H/.bashrc exports GG46_VAR, which a batch job does not read"
one "the export in ~/.profile" "$H/.profile exports PATH, which a batch job does not read"
one "the PATH entry under \$HOME" "PATH has $H/$tag-tools/bin, outside the sandbox: .*--include $H/$tag-tools/bin"
run_gg --json freeze --session fr -o rep2.sif
json_valid freeze
expect_eq "--json: the cases in unfrozen" "$(printf '%s' "$OUT" | py 'import json,sys
u = json.load(sys.stdin)["unfrozen"]
print(sorted(x["kind"] for x in u if "gg46-" in x["path"] or x.get("name") in ("GG46_VAR",) or x["path"].endswith("site-packages")))')" \
	"['conda', 'path', 'startup', 'usersite']"

# --strict: exit 2, nothing written
expect_fail "--strict: what the image will not carry is an error" 2 "the image will not carry (--strict): nothing frozen" \
	freeze --session fr --strict -o strict.sif
no_leftovers strict.sif && ok "--strict: no image, no temp file" || not_ok "--strict left $(echo strict.sif*)"
expect_fail "--strict without --session" 2 "--strict goes with --session" freeze --strict rootfs -o x.sif
expect_fail "--include of a relative path" 2 "--include 'rel/x': expected an absolute path" \
	freeze --session fr --include rel/x -o x.sif

# --include takes a reported path in: in the image, and no longer reported
run_gg freeze --session fr --include "$H/$tag-conda" -o inc.sif
expect_eq "freeze --session --include the conda root" "$RC" 0
printf '%s\n' "$ERR" | grep -q "conda root" && not_ok "--include: still reported: $ERR" || ok "... the conda root is no longer reported"
off=$(grep -obUa hsqs inc.sif | head -n 1 | cut -d: -f1)
unsquashfs -l -o "$off" inc.sif 2>/dev/null | sed 's|^squashfs-root||' >inc.list
grep -qx "$H/$tag-conda/bin/python" inc.list && grep -qx "$H/$tag-conda/conda-meta" inc.list &&
	ok "... and in the image at its place" || not_ok "not in the image: $(grep "$tag" inc.list | head -5)"
grep -q "$tag-tools" inc.list && not_ok "--include took in more than asked" || ok "... nothing else of the home"

restore
run_gg kill fr
done_testing
