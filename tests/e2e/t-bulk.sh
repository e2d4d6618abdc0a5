#!/bin/sh
# Shared inputs of a batch (issue 52): `submit --count N` on a site whose
# profile names a storage (output_base) puts the image there once, named by its
# SHA-256, and the CE's data staging fetches it for each job; the client sends
# the image's bytes once, not N times (its own byte count, -v), the storage
# holds one copy, every job ran the same image (its sha256 in each job's
# output), and a second batch of the same image uploads nothing. A site
# without a storage, or a storage that refuses the credential, still gets
# every job, each with its own upload.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
if [ -z "${GG_TB_SE_DOOR_DAVS:-}" ]; then
	ok "# SKIP the test site has no storage element (site-down and site-up it)"
	done_testing
	exit
fi
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
ME=$(id -un)
RUN=t-bulk-$$-$(date +%s)
DIR=/store/user/$ME/$RUN
# sent: the bytes the client sent, to the CE and to the storage (-v's own counts)
sent() { printf '%s\n' "$ERR" | sed -n 's/^\(.*[^0-9]\)\{0,1\}\([0-9][0-9]*\) bytes sent.*/\2/p' | awk '{ s += $1 } END { print s }'; }
# the storage's directory for this run, as its admin makes a user's
mkdir -p "$GG_TB_SE_DATA$DIR" "$GG_TB_SE_DATA/store/private/$RUN"
d=$DIR
while [ "$d" != /store ]; do chown ggxrd: "$GG_TB_SE_DATA$d"; d=$(dirname "$d"); done
chown ggxrd: "$GG_TB_SE_DATA/store/private/$RUN"
chmod 0555 "$GG_TB_SE_DATA/store/private/$RUN"

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
check "site profile with the storage's door as output base" "$GRIDGPU" site add tb -q \
	--ce "$GG_TB_CE_URL" --runtime bwrap --output-base "$GG_TB_SE_DOOR_DAVS$DIR/"
sh "$(dirname "$0")/mkrootfs.sh" "$T_TMP/sandbox" sha256sum >/dev/null
# a larger image, so that its bytes stand out from the requests'
head -c 3000000 /dev/urandom >"$T_TMP/sandbox/pad.bin"
check "freeze the test image" "$GRIDGPU" freeze -q "$T_TMP/sandbox" -o "$T_TMP/work.sif"
cd "$T_TMP" || exit 1
SIF=$(stat -c %s work.sif)
SUM=$(sha256sum <work.sif | cut -d' ' -f1)

run_gg -v --site tb submit work.sif --count 3 --walltime 10m -- sh -c 'sha256sum image.sif'
expect_eq "submit --count 3 with a storage: every job submitted" "$RC $(printf '%s\n' "$OUT" | wc -l)" "0 3"
S=$(sent)
[ -n "$S" ] && [ "$S" -lt $((SIF * 3 / 2)) ] &&
	ok "the client sent $S bytes for 3 jobs of a $SIF-byte image: the image once" ||
	not_ok "the client's bytes for 3 jobs of a $SIF-byte image: '$S' ($(printf '%s' "$ERR" | tail -3))"
COPIES=$(ls "$GG_TB_SE_DATA$DIR" | grep -c "^gridgpu-image-$SUM\.sif$")
expect_eq "the storage holds one copy, named by the image's SHA-256, whole" \
	"$COPIES $(stat -c %s "$GG_TB_SE_DATA$DIR/gridgpu-image-$SUM.sif" 2>&1)" "1 $SIF"
printf '%s\n' "$ERR" | grep -q "PUT https://.*/session/image.sif" &&
	not_ok "a job's session directory got the image: $(printf '%s' "$ERR" | grep 'session/image.sif' | head -1)" ||
	ok "no job's session directory got the image uploaded"
for j in $OUT; do
	run_gg get --wait --timeout 5m "$j"
	expect_eq "$j ran the shared image (its sha256, the CE staged it from the storage)" \
		"$RC $(cut -d' ' -f1 "$j/gridgpu-job.out" 2>&1)" "0 $SUM"
done

run_gg -v --site tb submit work.sif --count 2 --walltime 10m -- sh -c 'sha256sum image.sif'
S=$(sent)
expect_eq "a second batch of the same image: submitted" "$RC $(printf '%s\n' "$OUT" | wc -l)" "0 2"
[ -n "$S" ] && [ "$S" -lt $((SIF / 2)) ] && ! printf '%s\n' "$ERR" | grep -q "^gridgpu: PUT https://localhost:$GG_TB_SE_PORT" &&
	ok "a second batch of the same image uploads nothing ($S bytes sent): it is at the storage whole" ||
	not_ok "a second batch: $S bytes sent ($(printf '%s' "$ERR" | grep -i 'image' | head -3))"
SECOND=$OUT
# the storage refuses the credential: each job gets its own upload
check "a site whose output base the storage refuses to the user" "$GRIDGPU" site add ro -q \
	--ce "$GG_TB_CE_URL" --runtime bwrap --output-base "$GG_TB_SE_DOOR_DAVS/store/private/$RUN/"
run_gg -v --site ro submit work.sif --count 2 --walltime 10m -- sh -c 'sha256sum image.sif'
expect_eq "a storage that refuses: every job still submitted" "$RC $(printf '%s\n' "$OUT" | wc -l)" "0 2"
printf '%s\n' "$ERR" | grep -q "each job gets its own upload" &&
	[ "$(printf '%s\n' "$ERR" | grep -c 'PUT https://.*/session/image.sif')" = 2 ] &&
	ok "the storage refused: each job uploaded its own image, said with -v" ||
	not_ok "the storage refused: $(printf '%s' "$ERR" | grep -i 'image' | head -3)"
for j in $SECOND $OUT; do
	run_gg get --wait --timeout 5m "$j"
	expect_eq "$j ran the image (its sha256)" "$RC $(cut -d' ' -f1 "$j/gridgpu-job.out" 2>&1)" "0 $SUM"
done
"$GRIDGPU" clean -q --all >/dev/null 2>&1
rm -rf "${GG_TB_SE_DATA:?}$DIR" "${GG_TB_SE_DATA:?}/store/private/$RUN"
done_testing
