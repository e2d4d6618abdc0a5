#!/bin/sh
# gridgpu check and submit --check (issue 46): before a job queues, its image runs
# through the real batch wrapper on a live session's node (no queue wait), beside
# the same command in the session, and the two are compared. An image frozen from
# the session runs the command as the session does (exit 0); an image without the
# command's program, or a command that ends otherwise, is a difference (exit 6,
# one line each); submit --check of such an image sends nothing (no record, no
# job at the CE). The session's sandbox is untouched and the check leaves only the
# image it keeps for the next check on the node.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
REC=$XDG_STATE_HOME/gridgpu/records
cd "$T_TMP" || exit 1

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile with --runtime bwrap" \
	"$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap
chmod 711 "$T_TMP"
mkdir -p sitedata && echo "the site's data $$" >sitedata/note && chmod -R a+rX sitedata
check "site set tb bind: the site's data area" "$GRIDGPU" site set -q tb bind "$T_TMP/sitedata:/site"

# the session's image has grep; an image made without it cannot run the command
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs grep >/dev/null 2>&1
python3 "$GG_TOP/tests/e2e/mkdocker.py" rootfs dev.tar
sh "$GG_TOP/tests/e2e/mkrootfs.sh" nogrep >/dev/null 2>&1
check "an image without grep" "$GRIDGPU" freeze -q nogrep -o nogrep.sif

expect_fail "check without a ready session: says how to start one (exit 2)" 2 \
	"no session is ready to check in ('gridgpu request' starts one" check nogrep.sif -- true
expect_fail "check --module of no module's name: refused (exit 2)" 2 \
	"--module 'a b': expected a Python module's name" check nogrep.sif --module 'a b' -- true

run_gg request --name chk --image dev.tar --walltime 30m
expect_eq "request --image dev.tar reaches ready" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
run_gg freeze --session chk -o chk.sif
expect_eq "freeze --session chk" "$RC" 0

CMD='grep -c . /site/note'
# the image frozen from the session: found without --session (its source label)
run_gg --json check chk.sif -- sh -c "$CMD"
expect_eq "check of the image frozen from the session: the same (exit 0)" "$RC" 0
[ "$RC" = 0 ] || printf '%s\n' "$OUT" "$ERR" | sed 's/^/#   /' | tail -8
json_valid check
sent=$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["session"], d["same"], d["exit"]["session"], d["exit"]["image"], d["image_sent_bytes"] > 0)' 2>&1)
expect_eq "... in session chk, the same, both exit 0, the image sent" "$sent" "chk True 0 0 True"
run_gg check chk.sif --session chk -- sh -c "$CMD"
expect_eq "check again: the same" "$RC:$OUT" "0:the image runs it as the session chk does (exit 0)"
run_gg --json check chk.sif --session chk -- true
sent=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["image_sent_bytes"])' 2>&1)
expect_eq "... the node kept the image: nothing sent the second time" "$sent" 0

# an image without grep: the command's program is missing, and it ends otherwise
run_gg check nogrep.sif --session chk -- grep -c . /site/note
expect_eq "check of an image without the command's program: exit 6" "$RC" 6
printf '%s\n' "$OUT" | grep -q "^  'grep' is /bin/grep in the session, not found in the image" &&
	ok "... says grep is not in the image, one line" || not_ok "no line on grep: $OUT"
printf '%s\n' "$OUT" | grep -q "^  the command exits 0 in the session, 127 in the image" &&
	ok "... and that it exits 127 there" || not_ok "no line on the exit status: $OUT"
printf '%s\n' "$ERR" | grep -q "^gridgpu: check: 2 differences between the session and the image" &&
	ok "... the error line counts them" || not_ok "error line: $ERR"
run_gg --json check nogrep.sif --session chk -- grep -c . /site/note
json_valid check
kinds=$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["same"], " ".join(sorted(x["kind"] for x in d["differences"])))' 2>&1)
expect_eq "... --json: not the same, an exit and a command difference (exit $RC)" "$kinds" "False command exit"

# what each run wrote last is shown when the exit statuses differ, escaped once:
# a backslash the command wrote shows as two (as in all escaped text), not four
run_gg check nogrep.sif --session chk -- sh -c 'printf "%s\n" "back\\slash" >&2; grep -q x /dev/null'
printf '%s\n' "$ERR" | grep -qxF 'back\\slash' && printf '%s\n' "$ERR" | grep -q "^what the image's run wrote last:" &&
	ok "... what the runs wrote last is shown, escaped once" || not_ok "stderr: $ERR"
# submit --check: nothing is sent when the image differs
jobs_before=$(ce_jobs_with "\"chkjob$$\"")
expect_fail "submit --check of the image without grep: exit 6, nothing submitted" 6 \
	"submit --check: 2 differences between the session and the image: nothing submitted" \
	--site tb submit --check --session chk --name "chkjob$$" nogrep.sif -- grep -c . /site/note
expect_eq "... no record and no job at the CE" "$([ -e "$REC/chkjob$$.json" ] && echo record)$jobs_before$(ce_jobs_with "\"chkjob$$\"")" ""
expect_fail "submit --session without --check: refused (exit 2)" 2 "--session and --module go with --check" \
	--site tb submit --session chk nogrep.sif -- true
run_gg --site tb submit --check --name "chkok$$" chk.sif -- sh -c "$CMD"
expect_eq "submit --check of the session's image: checked, then submitted" "$RC" 0
check "... its record is there" test -e "$REC/chkok$$.json"
"$GRIDGPU" kill -q "chkok$$" >/dev/null 2>&1

# a run directory a day old (a check cut off before its clean-up) goes with the next
run_gg connect chk -- 'printf %s "$GRIDGPU_SESSION_DIR"'
stale=$OUT/.gridgpu/check/run.stale
mkdir -p "$stale/x" && touch -d '2 days ago' "$stale" && chown -R "$GG_TB_JOB_USER" "$stale"
run_gg check chk.sif --session chk -- true
expect_eq "check with a stale run directory on the node: the same, and the directory gone" \
	"$RC $([ -e "$stale" ] && echo left)" "0 "
# the session is as it was; the node keeps only the image of the last check
run_gg connect chk -- 'cat /site/note; ls "$GRIDGPU_SESSION_DIR/.gridgpu/check"'
expect_eq "the session's sandbox still works; the node keeps one image, no run directory" \
	"$(printf '%s\n' "$OUT" | sed 's/image-[0-9a-f]*\.sif/image-SHA.sif/')" "the site's data $$
image-SHA.sif"

expect_fail "check in no such session: exit 5" 5 "no session named 'nosuch'" \
	check chk.sif --session nosuch -- true
"$GRIDGPU" kill -q chk >/dev/null 2>&1
done_testing
