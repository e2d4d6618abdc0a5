#!/bin/sh
# A failed batch job in the user's words (issue 53): status says how the
# command ended ("the command exited 3") and shows the last lines of its
# stderr, read from the CE without a `get`; the CE's and Slurm's logs only with
# --all-errors; a node's hostile stderr comes out escaped and bounded.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
"$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap
"$GRIDGPU" site add batch -q --ce "$GG_TB_CE_URL" --runtime bwrap \
	--gpu-queue "$GG_TB_GPU_QUEUE" --gpu-rte "$GG_TB_GPU_RTE"
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" printf head tr sleep
check "freeze the test sandbox" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
cd "$T_TMP" || exit 1

# started first, ended last: a command that outlives its walltime (1m)
run_gg --site tb submit work.sif --name jw --walltime 1m -- sleep 600
expect_eq "submit jw" "$RC" 0
# the wrapper ends the job before the command runs: no GPU meets 200G (sent
# straight to the GPU queue: the site's GPU RTE would refuse it before Slurm,
# t-slurm; here the node's wrapper is what refuses it)
run_gg --site tb submit work.sif --name jg --queue "$GG_TB_GPU_QUEUE" --gpus 1 --min-gpu-memory 200G --walltime 10m -- \
	sh -c 'echo the command ran'
expect_eq "submit jg" "$RC" 0

ended() { "$GRIDGPU" status "$1" >/dev/null 2>&1; [ $? -eq 6 ]; }

# --- a command that writes to stderr and exits 3
run_gg --site tb submit work.sif --name j3 --walltime 10m -- \
	sh -c 'echo "line one" >&2; echo "it went wrong here" >&2; exit 3'
expect_eq "submit j3" "$RC" 0
poll 180 ended j3 || not_ok "j3 did not fail within 3 minutes"
run_gg status j3
expect_eq "status of the failed job: exit 6" "$RC" 6
printf '%s\n' "$OUT" | grep -qx "reason: *the command exited 3" &&
	ok "status says the command exited 3 (no get)" ||
	not_ok "status's reason: $(printf '%s\n' "$OUT" | grep '^reason')"
[ "$(printf '%s\n' "$OUT" | sed -n '/^stderr:/,/^[^ ]/p' | grep '^  | ')" = "$(printf '  | line one\n  | it went wrong here')" ] &&
	ok "status shows the last lines of the command's stderr" ||
	not_ok "status's stderr lines: $OUT"
! printf '%s\n' "$OUT" | grep -q "slurm_script\|LRMS error\|^CE errors" &&
	printf '%s\n' "$OUT" | grep -q "status --all-errors j3" &&
	ok "no CE or Slurm log lines without --all-errors, and the flag that shows them" ||
	not_ok "CE logs shown by default: $OUT"
[ ! -e j3 ] && ok "nothing was fetched (no get)" || not_ok "j3/ exists"
run_gg status --all-errors j3
printf '%s\n' "$OUT" | grep -q "^CE errors:" && printf '%s\n' "$OUT" | grep -q "^  | " &&
	ok "status --all-errors shows the CE's logs" || not_ok "--all-errors: $OUT"
run_gg --json status j3
expect_eq "status --json: exit.status 3 and the stderr tail" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); x=d["exit"]; print(x["status"], x["stderr_tail"], "ce_errors" in d)')" \
	"3 ['line one', 'it went wrong here'] False"
json_valid status
run_gg status --no-sync j3
printf '%s\n' "$OUT" | grep -qx "  | it went wrong here" && ok "kept in the record: status --no-sync shows it" ||
	not_ok "status --no-sync: $OUT"
run_gg list
printf '%s\n' "$OUT" | grep -q "^j3 .*failed: exited 3" && ok "list's line says it exited 3" ||
	not_ok "list: $OUT"

# --- hostile stderr: escape sequences, invalid UTF-8, NUL bytes, a huge line
# (a line longer than the wrapper keeps first: only its end is in the tail)
run_gg --site tb submit work.sif --name jh --walltime 10m -- sh -c '
head -c 100000 /dev/zero | tr "\0" x >&2
echo >&2
printf "\033[31mred\033]0;title\007\n" >&2
printf "bad \377\376 utf8\n" >&2
printf "nul\000byte\n" >&2
head -c 3000 /dev/zero | tr "\0" y >&2
echo >&2
kill -9 $$'
expect_eq "submit jh" "$RC" 0
poll 180 ended jh || not_ok "jh did not fail within 3 minutes"
run_gg status jh
printf '%s\n' "$OUT" | grep -qx "reason: *the command was killed by signal 9 (KILL)" &&
	ok "a command killed by a signal: status says which" ||
	not_ok "jh's reason: $(printf '%s\n' "$OUT" | grep '^reason')"
printf '%s\n' "$OUT" | grep -qF '  | \x1b[31mred\x1b]0;title\x07' &&
	printf '%s\n' "$OUT" | grep -qF '  | bad \xff\xfe utf8' &&
	printf '%s\n' "$OUT" | grep -qF '  | nul\x00byte' &&
	ok "escape sequences, invalid UTF-8 and NUL bytes come out escaped" ||
	not_ok "hostile stderr: $(printf '%s\n' "$OUT" | od -c | head -20)"
! printf '%s' "$OUT" | LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177-\377]')" &&
	ok "no control byte or invalid UTF-8 reaches the terminal" || not_ok "raw bytes in status's output"
long=$(printf '%s\n' "$OUT" | grep '^  | yyyy')
[ "${#long}" -lt 300 ] && printf '%s' "$long" | grep -q " \[2800 more bytes\]$" &&
	ok "a long line is cut, saying so (${#long} characters)" || not_ok "the long line: ${#long} characters"
! printf '%s\n' "$OUT" | grep -q "xxxx" && ok "the start of the tail, cut by the wrapper's bound, is left out" ||
	not_ok "a cut line is shown"
[ "$(printf '%s\n' "$OUT" | wc -c)" -lt 4000 ] && ok "status stays small" || not_ok "status: $(printf '%s\n' "$OUT" | wc -c) bytes"
run_gg --json status jh
json_valid status

# --- failed before the command ran: the wrapper's reason, as before
poll 180 ended jg || not_ok "jg did not fail within 3 minutes"
run_gg status jg
# (no gres asked: the wrapper holds every GPU of the node against the minimum,
# and the reason is cut after the first few)
printf '%s\n' "$OUT" | grep -q "^reason: .*; the node said: gridgpu-wrapper: the job's GPU does not meet its minimums: GPU 0 (NVIDIA A100-SXM4-40GB) has 40960 MiB of memory, the job needs at least 204800 MiB; " &&
	! printf '%s\n' "$OUT" | grep -q "^stderr:\|exited" &&
	ok "a job that failed before its command ran says why (the wrapper's words), no exit status" ||
	not_ok "jg: $OUT"

# --- a command that outlived its walltime: the walltime, not the signal
poll 240 ended jw || not_ok "jw did not fail within 4 minutes"
run_gg status jw
printf '%s\n' "$OUT" | grep -q "^reason: *ended by walltime: its walltime (1m) ran out" &&
	ok "a command that ran out of its walltime: status says so" || not_ok "jw: $(printf '%s\n' "$OUT" | grep '^reason')"

"$GRIDGPU" clean j3 jh jg jw >/dev/null 2>&1
done_testing
