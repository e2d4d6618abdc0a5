#!/bin/sh
# The whole user loop against the real test site, as in `make demo`:
# proxy → request → connect → change the sandbox over ssh → freeze (streamed
# from the session over ssh) → submit → get; the change made over ssh shows in
# the batch job's output.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T_TMP" || exit 1

check "proxy init" sh -c "'$GRIDGPU' proxy init -q --cert '$GG_TB_USER_CERT' --key '$GG_TB_USER_KEY' --pass-stdin <'$GG_TB_USER_KEY_PASS_FILE'"
check "site add" "$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --runtime bwrap
run_gg request --name dev --walltime 1h
expect_eq "request" "$RC" 0
sb=sandbox-$$
# The development sandbox lives on the node: build it there, then change it over ssh.
check "make a sandbox on the node" sh -c "'$GRIDGPU' connect dev -- sh -s '$sb' <'$top/tests/e2e/mkrootfs.sh'"
stamp="changed over ssh at $(date +%s.%N)"
check "change the sandbox over ssh" "$GRIDGPU" connect dev -- "echo '$stamp' > $sb/data/result.txt"
run_gg freeze --session dev --path "$sb" -o work.sif
expect_eq "freeze --session (the sandbox streamed over ssh)" "$RC" 0
run_gg verify work.sif
expect_eq "the frozen image verifies" "$RC" 0
run_gg submit work.sif --name batch --walltime 30m -- cat /data/result.txt
expect_eq "submit" "$RC" 0
run_gg get --wait --timeout 3m batch
expect_eq "get" "$RC" 0
expect_eq "the change made over ssh is in the batch job's output" "$(cat batch/gridgpu-job.out 2>&1)" "$stamp"
expect_fail "freeze --session of a path that is not there" 1 "no directory 'no-such-dir'" freeze --session dev --path no-such-dir -o z.sif
[ -z "$(ls z.sif* 2>/dev/null)" ] && ok "nothing left behind by it" || not_ok "left behind: $(ls z.sif*)"
# No --path: the session's sandbox; this one was requested without --image.
expect_fail "freeze --session without --path, session without an image" 1 "give --path DIR" freeze --session dev -o z.sif
# tar failing on the node: its own words reach the user, nothing is left here
check "a sandbox with an unreadable file on the node" "$GRIDGPU" connect dev -- "mkdir -p bad/d && echo x >bad/d/secret && chmod 000 bad/d/secret"
run_gg freeze --session dev --path bad -o bad.sif
[ "$RC" = 1 ] && printf '%s' "$ERR" | grep -q "tar exit 2: .*secret.*Permission denied" && ok "freeze --session: tar's own error in the one-line message (exit 1)" ||
	not_ok "freeze --session: tar's error ($RC $ERR)"
[ -z "$(ls bad.sif* 2>/dev/null)" ] && ok "nothing left behind by it" || not_ok "left behind: $(ls bad.sif*)"
# Ctrl-C while the sandbox streams: exit 130, no image, no temp file, and the
# tar on the node ends with the connection
check "a large sandbox on the node" "$GRIDGPU" connect dev -- "mkdir -p big && head -c 400M /dev/urandom >big/r"
"$GRIDGPU" freeze -q --session dev --path big -o big.sif 2>"$T_TMP/.int.err" &
fz=$!
# the signal once ~30 MB came through (the image goes to an unnamed file first)
streamed() { [ "$(awk '/^rchar/ {print $2}' "/proc/$1/io" 2>/dev/null || echo 0)" -gt 30000000 ]; }
poll 60 streamed $fz && kill -INT $fz
wait $fz
RC=$?
expect_eq "freeze --session, Ctrl-C while streaming: exit 130" "$RC" 130
[ -z "$(ls big.sif* 2>/dev/null)" ] && ok "... no image and no temp file left" || not_ok "... left behind: $(ls big.sif*)"
tar_gone() { ! pgrep -u "$GG_TB_JOB_USER" -f "tar -C 'big'" >/dev/null; }
poll 15 tar_gone && ok "... the tar on the node ended with the connection" || not_ok "... the tar on the node still runs"
"$GRIDGPU" connect dev -- rm -rf bad big >/dev/null 2>&1
"$GRIDGPU" connect dev -- rm -rf "$sb" >/dev/null 2>&1
run_gg kill dev
expect_eq "kill the session" "$RC" 0
run_gg clean
expect_eq "clean" "$RC" 0
expect_fail "freeze --session of an unknown session" 5 "no such session" freeze --session nosuch --path x -o y.sif
[ -e y.sif ] && not_ok "no image left by a failed freeze --session" || ok "no image left by a failed freeze --session"
done_testing
