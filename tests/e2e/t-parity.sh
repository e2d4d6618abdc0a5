#!/bin/sh
# Develop here, run there (issue 46): a batch job's container is the session's.
# The same command, in `gridgpu connect S -- CMD` and in a batch job of the
# image frozen from S (`freeze --session S`, then `submit IMAGE -- CMD`, then
# `get`), prints the same: the node's /cvmfs file (site-up binds a small tree
# of the site's at /cvmfs in the node's mount namespace), the site profile's
# bind (its data area), --bind (request's and submit's), the GPU variables as
# the batch system gave them (names and values) and $HOME (the user's home of
# the node, the same path, in both).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T_TMP" || exit 1

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
gpu="" gpus=""
[ -n "${GG_TB_GPU_RTE:-}" ] && gpu="--gpu-queue $GG_TB_GPU_QUEUE --gpu-rte $GG_TB_GPU_RTE" gpus="--gpus 1"
# shellcheck disable=SC2086
check "site profile with --runtime bwrap" \
	"$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap $gpu
chmod 711 "$T_TMP"
mkdir -p sitedata bindme && echo "the site's data $$" >sitedata/note && echo "bound by the user $$" >bindme/note &&
	chmod -R a+rX sitedata bindme
check "site set tb bind: the site's data area" "$GRIDGPU" site set -q tb bind "$T_TMP/sitedata:/site"

sh "$top/tests/e2e/mkrootfs.sh" rootfs sort grep >/dev/null 2>&1
python3 "$top/tests/e2e/mkdocker.py" rootfs dev.tar
check "a docker-archive made by the test" test -s dev.tar

# what the command prints: the files, the GPU variables the batch system sets
# (the launcher's list), $HOME and whether it is the user's home of the node
# (its /etc/passwd, the node's in both)
# shellcheck disable=SC2016 # for the container's shell
CMD='cat /cvmfs/gridgpu.test/README /site/note /mnt/b/note
env | grep -E "^(CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|ROCR_VISIBLE_DEVICES|_CONDOR_AssignedGPUs|SLURM_JOB_GPUS|SLURM_STEP_GPUS)=" | sort
u=$(id -un)
while IFS=: read -r n _ _ _ _ h _; do [ "$n" = "$u" ] && ph=$h; done </etc/passwd
echo "HOME=$HOME"; [ "$HOME" = "${ph:-}" ] && echo "HOME is the home of $u"; test -d "$HOME" && echo "HOME is there"'
ph=$(getent passwd "$GG_TB_JOB_USER" | cut -d: -f6)

# shellcheck disable=SC2086
run_gg request --name par $gpus --image dev.tar --bind "$T_TMP/bindme:/mnt/b" --walltime 30m
expect_eq "request --image dev.tar reaches ready" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
run_gg connect par -- "$CMD"
S_OUT=$OUT
expect_eq "the session sees the node's /cvmfs file" "$(printf '%s\n' "$S_OUT" | sed -n 1p)" "the cvmfs of test site $GG_TB_NS"
expect_eq "... the site's bind and --bind" "$(printf '%s\n' "$S_OUT" | sed -n 2,3p | tr '\n' '|')" "the site's data $$|bound by the user $$|"
printf '%s\n' "$S_OUT" | grep -qxF "HOME=$ph" && printf '%s\n' "$S_OUT" | grep -qx "HOME is the home of $GG_TB_JOB_USER" &&
	ok "... \$HOME is the user's home of the node" || not_ok "session's \$HOME: $S_OUT"
if [ -n "$gpus" ]; then
	printf '%s\n' "$S_OUT" | grep -q '^CUDA_VISIBLE_DEVICES=.' && ok "... the GPU the batch system gave (CUDA_VISIBLE_DEVICES)" ||
		not_ok "no CUDA_VISIBLE_DEVICES in the session: $S_OUT"
fi

run_gg freeze --session par -o par.sif
expect_eq "freeze --session par" "$RC" 0
# the session ends first: the job gets the GPU the session had
"$GRIDGPU" kill par >/dev/null 2>&1
expect_fail "submit --bind with a relative path: refused as request's" 2 "--bind 'data': expected SRC[:DST], absolute paths" \
	submit par.sif --bind data -- true
# shellcheck disable=SC2086
run_gg submit par.sif --name pj $gpus --bind "$T_TMP/bindme:/mnt/b" --walltime 30m -- sh -c "$CMD"
expect_eq "submit the frozen session with --bind" "$RC" 0
run_gg get --wait --timeout 3m pj
J_OUT=$(cat pj/gridgpu-job.out 2>&1)
if [ "$J_OUT" = "$S_OUT" ]; then
	ok "the batch job prints what the session printed: /cvmfs, the site's bind, --bind, GPU variables, \$HOME"
else
	not_ok "the batch job differs from the session (get: $RC $ERR)"
	printf '%s\n' "$S_OUT" >s.out
	printf '%s\n' "$J_OUT" >j.out
	diff s.out j.out | sed 's/^/#   /'
	sed 's/^/#   err: /' pj/gridgpu-job.err 2>/dev/null | tail -n 5
fi
