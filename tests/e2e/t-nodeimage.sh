#!/bin/sh
# request --image node:/PATH checked before the queue wait where the site
# allows it (issue 53): a profile with image-check login has its last jump
# host, which sees the nodes' files (as the test site's does: one machine),
# asked over ssh whether the path is there and readable before anything is
# sent. A missing or unreadable image is a usage error (exit 2, one line) with
# no record and no job at the CE; an image that is there passes; a profile
# without the setting submits as before (the node says it, after the queue).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
REC=$XDG_STATE_HOME/gridgpu/records
# names of this run's own: a job an earlier run left at the CE is not this one's
TYPO=typo$$ PRIV=private$$
cd "$T_TMP" || exit 1
trap '"$GRIDGPU" kill there before >/dev/null 2>&1; t_cleanup' EXIT

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile" "$GRIDGPU" site add tb -q --ce "$GG_TB_CE_URL" --runtime bwrap \
	--jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1
check "site add: the same profile without the check" "$GRIDGPU" site add nocheck -q --ce "$GG_TB_CE_URL" \
	--runtime bwrap --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" --identity "$GG_TB_SSH_KEY" \
	--known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1
check "site set tb image-check login: its login host sees the nodes' files" \
	"$GRIDGPU" site set -q tb image-check login
expect_fail "site set image-check with another word: refused" 2 "expected none or login" \
	site set tb image-check yes

# the images on the node: one the job's user reads, one only root does
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs true >/dev/null 2>&1
check "freeze an image" "$GRIDGPU" freeze -q rootfs -o img.sif
chmod 644 img.sif && chmod 711 "$T_TMP"
cp img.sif private.sif && chmod 600 private.sif

# a typo: refused before anything is sent
t0=$(now_ms)
expect_fail "request --image node:/no/such.tar: refused before the queue (exit 2)" 2 \
	"image 'node:/no/such.tar': no such file on site tb's nodes (looked on its login host $GG_TB_JUMP2): check the path, or give an image from here" \
	--site tb request --name "$TYPO" --no-wait --image node:/no/such.tar --walltime 30m
ms=$(($(now_ms) - t0))
expect_eq "... one line" "$(printf '%s\n' "$ERR" | wc -l)" 1
typo_jobs=$(ce_jobs_with "\"$TYPO\"")
expect_eq "... no record and no job at the CE ($ms ms)" "$([ -e "$REC/$TYPO.json" ] && echo record)$typo_jobs" ""
# shellcheck disable=SC2086 # job ids
[ -n "$typo_jobs" ] && { ce_forget $typo_jobs; "$GRIDGPU" kill "$TYPO" >/dev/null 2>&1; }

expect_fail "request --image node:PATH not readable by the user there: refused (exit 2)" 2 \
	"image 'node:$T_TMP/private.sif': there on site tb's nodes but not readable by you" \
	--site tb request --name "$PRIV" --no-wait --image "node:$T_TMP/private.sif" --walltime 30m
priv_jobs=$(ce_jobs_with "\"$PRIV\"")
expect_eq "... no record and no job at the CE" "$([ -e "$REC/$PRIV.json" ] && echo record)$priv_jobs" ""
# shellcheck disable=SC2086 # job ids
[ -n "$priv_jobs" ] && { ce_forget $priv_jobs; "$GRIDGPU" kill "$PRIV" >/dev/null 2>&1; }

# an image that is there passes the check and is submitted
run_gg -v --site tb request --name there --no-wait --image "node:$T_TMP/img.sif" --walltime 30m
expect_eq "request --image node:PATH that is there: submitted" "$RC" 0
[ "$RC" = 0 ] || printf '%s\n' "$ERR" | sed 's/^/#   /' | tail -5
printf "%s\n" "$ERR" | grep -q "ssh hop 2/2: .*logged in" && ok "... after asking the login host (-v: ssh hop 2/2 logged in)" ||
	not_ok "-v does not show the login host asked: $(printf '%s' "$ERR" | head -5)"
check "... it has its record" test -e "$REC/there.json"
run_gg kill there
expect_eq "... kill ends it" "$RC" 0

# submit node:/PATH.sif: the same check before anything is sent
SUBT=subtypo$$
expect_fail "submit node:/no/such.sif: refused before the queue (exit 2)" 2 \
	"image 'node:/no/such.sif': no such file on site tb's nodes" \
	--site tb submit --name "$SUBT" node:/no/such.sif -- true
sub_jobs=$(ce_jobs_with "\"$SUBT\"")
expect_eq "... no record and no job at the CE" "$([ -e "$REC/$SUBT.json" ] && echo record)$sub_jobs" ""
# shellcheck disable=SC2086 # job ids
[ -n "$sub_jobs" ] && { ce_forget $sub_jobs; "$GRIDGPU" kill "$SUBT" >/dev/null 2>&1; }
run_gg --site tb submit --name subthere "node:$T_TMP/img.sif" -- true
expect_eq "submit node:PATH.sif that is there: submitted" "$RC" 0
run_gg kill subthere

# a site that does not allow the check: as before, the node finds out
run_gg --site nocheck request --name before --no-wait --image node:/no/such.tar --walltime 30m
expect_eq "without image-check: node:/no/such.tar is submitted, as before" "$RC" 0
run_gg kill before
done_testing
