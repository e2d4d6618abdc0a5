#!/bin/sh
# request --resume S [--site OTHER] (issue 51): a session with an image that
# installs a tool, writes, edits and removes files, and ends by its idle limit,
# is resumed at a second test site and at its own: the new session's sandbox
# has all of it, its GPUs are S's, and status/list --json name S. A session
# ended by the walltime's lead and one ended by kill are resumable too (and a
# session resumed from a resumed one keeps both's changes). A session still
# running, one that left no snapshot (over the site's snapshot_max, or without
# an image), an unknown or cleaned name: one line, the documented exit code, no
# record and no job at either CE.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
cd "$T_TMP" || exit 1
REC=$XDG_STATE_HOME/gridgpu/records
records() { find "$REC" -maxdepth 1 -name '*.json' 2>/dev/null | wc -l; }
ce_jobs() { # the jobs both CEs hold
	echo $(($(find "$GG_TB_CONTROL_DIR" -name 'job.*.description' | wc -l) +
		$(find "$(peer GG_TB_CONTROL_DIR)" -name 'job.*.description' | wc -l)))
}
# what a resumed sandbox must have of sa's: the tool, its data, the edit, the removal
HAS='mytool; cat /etc/motd; test ! -e /etc/gone || echo gone-is-there'
WANT="installed-tool 42 from the image edited "

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site add tb (the test site, bwrap)" "$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" \
	--jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 --runtime bwrap \
	${GG_TB_GPU_RTE:+--gpu-rte "$GG_TB_GPU_RTE"}
check "a second test site beside the first" peer_site_up t4
peer_token_command "$T_TMP/peer-token"
check "site add tp (the second site: its own CA, a token, bwrap)" "$GRIDGPU" site add tp -q \
	--ce "$(peer GG_TB_CE_URL)" --jump "$(peer GG_TB_JUMP1)" --jump "$(peer GG_TB_JUMP2)" \
	--identity "$(peer GG_TB_SSH_KEY)" --known-hosts "$(peer GG_TB_SSH_KNOWN_HOSTS)" \
	--worker-address 127.0.0.1 --ca-dir "$(peer GG_TB_CA_DIR)" --runtime bwrap \
	${GG_TB_GPU_RTE:+--gpu-rte "$(peer GG_TB_GPU_RTE)"} \
	--auth token --token-command "$T_TMP/peer-token"
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs bash mkdir rm cat head chmod wc cmp >/dev/null 2>&1
echo "from the image" >rootfs/etc/motd
echo "to be removed" >rootfs/etc/gone

# --- (1) ended by its idle limit; resumed at the second site and at its own ---
run_gg request --site tb --name sa --image rootfs --gpus 1 --idle-limit 20s --walltime 30m
expect_eq "request sa --image rootfs --gpus 1 --idle-limit 20s: ready" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
run_gg connect sa -- 'mkdir -p /usr/local/bin /opt/tool && printf "#!/bin/sh\necho installed-tool \$(cat /opt/tool/data)\n" >/usr/local/bin/mytool && chmod 755 /usr/local/bin/mytool && head -c 1000000 /dev/urandom >/opt/tool/blob && echo 42 >/opt/tool/data && rm /etc/gone && echo edited >>/etc/motd'
expect_eq "sa installs a tool, edits and removes files of the image" "$RC" 0
expect_fail "resume sa while it runs: refused (exit 2)" 2 "'gridgpu kill sa' ends it" \
	request --resume sa --site tp --name early
poll_ce 120 ended sa && ok "sa ended by its idle limit" || not_ok "sa did not end: $(sfield sa state)"
poll_ce 30 has_snapshot sa
[ -n "$(sfield sa snapshot_at)" ] && ok "sa left a snapshot" || not_ok "sa: $(sfield sa snapshot_error)"

run_gg request --resume sa --site tp --name ra --walltime 30m
expect_eq "request --resume sa --site tp: ready at the second site" "$RC" 0
run_gg connect ra -- "$HAS"
expect_eq "ra (second site) has the tool, its data, the edit and the removal" \
	"$(printf '%s\n' "$OUT" | tr '\n' ' ')" "$WANT"
run_gg connect ra -- 'wc -c </opt/tool/blob'
expect_eq "... and the 1 MB file written in sa" "$OUT" 1000000
run_gg --json status ra --no-sync
json_valid status
expect_eq "status --json ra: resumed from sa, at tp, sa's GPUs" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("resumed_from"), d.get("site"), d.get("gpus"))')" "sa tp 1"
run_gg status ra --no-sync
printf '%s\n' "$OUT" | grep -q "^resumed:     from session sa" && ok "status ra says it was resumed from sa" ||
	not_ok "status ra: $OUT"
run_gg --json list
printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin)
s = [x for x in d["items"] if x.get("name") == "ra"]
sys.exit(0 if s and s[0].get("resumed_from") == "sa" else 1)' 2>/dev/null &&
	ok "list --json: ra resumed from sa" || not_ok "list --json: $(printf '%s' "$OUT" | head -c 400)"

