#!/bin/sh
# Batch work against the real test site: a SIF frozen from a test sandbox runs
# on the ARC CE, inside the image's file system, and `get` returns its output.
# The test site has no apptainer (Debian does not ship it): its profile says
# "runtime = bwrap", so the job's wrapper unpacks the image's squashfs
# partition with unsquashfs and runs the command in it under bubblewrap. The
# command reads a file that exists only in the image, which proves where it ran.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
REST=$GG_TB_CE_URL/rest/1.0
ce_jobs() { # how many jobs the CE holds for the test user
	curl -s --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY_PLAIN" --capath "$GG_TB_CA_DIR" \
		-H 'Accept: application/json' "$REST/jobs" |
		python3 -c 'import json,sys
t=sys.stdin.read().strip(); j=json.loads(t).get("job",[]) if t else []
print(len([j] if isinstance(j,dict) else j))'
}

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap
"$GRIDGPU" site add down -q --ce https://localhost:1/arex --runtime bwrap
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox"
echo "this file exists only in the image" >"$T_TMP/sandbox/data/marker.txt"
check "freeze the test sandbox" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
echo "an input staged by submit" >"$T_TMP/input.txt"
cd "$T_TMP" || exit 1

run_gg --site tb submit work.sif --name j1 --walltime 30m --memory 256M --input input.txt --output result.txt -- \
	sh -c 'cat /data/marker.txt; cat /srv/input.txt; echo computed > result.txt'
expect_eq "submit" "$RC" 0
expect_eq "submit prints the job name" "$OUT" j1
run_gg --json status --no-sync j1
expect_eq "status --json: argv has the command's words, command the line quoted" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["argv"] == ["sh", "-c", "cat /data/marker.txt; cat /srv/input.txt; echo computed > result.txt"], d["command"])')" \
	"True sh -c 'cat /data/marker.txt; cat /srv/input.txt; echo computed > result.txt'"
json_valid status
expect_eq "status --json: the memory asked for" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("memory_bytes"))')" 268435456
run_gg status --no-sync j1
printf '%s\n' "$OUT" | grep -qx "memory: *256 MiB" && ok "status shows the memory asked for" || not_ok "status without the memory: $OUT"
printf '%s\n' "$OUT" | grep -qxF "command:     sh -c 'cat /data/marker.txt; cat /srv/input.txt; echo computed > result.txt'" &&
	ok "status shows the command, its words quoted as --json's command" || not_ok "status without the command: $OUT"
run_gg get --wait --timeout 3m j1
expect_eq "get --wait" "$RC" 0
grep -qx "this file exists only in the image" j1/gridgpu-job.out && ok "the command ran inside the image's file system" || not_ok "the command ran inside the image: $(cat j1/gridgpu-job.out j1/gridgpu-job.err 2>&1)"
grep -qx "an input staged by submit" j1/gridgpu-job.out && ok "--input reached the job" || not_ok "--input reached the job"
expect_eq "the declared output came back" "$(cat j1/result.txt 2>&1)" computed
grep -q "bubblewrap" j1/gridgpu-job.err && ok "the wrapper says which runtime it used" || not_ok "the wrapper says which runtime it used"
# get again: the files already there are the job's, byte for byte: kept, not an error
before=$(stat -c %Y.%i j1/result.txt)
run_gg -v get j1
expect_eq "get twice: identical files are not an error" "$RC" 0
expect_eq "... they are said to be kept at -v" "$(printf '%s\n' "$ERR" | grep -c "j1/result.txt' is already there, the same as the job's: kept")" 1
expect_eq "... and left as they were, with no check file beside them" \
	"$(stat -c %Y.%i j1/result.txt) $(ls -A j1 | grep -c gg-same)" "$before 0"
