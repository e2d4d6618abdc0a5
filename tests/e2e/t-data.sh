#!/bin/sh
# Data where the physics is: storage URLs in and out of batch jobs against the
# test site's storage element (XRootD: root:// and https:// on one port, X.509
# proxies) and its XCache.  The CE stages inputs and outputs with the
# delegated proxy, root:// inputs through the cache; `get` fetches outputs from
# storage over HTTPS; the client moves neither file (its own byte counters,
# -v).  The second job reading the same input is served by the cache (the
# cache's per-file statistics and the storage element's log say so).  The bad
# inputs: a scheme the CE cannot stage, a missing file, a storage that refuses
# the proxy, an output directory that does not exist (at submit time), a full
# quota and a write the storage refuses (the job's state names the file).
# The test makes its own data on the storage element's disk, as a site's data
# management would have put it there.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ -z "${GG_TB_SE_ROOT:-}" ] || [ -z "${GG_TB_SE_DOOR_DAVS:-}" ]; then
	ok "# SKIP the test site has no storage element (site-down and site-up it)"
	done_testing
	exit
fi
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
SE=$GG_TB_SE_ROOT
# the storage's door (an XRootD redirector in front of the disk server): what
# users name for davs:// outputs
DOOR=${GG_TB_SE_DOOR_DAVS:-}
RUN=t-data-$$-$(date +%s)
ME=$(id -un)
MiB=1048576
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1],""))' "$1"; }
# sent BYTES: the bytes the client sent to the CE, from submit -v's own count
sent() { printf '%s\n' "$ERR" | sed -n 's/.* \([0-9][0-9]*\) bytes sent.*/\1/p' | tail -n 1; }
ce_count() {
	curl -s --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" --capath "$GG_TB_CA_DIR" \
		-H 'Accept: application/json' "$GG_TB_CE_URL/rest/1.0/jobs" |
		python3 -c 'import json,sys
t=sys.stdin.read().strip(); j=json.loads(t).get("job",[]) if t else []
print(len([j] if isinstance(j,dict) else j))'
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile with the site's cache and output base" "$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" \
	--runtime bwrap --cache "$GG_TB_XCACHE" --output-base "$DOOR/store/user/\$USER/$RUN/b/" \
	--jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1
expect_fail "site add: a cache that is not root://HOST:PORT refused" 2 "--cache" \
	site add bad --ce "$GG_TB_CE_URL" --cache "https://localhost:1/x"
expect_fail "site add: an output base the CE cannot stage to refused" 2 "cannot stage" \
	site add bad --ce "$GG_TB_CE_URL" --output-base "gsiftp://se.example/store/"
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" sha256sum cp head >/dev/null
check "freeze the test image" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
cd "$T_TMP" || exit 1
SIF=$(stat -c %s work.sif)

# The data: 100 MiB at the storage element, read-only to users; the output
# directories of this run.
se_mkdir "/store/data/$RUN" "/store/user/$RUN/a" "/store/user/$ME/$RUN/b" "/store/private/$RUN"
head -c $((100 * MiB)) /dev/urandom >"$GG_TB_SE_DATA/store/data/$RUN/in100.bin"
echo "not for users" >"$GG_TB_SE_DATA/store/private/$RUN/secret.txt"
chown -R ggxrd: "$GG_TB_SE_DATA/store/data/$RUN" "$GG_TB_SE_DATA/store/private/$RUN"
SUM=$(sha256sum <"$GG_TB_SE_DATA/store/data/$RUN/in100.bin" | cut -d' ' -f1)
IN=$SE//store/data/$RUN/in100.bin

# --- job a: a 100 MiB root:// input, its result to a davs:// URL -------------
run_gg -v --site tb submit work.sif --name ja --walltime 20m --input "$IN" \
	--output "res.txt=$DOOR/store/user/$RUN/a/res.txt" --output "big.bin=$DOOR/store/user/$RUN/a/big.bin" -- \
	sh -c 'sha256sum /srv/in100.bin > res.txt; head -c 2097152 /srv/in100.bin > big.bin'
expect_eq "submit with a root:// input and a davs:// output" "$RC" 0
SENT_A=$(sent)
[ -n "$SENT_A" ] && [ "$SENT_A" -lt $((SIF + MiB)) ] && [ "$SENT_A" -lt $((100 * MiB / 20)) ] &&
	ok "the client sent $SENT_A bytes for job a (the $SIF-byte image and requests), not the 100 MiB input" ||
	not_ok "the client's bytes for job a: '$SENT_A' ($(printf '%s' "$ERR" | tail -3))"
run_gg --json status ja --no-sync
expect_eq "status --json: the output at storage" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["storage_outputs"][0]["url"], d["storage_inputs"])')" \
	"$DOOR/store/user/$RUN/a/res.txt 1"