run_gg request --resume sa --name rs --walltime 30m
expect_eq "request --resume sa (no --site): ready at sa's own site" "$RC" 0
expect_eq "rs is at tb" "$(sfield rs site)" tb
run_gg connect rs -- "$HAS"
expect_eq "rs (same site) has all of it" "$(printf '%s\n' "$OUT" | tr '\n' ' ')" "$WANT"

# --- (2) ended by kill, and a resumed session resumed again ----------------------
run_gg connect rs -- 'echo from-rs >/opt/tool/rs.txt && rm /opt/tool/blob'
expect_eq "rs writes a file and removes one of sa's" "$RC" 0
run_gg kill rs
expect_eq "kill rs" "$RC" 0
poll_ce 60 has_snapshot rs
run_gg request --resume rs --name rk --walltime 30m --gpus 0
expect_eq "request --resume rs (ended by kill) --gpus 0" "$RC" 0
run_gg connect rk -- 'mytool; cat /opt/tool/rs.txt; test ! -e /opt/tool/blob || echo blob-is-there'
expect_eq "rk has sa's tool and rs's changes" "$(printf '%s\n' "$OUT" | tr '\n' ' ')" "installed-tool 42 from-rs "
g=$(sfield rk gpus)
expect_eq "rk: --gpus 0 given, not rs's (none in status --json)" "${g:-0}" 0

# --- (3) ended by the walltime's lead (the snapshot's time before the walltime) ---
check "site set tb snapshot-time 25s" "$GRIDGPU" site set -q tb snapshot-time 25s
run_gg request --site tb --name sw --image rootfs --walltime 1m
expect_eq "request sw --walltime 1m (snapshot-time 25s: it ends at about 25 s)" "$RC" 0
run_gg connect sw -- 'echo walltime-work >/etc/motd'
expect_eq "sw edits a file" "$RC" 0
poll_ce 120 ended sw
poll_ce 30 has_snapshot sw
run_gg status sw
printf '%s\n' "$OUT" | grep -q "the walltime runs out" && ok "sw ended by the walltime's lead" || not_ok "status sw: $OUT"
check "site set tb snapshot-time 20s" "$GRIDGPU" site set -q tb snapshot-time 20s
run_gg request --resume sw --site tp --name rw --walltime 30m
expect_eq "request --resume sw --site tp" "$RC" 0
run_gg connect rw -- 'cat /etc/motd'
expect_eq "rw has sw's edit" "$OUT" walltime-work

# --- (4) refusals: one line, the exit code, nothing recorded or sent -------------
check "site set tb snapshot-max 1M" "$GRIDGPU" site set -q tb snapshot-max 1M
run_gg request --site tb --name sb --image rootfs --walltime 30m
expect_eq "request sb (snapshot_max 1M)" "$RC" 0
run_gg connect sb -- "mkdir -p /opt && head -c 3000000 /dev/urandom >/opt/big"
run_gg kill sb
poll_ce 60 has_snapshot sb
run_gg request --site tb --name sn --walltime 30m --no-wait
run_gg kill sn
check "site set tb snapshot-max 2G" "$GRIDGPU" site set -q tb snapshot-max 2G
n1=$(records) j1=$(ce_jobs)
expect_fail "resume sb (over snapshot_max): refused, exit 5, the launcher's reason" 5 \
	"ended without a snapshot of its sandbox: the sandbox's changes are larger than the site's limit" \
	request --resume sb --site tp
expect_eq "... one line, no record, no job sent" "$(printf '%s\n' "$ERR" | wc -l) $(records) $(ce_jobs)" "1 $n1 $j1"
sb_job=$(sfield sb job_id)
run_gg clean sb
expect_eq "clean sb" "$RC" 0
# the CE removes a cleaned job's files in its own time: counted once they are gone
sb_gone() { [ -z "$(find "$GG_TB_CONTROL_DIR" -name "job.$sb_job.description")" ]; }
poll_ce 60 sb_gone || not_ok "sb's job ($sb_job) still at the CE a minute after clean"
n0=$(records) j0=$(ce_jobs)
expect_fail "resume sn (no image): refused, exit 5" 5 "had no sandbox to resume" request --resume sn
expect_fail "resume an unknown name: exit 5" 5 "no such session or job" request --resume nosuch --site tp
expect_fail "resume rw while it runs: exit 2" 2 "'gridgpu kill rw' ends it" request --resume rw
expect_fail "--resume with --image: exit 2" 2 "--resume and --image exclude each other" \
	request --resume sa --image rootfs
expect_fail "resume sb once cleaned: exit 5 (no such session)" 5 "no such session or job" request --resume sb
expect_eq "no record made by the refusals" "$(records)" "$n0"
expect_eq "no job sent to either CE by the refusals" "$(ce_jobs)" "$j0"

"$GRIDGPU" kill -q ra rw rk >/dev/null 2>&1
"$GRIDGPU" clean -q sa ra rs rk sw rw sn >/dev/null 2>&1
done_testing
