#!/bin/sh
# submit takes what request --image takes, against the real test site: a
# docker-archive is frozen on the fly (a progress bar on a terminal) into the
# user's cache and the job runs in it; a second submit of the same unchanged
# tar takes the cached SIF without freezing; a corrupt SIF still says so; an
# image on the node that is not a SIF is refused (exit 2) with the freeze to
# run, nothing sent; a SIF on the node (node:/PATH.sif) runs where it is.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
PTY=$GG_TOP/tests/e2e/pty-run.py
ce_jobs() { # how many jobs the CE holds for the test user
	curl -s --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" --capath "$GG_TB_CA_DIR" \
		-H 'Accept: application/json' "$GG_TB_CE_URL/rest/1.0/jobs" |
		python3 -c 'import json,sys
t=sys.stdin.read().strip(); j=json.loads(t).get("job",[]) if t else []
print(len([j] if isinstance(j,dict) else j))'
}
records() { find "$XDG_STATE_HOME/gridgpu/records" -name '*.json' 2>/dev/null | wc -l; }
cached() { find "$XDG_CACHE_HOME/gridgpu/images" -name '*.sif' 2>/dev/null | wc -l; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/rootfs"
# a docker-archive of two layers: the top one adds /etc/os-release (ID=gridgpu-test)
python3 "$(dirname "$0")/mkdocker.py" "$T_TMP/rootfs" "$T_TMP/dev.tar"
cd "$T_TMP" || exit 1

# The docker-archive, at a terminal: frozen with freeze's progress bar, said
# where it went, submitted; the job's output is the image's os-release.
out=$(python3 "$PTY" --timeout 120 -- "$GRIDGPU" --site tb submit dev.tar --name jt \
	--walltime 30m -- cat /etc/os-release 2>&1)
expect_eq "submit dev.tar (a docker-archive): submitted" "$?" 0
printf '%s' "$out" | grep -q "froze 'dev.tar' (.*) into $XDG_CACHE_HOME/gridgpu/images/.*-dev\.sif" &&
	ok "... frozen into the user's cache, and says where" || not_ok "... frozen into the cache: $out"
printf '%s' "$out" | grep -q "$(printf '\r\033\\[K')" &&
	ok "... with a progress bar on the terminal" || not_ok "... with a progress bar: $out"
expect_eq "... one SIF in the cache" "$(cached)" 1
sif=$(ls "$XDG_CACHE_HOME"/gridgpu/images/*.sif)
run_gg get --wait --timeout 3m jt
expect_eq "get --wait" "$RC" 0
grep -qx "ID=gridgpu-test" jt/gridgpu-job.out && ok "the command ran in the image, its layers applied" ||
	not_ok "the command ran in the image: $(cat jt/gridgpu-job.out jt/gridgpu-job.err 2>&1 | tail -5)"

# The same tar again, unchanged: the cached SIF, not frozen again.
before=$(stat -c %i.%s "$sif") used=$(stat -c %.9Y "$sif")
# files of the caches unused for 31 days go when the cache is next written; a day's stay
C=$XDG_CACHE_HOME/gridgpu
for d in images enter; do
	: >"$C/$d/old.part" && touch -d '31 days ago' "$C/$d/old.part"
	: >"$C/$d/day.part" && touch -d '1 day ago' "$C/$d/day.part"
done
run_gg --site tb submit dev.tar --name jt2 --walltime 30m -- true
expect_eq "submit dev.tar again: submitted" "$RC" 0
expect_eq "... not frozen again: the cached SIF said, the same file" \
	"$(printf '%s\n' "$ERR" | grep -c "unchanged since it was frozen: submitting $sif") $(printf '%s\n' "$ERR" | grep -c "^froze ") $(stat -c %i.%s "$sif") $(cached)" \
	"1 0 $before 1"
# its time is its last use: what the cache's clean-up goes by (30 days unused)
[ "$(stat -c %.9Y "$sif")" != "$used" ] && ok "... and marked used (its time now)" ||
	not_ok "the cached SIF's time is still $used"
expect_eq "the caches' files unused for 31 days are gone, a day's stay (images, enter)" \
	"$(ls "$C/images" "$C/enter" | grep -c '^old\.part$') $(ls "$C/images" "$C/enter" | grep -c '^day\.part$')" "0 2"
"$GRIDGPU" kill jt2 >/dev/null 2>&1

# A SIF cut short is corrupt, and says so (not frozen as something else).
head -c 40000 "$sif" >cut.sif
recs=$(records) jobs=$(ce_jobs)
expect_fail "a corrupt SIF still says corrupt SIF" 1 "corrupt SIF" --site tb submit cut.sif -- true
printf '%s' "$ERR" | grep -q "gridgpu verify cut.sif" && ok "... and names gridgpu verify" || not_ok "... names verify: $ERR"

# An image on the node that is not a SIF: refused before anything is sent,
# with the freeze to run.
expect_fail "submit node:/x.tar: exit 2 with the freeze to run" 2 \
	"copy it here and run 'gridgpu freeze x.tar -o x.sif', then submit x.sif" \
	--site tb submit node:/srv/x.tar -- true
expect_eq "... nothing sent: no record, no job at the CE, nothing cached" \
	"$(records) $(ce_jobs) $(cached)" "$recs $jobs 1"

# A dry run says what it would freeze, and freezes nothing.
run_gg --site tb submit --dry-run rootfs -- true
expect_eq "submit --dry-run DIR: says it would freeze it, freezes nothing" \
	"$RC $(printf '%s\n' "$ERR" | grep -c "submit would freeze it into $XDG_CACHE_HOME/gridgpu/images/") $(cached)" \
	"0 1 1"

# A SIF on the node (here the node shares this machine's file system): run
# where it is, not uploaded; the wrapper finds its partition.
chmod 711 "$T_TMP" && cp "$sif" node.sif && chmod 644 node.sif
run_gg --site tb submit node:"$T_TMP/node.sif" --name jn --walltime 30m -- cat /etc/os-release
expect_eq "submit node:/PATH.sif: submitted" "$RC" 0
run_gg --json status --no-sync jn
run_gg get --wait --timeout 3m jn
grep -qx "ID=gridgpu-test" jn/gridgpu-job.out && ok "node:/PATH.sif: the command ran in the node's SIF" ||
	not_ok "node:/PATH.sif ran: $(cat jn/gridgpu-job.out jn/gridgpu-job.err 2>&1 | tail -5)"
"$GRIDGPU" clean jt jt2 jn >/dev/null 2>&1
done_testing