json_valid status
run_gg get --wait --timeout 5m ja
expect_eq "get --wait: the job ended and its outputs came" "$RC" 0
expect_eq "the job read the 100 MiB input the CE staged (its sha256)" "$(cut -d' ' -f1 ja/res.txt 2>&1)" "$SUM"
expect_eq "the result is at the storage element (the CE put it there over davs://)" \
	"$(cut -d' ' -f1 "$GG_TB_SE_DATA/store/user/$RUN/a/res.txt" 2>&1)" "$SUM"
[ ! -e ja/in100.bin ] && ok "the input did not come back through the CE" || not_ok "the input came back through the CE"
printf '%s\n' "$OUT" | grep -qx 'ja/res.txt' && ok "get names the file it fetched from storage" || not_ok "get: $OUT"
run_gg get --urls ja
expect_eq "get --urls prints where the outputs are" "$OUT" "res.txt $DOOR/store/user/$RUN/a/res.txt
big.bin $DOOR/store/user/$RUN/a/big.bin"
run_gg --json get --urls ja
json_valid get
# a stale part: res.txt.part of other bytes, without the validator a broken
# get keeps beside it (res.txt.part.validator), is not completed with a Range
# but fetched again from byte 0 (the storage's adler32 checks the file)
rm -f ja/res.txt
printf 'not the bytes of res.txt, 40 of them...' >ja/res.txt.part
run_gg get ja --force
expect_eq "get does not splice a stale .part of other bytes: the file is whole" \
	"$RC $(cut -d' ' -f1 ja/res.txt 2>&1) $(printf '%s' "$ERR" | grep -c 'resumed at byte')" "0 $SUM 0"
[ ! -e ja/res.txt.part ] && [ ! -e ja/res.txt.part.validator ] && ok "no .part left after the fetch" ||
	not_ok "a .part was left"
# a part with the right first bytes but nothing to say which version of the
# file they are of is not trusted either
head -c 40 "$GG_TB_SE_DATA/store/user/$RUN/a/res.txt" >ja/res.txt.part
run_gg get ja --force
expect_eq "a .part without its validator is started over, not resumed" \
	"$RC $(cut -d' ' -f1 ja/res.txt 2>&1) $(printf '%s' "$ERR" | grep -c 'resumed at byte')" "0 $SUM 0"
# a fetch that really broke resumes: big.bin (2 MiB) cut at 512 KiB by a file size
# limit (SIGXFSZ ignored: the write fails, get stops), then fetched again: the part
# and its validator (the storage's adler32) were kept, the rest comes with a Range
BIGSUM=$(head -c 2097152 "$GG_TB_SE_DATA/store/data/$RUN/in100.bin" | sha256sum | cut -d' ' -f1)
rm -f ja/big.bin
(trap '' XFSZ; ulimit -f 1024 && exec "$GRIDGPU" get ja --force) >/dev/null 2>ja-cut.err
CUT=$(stat -c %s ja/big.bin.part 2>/dev/null)
[ -n "$CUT" ] && [ "$CUT" -gt 0 ] && [ "$CUT" -lt 2097152 ] && grep -q adler32= ja/big.bin.part.validator &&
	ok "a get cut short keeps big.bin.part ($CUT bytes) and the storage's checksum beside it" ||
	not_ok "after the cut get: part '$CUT', validator '$(cat ja/big.bin.part.validator 2>&1)', $(head -c 300 ja-cut.err)"
run_gg get ja --force
expect_eq "the next get resumes it where it broke: the file is whole" \
	"$RC $(sha256sum <ja/big.bin 2>&1 | cut -d' ' -f1) $(printf '%s' "$ERR" | grep -c "big.bin: resumed at byte $CUT")" "0 $BIGSUM 1"
[ ! -e ja/big.bin.part ] && [ ! -e ja/big.bin.part.validator ] && ok "... no .part or validator left" ||
	not_ok "a .part or its validator was left"
# cleaned on the CE: its files are gone from there, the output at storage is not
JA=$("$GRIDGPU" --json status ja --no-sync | field job_id)
ce_post clean "{\"job\":[{\"id\":\"$JA\"}]}" >/dev/null
end=$(($(date +%s) + 60))
until run_gg get -d ja-again ja && printf '%s' "$ERR" | grep -q "no longer has ja's files" || [ "$(date +%s)" -ge "$end" ]; do
	rm -rf ja-again
	sleep 1
done
expect_eq "a job cleaned on the CE: get still fetches its output from storage" \
	"$RC $(cut -d' ' -f1 ja-again/res.txt 2>&1)" "0 $SUM"

# --- job b: the same input again, its output under the site's output base ---
run_gg -v --site tb submit work.sif --name jb --walltime 20m --input "$IN:data.bin" --output res.txt -- \
	sh -c 'sha256sum /srv/data.bin > res.txt'