echo "local edit" >j1/result.txt
expect_fail "get does not overwrite without --force" 1 "differs from the job's: use --force" get j1
expect_eq "the local file is untouched" "$(cat j1/result.txt)" "local edit"
run_gg get --force j1
expect_eq "get --force replaces it" "$(cat j1/result.txt)" computed
# --clean: once its outputs are fetched the job is cleaned on the CE and
# forgotten here (gg_engine_fetch cleans as 'gridgpu clean' does)
run_gg --json get --force --clean j1
json_valid get
expect_eq "get --json --clean: the outputs listed, then the job cleaned" \
	"$RC $(printf '%s' "$OUT" | python3 -c 'import json,sys; print("j1/result.txt" in json.load(sys.stdin)["files"])') $(printf '%s\n' "$ERR" | grep -cx 'cleaned j1')" \
	"0 True 1"
expect_fail "get --clean: the record is gone" 5 "j1" status j1
# A full disk during get, in the middle of a download: exit 1 (a local
# failure, not the CE's), the message says why, and no partial file is left
# under the output's name (root: a 64 KiB tmpfs, a 512 KiB output).
if [ "$(id -u)" = 0 ] && mkdir -p full && mount -t tmpfs -o size=64k gg-full full 2>/dev/null; then
	head -c 524288 /dev/urandom >big.in
	run_gg --site tb submit work.sif --name jbig --walltime 10m --input big.in --output big.bin -- \
		sh -c 'cat /srv/big.in > big.bin'
	run_gg get --wait --timeout 3m -d full/dl jbig
	expect_eq "get on a full disk: exit 1" "$RC" 1
	printf '%s' "$ERR" | grep -q "No space left" && ok "get on a full disk: says so" ||
		not_ok "get on a full disk: says so ($ERR)"
	expect_eq "get on a full disk: no partial big.bin" "$(ls -A full/dl 2>/dev/null | grep -c big.bin)" 0
	umount full
	"$GRIDGPU" clean jbig >/dev/null 2>&1
else
	ok "# SKIP get on a full disk: needs root to mount a small tmpfs"
fi

# The command's words reach the job exactly as given, whatever a CE's job
# script does with '$', '`', '\\', quotes, newlines and empty words.
run_gg --site tb submit work.sif --name jw --walltime 10m -- \
	sh -c 'for w; do printf "[%s]" "$w"; done' sh 'a$HOME' 'b\n`c`' '"q" '"'r'" '' "$(printf 'l1\nl2')" '${X:-y}'
run_gg get --wait --timeout 3m jw
expect_eq "the command's words as given: \$, \\, backquotes, quotes, an empty word, a newline" \
	"$(cat jw/gridgpu-job.out 2>&1)" "$(printf '[a$HOME][b\\n`c`]["q" '"'r'"'][][l1\nl2][${X:-y}]')"
"$GRIDGPU" clean jw >/dev/null 2>&1

# A job whose command fails: outputs still come back, exit 6.
run_gg --site tb submit work.sif --name j2 --walltime 10m -- sh -c 'echo failing >&2; exit 3'
run_gg get --wait --timeout 3m j2
[ "$RC" -eq 6 ] && grep -q failing j2/gridgpu-job.err && ok "a failed job: outputs fetched, exit 6" || not_ok "a failed job: exit $RC $ERR"
# status of the failed job: how its command ended and its stderr's last lines;
# the CE's errors file (A-REX's is ~300 lines) only with --all-errors, whole.
run_gg status j2
expect_eq "status of a failed job: exit 6, the command's exit status and stderr, no CE log" \
	"$RC $(printf '%s\n' "$OUT" | grep -c '^reason: *the command exited 3$') $(printf '%s\n' "$OUT" | grep -cx '  | failing') $(printf '%s\n' "$OUT" | grep -c '^CE errors')" "6 1 1 0"
