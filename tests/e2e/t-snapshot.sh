#!/bin/sh
# Work outlives the session (issue 51): a session with an image that ends by
# its idle limit leaves a snapshot of what changed in its sandbox in the job's
# directory (status shows it); freeze --session afterwards makes from it and
# the staged image the same bytes a freeze of the live sandbox made, and a
# batch job of that image has what was installed. A kill of the job while the
# snapshot is being written leaves a whole snapshot or none; a snapshot over
# the site's snapshot_max is not kept, and status says why.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
cd "$T_TMP" || exit 1
jobdir() { echo "$GG_TB_SESSION_DIR/$("$GRIDGPU" --json status "$1" --no-sync | jf job_id)"; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile (bwrap)" "$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --runtime bwrap
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs bash mkdir rm cat head chmod >/dev/null 2>&1
echo "from the image" >rootfs/etc/motd
echo "to be removed" >rootfs/etc/gone

# --- (1) idle end: snapshot, freeze afterwards, the same bytes, a batch job has it ---
run_gg request --name sa --image rootfs --idle-limit 20s --walltime 30m
expect_eq "request --image rootfs --idle-limit 20s: ready" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
run_gg connect sa -- 'mkdir -p /usr/local/bin /opt/tool && printf "#!/bin/sh\necho installed-tool \$(cat /opt/tool/data)\n" >/usr/local/bin/mytool && chmod 755 /usr/local/bin/mytool && head -c 2000000 /dev/urandom >/opt/tool/blob && echo 42 >/opt/tool/data && rm /etc/gone && echo edited >>/etc/motd'
expect_eq "the session installs a tool, edits and removes a file of the image" "$RC" 0
run_gg freeze --session sa -o live.sif
expect_eq "freeze --session sa while it runs" "$RC" 0
poll_ce 120 ended sa && ok "sa ended by its idle limit" || not_ok "sa did not end: $(sfield sa state)"
poll_ce 30 has_snapshot sa
run_gg status sa
printf '%s\n' "$OUT" | grep -q "^snapshot:    .* written .*freeze --session sa takes it" &&
	ok "status shows the snapshot (size, when)" || not_ok "status: $OUT"
printf '%s\n' "$OUT" | grep -q "idle for longer than the idle limit" && ok "... and why it ended" || not_ok "status: $OUT"
jd=$(jobdir sa)
[ -s "$jd/gridgpu-snapshot.tar" ] && [ -s "$jd/gridgpu-image.sif" ] &&
	ok "the job's directory keeps the snapshot and the image it was made from" || not_ok "job dir: $(ls -a "$jd")"
run_gg --json status sa
json_valid status
run_gg freeze --session sa -o after.sif
expect_eq "freeze --session sa after it ended: from the snapshot" "$RC" 0
cmp -s live.sif after.sif && ok "... the same bytes as the freeze of the live sandbox" ||
	not_ok "after.sif differs from live.sif: $(sha256sum live.sif after.sif)"
run_gg submit after.sif --name ja --walltime 30m -- sh -c 'mytool; cat /etc/motd; test ! -e /etc/gone || echo gone-is-there'
expect_eq "submit the image frozen afterwards" "$RC" 0
run_gg get --wait --timeout 3m ja
expect_eq "get --wait ja" "$RC" 0
expect_eq "the batch job has what the session installed, the edit and the removal" \
	"$(cat ja/gridgpu-job.out 2>&1 | tr '\n' ' ')" "installed-tool 42 from the image edited "

# --- (2) over the site's snapshot_max: none kept, status says why ---
check "site set tb snapshot-max 1M" "$GRIDGPU" site set -q tb snapshot-max 1M
run_gg request --name sb --image rootfs --walltime 30m
expect_eq "request sb (snapshot_max 1M)" "$RC" 0
run_gg connect sb -- "mkdir -p /opt && head -c 3000000 /dev/urandom >/opt/big"
run_gg kill sb
expect_eq "kill sb" "$RC" 0
poll_ce 60 has_snapshot sb
run_gg status sb
printf '%s\n' "$OUT" | grep -q "^snapshot:    none: the sandbox's changes are larger than the site's limit for a snapshot (1048576 bytes)" &&
	ok "status: no snapshot, over the site's limit" || not_ok "status sb: $OUT"
jd=$(jobdir sb)
[ ! -e "$jd/gridgpu-snapshot.tar" ] && [ -z "$(ls -A "$jd" | grep snapshot)" ] &&
	ok "... no snapshot, no half file in the job's directory" || not_ok "job dir: $(ls -a "$jd")"
expect_fail "freeze --session sb: no snapshot (exit 5)" 5 "ended without a snapshot of its sandbox" \
	freeze --session sb -o sb.sif
[ ! -e sb.sif ] && ok "... nothing written" || not_ok "sb.sif written"

# --- (3) a kill while the snapshot is written: the whole snapshot or none ---
check "site set tb snapshot-max 2G" "$GRIDGPU" site set -q tb snapshot-max 2G
run_gg request --name sc --image rootfs --walltime 30m
expect_eq "request sc" "$RC" 0
run_gg connect sc -- 'mkdir -p /opt; i=0; while [ $i -lt 12 ]; do head -c 30000000 /dev/urandom >/opt/r$i; i=$((i + 1)); done'
expect_eq "sc: 360 MB written in the session" "$RC" 0
jd=$(jobdir sc)
bid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("batch_job_id",""))' "$jd/gridgpu-session.json")
# (the launcher's test hook holds the stream open 30 s once the data is in it)
echo 30 >"$jd/.gridgpu/snapshot.hold"
touch "$jd/stop" # the launcher ends the session itself: the snapshot starts
poll 40 test -s "$jd/.gridgpu-snapshot.tmp" && ok "the snapshot is being written (its temp file)" ||
	not_ok "no temp file seen: $(ls -a "$jd")"
check "scancel -s KILL: the job killed mid-snapshot" sl scancel -s KILL --full "$bid"
poll_ce 90 ended sc
[ ! -e "$jd/gridgpu-snapshot.tar" ] && [ ! -e "$jd/.gridgpu-snapshot.tmp" ] &&
	ok "SIGKILL mid-snapshot: no snapshot, not a half one" || not_ok "after SIGKILL: $(ls -a "$jd")"
expect_fail "freeze --session sc: no snapshot (exit 5)" 5 "ended without a snapshot" freeze --session sc -o sc.sif

"$GRIDGPU" clean -q sa sb sc ja >/dev/null 2>&1
done_testing