expect_eq "submit with URL:NAME and the site's output base" "$RC" 0
SENT_B=$(sent)
run_gg get --wait --timeout 5m jb
expect_eq "job b: the output base took the output (\$USER = $ME)" \
	"$RC $(cut -d' ' -f1 "$GG_TB_SE_DATA/store/user/$ME/$RUN/b/res.txt" 2>&1) $(cut -d' ' -f1 jb/res.txt 2>&1)" "0 $SUM $SUM"
[ -n "$SENT_B" ] && [ "$SENT_B" -lt $((100 * MiB / 20)) ] && ok "the client sent $SENT_B bytes for job b" ||
	not_ok "the client's bytes for job b: '$SENT_B'"

# The cache: both jobs read in100.bin through it; the second was served by it.
CINFO=$GG_TB_XCACHE_DATA/store/data/$RUN/in100.bin.cinfo
ACC=$(xrdpfc_print -v "$CINFO" 2>&1)
NACC=$(printf '%s\n' "$ACC" | sed -n 's/.*N_acc_total=\([0-9]*\).*/\1/p')
LAST=$(printf '%s\n' "$ACC" | awk '/^Record /{r=1; next} r && NF >= 9 {last=$0} END {print last}')
MISS=$(printf '%s' "$LAST" | awk '{print $8}')
HIT=$(printf '%s' "$LAST" | awk '{print $7}')
[ "${NACC:-0}" -ge 2 ] && [ "$MISS" = 0 ] && [ "${HIT:-0}" -ge 102400 ] &&
	ok "the cache's statistics: $NACC reads of in100.bin, the last all hits ($HIT kB hit, $MISS kB missed)" ||
	not_ok "the cache's statistics: $ACC"
READS=$(grep -c "grant gsi .* read /store/data/$RUN/in100.bin\$" "$GG_TB_SE_LOG")
# the cache's proxy is the host's: the storage's grid-mapfile names it ggcache
BYCACHE=$(grep -c "grant gsi ggcache@.* read /store/data/$RUN/in100.bin\$" "$GG_TB_SE_LOG")
expect_eq "the storage element served in100.bin once, to the cache (two jobs read it)" "$READS $BYCACHE" "1 1"

# --- job c: davs:// inputs, two of 300 MiB, so that the staging can be seen:
# jobs shows how far the CE got ---------------------------------------------
for z in z1 z2; do truncate -s $((300 * MiB)) "$GG_TB_SE_DATA/store/data/$RUN/$z.bin"; done
chown ggxrd: "$GG_TB_SE_DATA/store/data/$RUN"/z*.bin
DAVS=$GG_TB_SE_DAVS/store/data/$RUN
run_gg --site tb submit work.sif --name jc --walltime 20m --input "$DAVS/z1.bin" --input "$DAVS/z2.bin" \
	--input "$DAVS/in100.bin" -- sh -c 'sha256sum /srv/in100.bin'
seen=""
end=$(($(date +%s) + 120))
while [ "$(date +%s)" -lt "$end" ]; do
	line=$("$GRIDGPU" jobs --sync 2>/dev/null | grep '^jc ')
	case $line in *"staging in "[0-2]/3*) seen="$seen $(printf '%s' "$line" | grep -o '[0-9]/3')" ;; esac
	case $line in *running* | *finished* | *failed*) break ;; esac
	sleep 0.2
done
# shellcheck disable=SC2086 # the words of $seen
seen=$(printf '%s\n' $seen | sort -u | tr '\n' ' ' | sed 's/ $//')
[ -n "$seen" ] && ok "jobs shows the CE's staging of three davs:// inputs: staging in $seen" ||
	not_ok "jobs never showed 'staging in N/3' (last: $line)"
run_gg get --wait --timeout 5m jc
expect_eq "job c read its davs:// input (the CE staged it over HTTPS)" \
	"$RC $(cut -d' ' -f1 jc/gridgpu-job.out 2>&1)" "0 $SUM"

# --- a session sees the data too: the cache and the storage base, and the
# delegated proxy to read the same URLs with -------------------------------
run_gg --site tb request --name sd --walltime 30m --connect-deadline 10m
expect_eq "request a session at the site" "$RC" 0
# (ssh joins the words of a command into one line for the remote shell: one word)
# shellcheck disable=SC2016 # expanded in the session
run_gg connect sd -- 'echo "$GRIDGPU_CACHE $GRIDGPU_STORAGE"'
expect_eq "the session's environment names the cache and the storage base" "$OUT" \
	"$GG_TB_XCACHE $DOOR/store/user/$ME/$RUN/b/"
run_gg connect sd -- "xrdcp -s \"\$GRIDGPU_CACHE//$IN\" - | sha256sum"
expect_eq "in the session, the job's input reads through the cache with the delegated proxy" \
	"$(printf '%s' "$OUT" | cut -d' ' -f1)" "$SUM"