run_gg status --all-errors j2
n_all=$(printf '%s\n' "$OUT" | sed -n '/^CE errors:$/,$p' | tail -n +2 | wc -l)
[ "$n_all" -gt 12 ] && ok "status --all-errors: the CE's errors file, whole ($n_all lines)" || not_ok "status --all-errors: $n_all lines"
# jobs: no IDLE column; columns as wide as the longest name
run_gg --json --site tb submit work.sif --name a-job-with-a-rather-long-name-x --walltime 10m -- true
json_valid submit
run_gg jobs
hdr=$(printf '%s\n' "$OUT" | head -1)
expect_eq "jobs: no IDLE column" "$(printf '%s' "$hdr" | grep -c IDLE)" 0
col=$(printf '%s\n' "$OUT" | awk 'NR == 1 {print index($0, "SITE"); next} {if (substr($0, p = index($0, " tb ") + 1, 2) != "tb") print "bad"; else print p}' | sort -u)
expect_eq "jobs: every row's SITE starts where the header's does (a long name keeps rows aligned)" "$col" "$(printf '%s' "$hdr" | awk '{print index($0, "SITE")}')"
run_gg --json jobs
json_valid jobs
run_gg --json kill a-job-with-a-rather-long-name-x
json_valid kill

# list --sync onto a full disk: a refreshed record that cannot be saved is
# reported, exit 1, and the stored record is left as it was (root: a filled tmpfs).
if [ "$(id -u)" = 0 ] && mkdir -p fullst && mount -t tmpfs -o size=256k gg-fullst fullst 2>/dev/null; then
	run_gg --site tb submit work.sif --name jfull --walltime 10m -- true
	jid=$("$GRIDGPU" --json status --no-sync jfull | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
	poll 180 ce_ended "$jid"
	cp -a "$XDG_STATE_HOME" fullst/state
	before=$(cat fullst/state/gridgpu/records/jfull.json)
	dd if=/dev/zero of=fullst/filler bs=4k 2>/dev/null || true
	XDG_STATE_HOME=$T_TMP/fullst/state run_gg list --sync
	expect_eq "list --sync on a full disk: exit 1" "$RC" 1
	printf '%s' "$ERR" | grep -q "No space left" && ok "list --sync on a full disk: says so" ||
		not_ok "list --sync on a full disk: says so ($ERR)"
	expect_eq "list --sync on a full disk: the record is as it was" "$(cat fullst/state/gridgpu/records/jfull.json)" "$before"
	umount fullst
	"$GRIDGPU" clean jfull >/dev/null 2>&1
else
	ok "# SKIP list --sync on a full disk: needs root to mount a small tmpfs"
fi

# Several sites: the first that accepts; several jobs spread over them.
run_gg --site down --site tb submit work.sif --name j3 --walltime 10m -- true
[ "$RC" -eq 0 ] && printf '%s' "$ERR" | grep -q "site down: .*cannot connect" && ok "--site down --site tb: the CE that is down is reported, tb takes the job" || not_ok "multi-site: $RC $ERR"
run_gg --json status --no-sync j3
expect_eq "j3 went to tb" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["site"])')" tb
run_gg --site tb submit work.sif --count 2 --walltime 10m -- true
expect_eq "--count 2 submits two jobs" "$(printf '%s\n' "$OUT" | grep -c '^job-')" 2

# --dry-run: the exact description, nothing submitted.
n0=$(ce_jobs)
# --gpus on a site without a GPU mapping: refused before anything is sent
run_gg --site tb submit work.sif --gpus 2 --walltime 2h -- echo hi
[ "$RC" -eq 2 ] && printf '%s' "$ERR" | grep -q "^gridgpu: .*site 'tb' has no GPU mapping" &&
	[ "$(ce_jobs)" = "$n0" ] && ok "--gpus on a site without GPU mapping: exit 2, nothing sent" ||
	not_ok "--gpus without mapping: $RC $ERR"
"$GRIDGPU" site add tbgpu -q --ce "$GG_TB_CE_URL" --runtime bwrap --gpu-rte ENV/GPU
run_gg --site tbgpu submit work.sif --dry-run --gpus 2 --walltime 2h -- echo hi
printf '%s' "$OUT" | grep -q '(runtimeenvironment="ENV/GPU" "2")' &&
	ok "--dry-run: the site's GPU RTE gets the count" || not_ok "--dry-run RTE: $OUT"
printf '%s' "$OUT" | grep -q '(arguments="gridgpu-wrapper" "-r" "bwrap" "image.sif" "--" "echo" "hi")' &&
	ok "--dry-run prints the job description" || not_ok "--dry-run: $OUT"
printf '%s' "$OUT" | grep -q '(walltime="PT7200S")' && ok "--dry-run: walltime in seconds, with its unit" || not_ok "--dry-run walltime: $OUT"
expect_eq "--dry-run submits nothing" "$(ce_jobs)" "$n0"
# a command the image does not have: said before the job waits in the queue for nothing
run_gg --site tbgpu submit work.sif --dry-run --walltime 1h -- pyhton3 train.py
[ "$RC" = 0 ] && printf '%s' "$ERR" | grep -q "warning: the image has no 'pyhton3' on its PATH" &&
	ok "submit: a command not in the image is warned about" || not_ok "submit, missing command: $RC $ERR"
run_gg --site tbgpu submit work.sif --dry-run --walltime 1h -- /bin/cat input.txt
printf '%s' "$ERR" | grep -q "image has no" && not_ok "submit: /bin/cat is in the image ($ERR)" ||
	ok "submit: a command the image has is not warned about"

# --match-dev-gpu: the GPU recorded by freeze on a (fake) A100 becomes the minimum. That
# A100 is in MIG mode: the work ran on its first MIG device (3g.20gb, 19968 MiB), not on
# the whole GPU's 40960 MiB.
FAKEGPU=$(dirname "$GRIDGPU")/../tests/fakegpu
LD_LIBRARY_PATH=$FAKEGPU GG_FAKE_NVML=$GG_TOP/tests/fakegpu/a100-mig.conf \
	"$GRIDGPU" freeze -q "$T_TMP/sandbox" -o gpu.sif
run_gg --site tb submit gpu.sif --match-dev-gpu --dry-run -- true
printf '%s' "$OUT" | grep -q '("GRIDGPU_MIN_CUDA_CAPABILITY" "8.0")("GRIDGPU_MIN_GPU_MEMORY_MB" "19968")' &&
	printf '%s' "$ERR" | grep -q "matching the development GPU NVIDIA A100-SXM4-40GB MIG 3g.20gb" &&
	ok "--match-dev-gpu turns the development GPU (the MIG device used) into minimums, and says so" || not_ok "--match-dev-gpu: $OUT $ERR"
# ... the MIG device CUDA_VISIBLE_DEVICES gave the work, not the first of the GPU's
CUDA_VISIBLE_DEVICES=MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a LD_LIBRARY_PATH=$FAKEGPU \
	GG_FAKE_NVML=$GG_TOP/tests/fakegpu/a100-mig.conf "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o gpu5.sif
run_gg --site tb submit gpu5.sif --match-dev-gpu --dry-run -- true
printf '%s' "$OUT" | grep -q '("GRIDGPU_MIN_CUDA_CAPABILITY" "8.0")("GRIDGPU_MIN_GPU_MEMORY_MB" "4864")' &&
	ok "--match-dev-gpu of an image frozen on a 1g.5gb MIG device asks for its 4864 MiB" || not_ok "--match-dev-gpu, 1g.5gb: $OUT $ERR"
run_gg --site tb submit gpu.sif --match-dev-gpu --min-capability 9.0 --dry-run -- true
printf '%s' "$OUT" | grep -q '"GRIDGPU_MIN_CUDA_CAPABILITY" "9.0"' && ok "an explicit --min-capability wins" || not_ok "--min-capability: $OUT"
expect_fail "--match-dev-gpu on an image frozen without a GPU" 2 "records no GPU it was developed on" --site tb submit work.sif --match-dev-gpu -- true
expect_fail "--min-capability that cannot be parsed" 2 "expected X.Y" --site tb submit work.sif --min-capability eight -- true