"$GRIDGPU" kill sd >/dev/null 2>&1

# --- bad inputs, told at submit time: nothing recorded, nothing at the CE ---
N0=$(ce_count)
expect_fail "--input gsiftp://: a scheme the CE cannot stage (exit 2)" 2 "the CE cannot stage this URL (GridFTP" \
	--site tb submit work.sif --input "gsiftp://se.example/store/f" -- true
expect_fail "--input http://: refused, says use https or davs" 2 "use https:// or davs://" \
	--site tb submit work.sif --input "http://se.example/store/f" -- true
expect_fail "--output to srm://: refused" 2 "the CE cannot stage" \
	--site tb submit work.sif --output "r.txt=srm://se.example/store/r" -- true
expect_fail "--input of a file the storage does not have (exit 2)" 2 "no such file at the storage (404)" \
	--site tb submit work.sif --input "$SE//store/data/$RUN/nosuch.bin" -- true
expect_fail "--input davs:// of a missing file (exit 2)" 2 "no such file at the storage" \
	--site tb submit work.sif --input "$GG_TB_SE_DAVS/store/data/$RUN/nosuch.bin" -- true
expect_fail "--input the storage refuses to the proxy (exit 3)" 3 "the storage refused your credential (403" \
	--site tb submit work.sif --input "$SE//store/private/$RUN/secret.txt" -- true
expect_fail "--output into a directory that does not exist (exit 2)" 2 "does not exist at the storage" \
	--site tb submit work.sif --output "r.txt=$SE//store/user/$RUN/nosuchdir/r.txt" -- true
expect_fail "--count 3 with an output under the output base: all would write one URL (exit 2)" 2 "same storage URL" \
	--site tb submit work.sif --count 3 --output r.txt -- true
run_gg jobs
expect_eq "no record left by the refused submissions" "$(printf '%s\n' "$OUT" | grep -c "^job-")" 0
expect_eq "no job reached the CE" "$(ce_count)" "$N0"

# --- bad outputs the storage tells only when the CE writes them: the job's
# state names the file, the URL and the storage's words --------------------
run_gg --site tb submit work.sif --name jq --walltime 20m --input "$IN" \
	--output "out.bin=$SE//store/quota/$RUN-out.bin" -- cp /srv/in100.bin out.bin
run_gg --site tb submit work.sif --name jr --walltime 20m \
	--output "r.txt=$SE//store/data/$RUN/r.txt" -- sh -c 'echo result > r.txt'
# a missing input the client cannot ask about (the cache is inside the site):
# the CE finds out
run_gg --site tb submit work.sif --name jm --walltime 20m \
	--input "$GG_TB_XCACHE//$SE//store/data/$RUN/nosuch.bin" -- sh -c 'cat /srv/nosuch.bin'
expect_eq "a missing input behind the cache: submitted (the client cannot ask the cache)" "$RC" 0
run_gg get --wait --timeout 5m jq
expect_eq "a full quota: the job failed (get exits 6)" "$RC" 6
run_gg status jq
printf '%s\n' "$OUT" | grep -q "^reason: *staging out of out.bin to $SE//store/quota/$RUN-out.bin failed: .*no space left on device" &&
	ok "a full quota: the state says which file, where, and 'no space left on device'" ||
	not_ok "a full quota: $(printf '%s\n' "$OUT" | grep '^reason')"
run_gg get --wait --timeout 5m jr
run_gg status jr
printf '%s\n' "$OUT" | grep -q "^reason: *staging out of r.txt to $SE//store/data/$RUN/r.txt failed: .*permission denied.* (the command exited 0: the job failed after it)$" &&
	ok "a write the storage refuses: the state says which file, 'permission denied', and that the command exited 0" ||
	not_ok "a write the storage refuses: $(printf '%s\n' "$OUT" | grep '^reason')"
run_gg get --wait --timeout 5m jm
run_gg status jm
printf '%s\n' "$OUT" | grep -q "^reason: *staging in of nosuch.bin from $GG_TB_XCACHE//$SE//store/data/$RUN/nosuch.bin failed: " &&
	ok "a missing input the CE found: the state says which file, from where, and why" ||
	not_ok "a missing input the CE found: $(printf '%s\n' "$OUT" | grep '^reason')"

"$GRIDGPU" clean --all >/dev/null 2>&1
rm -rf "$GG_TB_SE_DATA/store/data/$RUN" "$GG_TB_SE_DATA/store/user/$RUN" "$GG_TB_SE_DATA/store/user/$ME/$RUN" \
	"$GG_TB_SE_DATA/store/private/$RUN" "$GG_TB_SE_DATA/store/quota/$RUN-out.bin"
done_testing