# Bad input: checked before anything is uploaded or recorded.
recs() { ls "$XDG_STATE_HOME/gridgpu/records" | grep -c '\.json$'; }
r0=$(recs)
expect_fail "image missing (exit 2, not 5: that is for sessions and jobs)" 2 "no such file" --site tb submit nosuch.sif -- true
echo "not an image" >fake.sif
expect_fail "not a SIF" 1 "fake.sif" --site tb submit fake.sif -- true
head -c 40000 work.sif >cut.sif
expect_fail "a truncated SIF" 1 "cut.sif" --site tb submit cut.sif -- true
expect_fail "command missing" 2 "no command" --site tb submit work.sif --
expect_fail "no -- COMMAND at all" 2 "no command" --site tb submit work.sif
"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin --valid 1h -q \
	--out "$T_TMP/short" <"$GG_TB_USER_KEY_PASS_FILE"
X509_USER_PROXY=$T_TMP/short expect_fail "walltime longer than the proxy" 3 "proxy init --valid" --site tb submit work.sif --walltime 8h -- true
expect_fail "unknown site" 2 "no such site" --site nowhere submit work.sif -- true
expect_fail "unknown --input" 2 "no such file" --site tb submit work.sif --input nosuch -- true
mkdir -p in1 in2
echo a >in1/data.txt
echo b >in2/data.txt
cp work.sif in1/image.sif
echo w >in1/gridgpu-wrapper
expect_fail "--input named like the job's image is refused" 2 "the job's own file" --site tb submit work.sif --input in1/image.sif -- true
expect_fail "--input named like the job's wrapper is refused" 2 "the job's own file" --site tb submit work.sif --input in1/gridgpu-wrapper -- true
expect_fail "two --input with one name are refused" 2 "both would be 'data.txt'" --site tb submit work.sif -i in1/data.txt -i in2/data.txt -- true
expect_fail "--input of a directory is refused" 2 "not a regular file" --site tb submit work.sif --input in1 -- true
# what the CE would take and then wait on forever (a URL its data staging cannot
# fetch, a name with a control character): refused here, exit 2, saying what to do
expect_fail "--image-url file:// is refused: the CE cannot fetch it" 2 \
	"--image-url: 'file:///tmp/x.sif': the CE cannot stage this URL (a local file: give its path" \
	--site tb submit work.sif --image-url file:///tmp/x.sif -- true
expect_fail "--image-url that is not a URL is refused" 2 "use root://, davs:// or https://" \
	--site tb submit work.sif --image-url /store/x.sif -- true
TAB=$(printf 'a\tb')
mkdir -p in3 && echo x >"in3/$TAB"
expect_fail "--input whose name has a control character is refused" 2 \
	"--input 'in3/a\\tb': a control character in the name, which the CE cannot take: rename it" \
	--site tb submit work.sif --input "in3/$TAB" -- true
expect_fail "--output with a control character is refused (shown escaped)" 2 \
	"--output 'r\\x1b[2J': a control character" --site tb submit work.sif --output "$(printf 'r\033[2J')" -- true
expect_fail "the CE refuses the job: its reason" 6 "refused the job" --site tb submit work.sif --queue nosuchqueue -- true
expect_eq "refused submissions leave no record" "$(recs)" "$r0"
expect_eq "refused submissions leave no job on the CE" "$(ce_jobs)" "$n0"

# kill works for jobs too.
run_gg --site tb submit work.sif --name j9 --walltime 10m -- sh -c 'sleep 20'
# ... named by the CE's job id or the job URL arcstat prints, as its users paste them
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1],""))' "$1"; }
J9ID=$("$GRIDGPU" --json status j9 --no-sync | field job_id)
J9CE=$("$GRIDGPU" --json status j9 --no-sync | field ce)
run_gg --json status --no-sync "$J9ID"
expect_eq "status takes the CE's job id" "$RC $(printf '%s' "$OUT" | field name)" "0 j9"
expect_fail "a job URL on another CE host names no record" 5 "no such session or job" \
	status --no-sync "https://elsewhere.example.org/arex/rest/1.0/jobs/$J9ID"
run_gg kill "$J9CE/rest/1.0/jobs/$J9ID"
expect_eq "kill a batch job by the job URL arcstat prints" "$RC" 0
run_gg status --no-sync j9
printf '%s' "$OUT" | grep -q "state: *killed" && ok "the killed job is marked killed" || not_ok "killed job: $OUT"
done_testing
