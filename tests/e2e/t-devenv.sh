#!/bin/sh
# The session as the development environment (issue 16): request --image with
# a docker-archive made here; every login runs inside a writable sandbox made
# from it on the node (the site's runtime: bubblewrap at the test site, as
# its batch jobs use), with the same user, the session dir and the binds asked
# for: a command, a login shell on a terminal, scp (sftp), VS Code Remote's
# way (bash reading a long script on stdin); the change stays in the sandbox.
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
export X509_USER_PROXY="$T_TMP/x509up" X509_CERT_DIR="$GG_TB_CA_DIR"
CFG=$XDG_CONFIG_HOME/gridgpu/ssh/config
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$T_TMP" || exit 1
py() { python3 -c "$@"; }
field() { py 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1],""))' "$1"; }
ce_id() { "$GRIDGPU" --json status "$1" --no-sync 2>/dev/null | field job_id; }
sbox() { echo "$GG_TB_SESSION_DIR/$(ce_id "$1")/.gridgpu/sandbox"; }

"$GRIDGPU" proxy init --cert "$GG_TB_USER_CERT" --key "$GG_TB_USER_KEY" --pass-stdin -q <"$GG_TB_USER_KEY_PASS_FILE"
gpu=""
[ -n "${GG_TB_GPU_RTE:-}" ] && gpu="--gpu-queue $GG_TB_GPU_QUEUE --gpu-rte $GG_TB_GPU_RTE"
# shellcheck disable=SC2086
check "site profile with --runtime bwrap (the test site has no apptainer)" \
	"$GRIDGPU" site add tb --ce "$GG_TB_CE_URL" --jump "$GG_TB_JUMP1" --jump "$GG_TB_JUMP2" \
	--identity "$GG_TB_SSH_KEY" --known-hosts "$GG_TB_SSH_KNOWN_HOSTS" --worker-address 127.0.0.1 \
	--runtime bwrap $gpu
# a data area the site puts in every session's container (its profile's bind)
mkdir -p "$T_TMP/sitedata" && echo "the site's data" >"$T_TMP/sitedata/note" && chmod -R a+rX "$T_TMP/sitedata"
check "site set tb bind: the site's data area" "$GRIDGPU" site set -q tb bind "$T_TMP/sitedata:/site"
expect_fail "site set tb bind with a relative path: refused" 2 "expected SRC[:DST], absolute paths" site set tb bind data

# --- the image: a docker-archive of a small root file system -------------------
# (dpkg and what it runs: the image's own package tool)
sh "$top/tests/e2e/mkrootfs.sh" rootfs bash mkdir rm grep wc touch cp head cut tar diff \
	dpkg dpkg-deb dpkg-split dpkg-query ldconfig start-stop-daemon >/dev/null 2>&1
mkdir -p rootfs/var/lib/dpkg/info rootfs/var/lib/dpkg/updates rootfs/var/lib/dpkg/triggers
: >rootfs/var/lib/dpkg/status && : >rootfs/var/lib/dpkg/available
echo "only in the first layer" >rootfs/data/gone
# a package the user installs in the session (offline: made here), its files
# the user's own, as a package installed without root is
mkdir -p pkg/DEBIAN pkg/usr/share/gg-tool
printf 'Package: gg-tool\nVersion: 1.0-%s\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: a test tool\n' \
	"$$" >pkg/DEBIAN/control
echo "gg-tool $$" >pkg/usr/share/gg-tool/VERSION
chown -R "$GG_TB_JOB_USER:$(id -g "$GG_TB_JOB_USER")" pkg && dpkg-deb --build pkg gg-tool.deb >/dev/null
python3 "$top/tests/e2e/mkdocker.py" rootfs dev.tar
check "a docker-archive made by the test" test -s dev.tar
mkdir -p "$T_TMP/bindme" && echo "bound from the node" >"$T_TMP/bindme/note" && chmod -R a+rX "$T_TMP/bindme" && chmod 711 "$T_TMP"

# --dry-run: the runtime's command line, the image staged as a SIF
run_gg request --dry-run --image dev.tar --bind "$T_TMP/bindme:/mnt/b"
printf '%s\n' "$OUT" | grep -q '"-e" "gridgpu-enter"' && printf '%s\n' "$OUT" | grep -q "^RUNTIME='bwrap'$" &&
	printf '%s\n' "$OUT" | grep -A1 "bind '$T_TMP/sitedata' '/site'" | grep -q "bind '$T_TMP/bindme' '/mnt/b'" &&
	printf '%s\n' "$OUT" | grep -q 'add "$RT" --bind "$SB" / ' &&
	ok "request --dry-run --image: the launcher gets gridgpu-enter (bwrap, the site's bind then --bind), shown" || not_ok "dry-run: $OUT $ERR"
printf '%s\n' "$OUT" | grep -q '(jobname="gridgpu-UID")' &&
	ok "request --dry-run: the job's name is gridgpu-UID (the uid comes at submission), not gridgpu-(null)" || not_ok "dry-run jobname: $OUT"

# a typo in --image: refused here (exit 2, saying how to name an image on the
# node), nothing sent: no record, no job at the CE; node:/PATH is the node's,
# handed to gridgpu-enter without the marking
REC=$XDG_STATE_HOME/gridgpu/records
expect_fail "request --image /no/such.tar: refused before the queue wait (exit 2)" 2 \
	"--image '/no/such.tar': no such file here (an image on the node: --image node:/no/such.tar)" \
	request --name typo --no-wait --image /no/such.tar --walltime 30m
expect_eq "... one line" "$(printf '%s\n' "$ERR" | wc -l)" 1
typo_jobs=$(ce_jobs_with '"typo"')
expect_eq "... no record and no job at the CE" "$([ -e "$REC/typo.json" ] && echo record)$typo_jobs" ""
# shellcheck disable=SC2086 # job ids
[ -n "$typo_jobs" ] && { ce_forget $typo_jobs; "$GRIDGPU" kill typo >/dev/null 2>&1; }
expect_fail "request --dry-run --image /no/such.tar: refused likewise" 2 "--image node:/no/such.tar" \
	request --dry-run --image /no/such.tar
run_gg request --dry-run --image node:/cvmfs/unpacked.example/dev.sif
printf '%s\n' "$OUT" | grep -q "^IMAGE='/cvmfs/unpacked.example/dev.sif'$" && [ "$RC" = 0 ] &&
	ok "request --dry-run --image node:/PATH: gridgpu-enter gets /PATH (not staged)" || not_ok "node: dry-run: $RC $OUT $ERR"

t0=$(now_ms)
run_gg request --name dev --image dev.tar --bind "$T_TMP/bindme:/mnt/b" --walltime 30m
expect_eq "request --image dev.tar (docker-archive) reaches ready ($(($(now_ms) - t0)) ms)" "$RC" 0
[ "$RC" = 0 ] || { printf '%s\n' "$ERR" | sed 's/^/#   /'; done_testing; exit 1; }
SB=$(sbox dev)
run_gg connect dev -- cat /etc/os-release
expect_eq "connect -- cat /etc/os-release: the image's (its second layer), not the node's" "$(printf '%s\n' "$OUT" | head -n 1)" "ID=gridgpu-test"
run_gg connect dev -- ls /data
expect_eq "... the whiteout of the second layer applied (/data is gone)" "$RC" 2
run_gg connect dev -- 'id -un; id -u'
expect_eq "the same user inside (name from the node, uid)" "$(printf '%s' "$OUT" | tr '\n' ' ')" "$GG_TB_JOB_USER $(id -u "$GG_TB_JOB_USER")"
run_gg connect dev -- cat /mnt/b/note
expect_eq "--bind SRC:DST: the node's path in the container" "$OUT" "bound from the node"
run_gg connect dev -- cat /site/note
expect_eq "the site profile's bind: its data area in the container" "$OUT" "the site's data"
run_gg connect dev -- 'echo "$GRIDGPU_SESSION"; test -d "$GRIDGPU_SCRATCH" && echo scratch'
expect_eq "the session's environment in the container (GRIDGPU_SESSION, GRIDGPU_SCRATCH bound)" "$(printf '%s' "$OUT" | tr '\n' ' ')" "dev scratch"
stamp="made in the session $(date +%s.%N)"
run_gg connect dev -- "mkdir -p /usr/local/share && echo '$stamp' >/usr/local/share/stamp"
expect_eq "writable: a file written into /usr/local" "$RC" 0
expect_eq "... it is in the sandbox on the node" "$(cat "$SB/usr/local/share/stamp" 2>&1)" "$stamp"
[ ! -e /usr/local/share/stamp ] && ok "... and not in the node's /usr/local" || not_ok "written to the node's /usr/local"
check "scp the package in" scp -q -F "$CFG" -o BatchMode=yes gg-tool.deb dev:/tmp/gg-tool.deb
run_gg connect dev -- 'dpkg --force-not-root -i /tmp/gg-tool.deb >/dev/null && dpkg-query -W -f "\${Status} \${Version}" gg-tool'
[ "$OUT" = "install ok installed 1.0-$$" ] && ok "dpkg -i in the session: the image's package tool installs it" ||
	not_ok "dpkg -i in the session (exit $RC): $OUT $(printf '%s' "$ERR" | head -n 5)"
expect_eq "... into the sandbox" "$(cat "$SB/usr/share/gg-tool/VERSION" 2>&1)" "gg-tool $$"
run_gg connect dev -- 'exit 7'
expect_eq "connect -- CMD: the command's exit status" "$RC" 7
head -c 100000 /dev/urandom >payload
check "scp a file in (sftp)" scp -q -F "$CFG" -o BatchMode=yes payload dev:/tmp/payload
cmp -s payload "$SB/tmp/payload" && ok "... it landed in the sandbox's /tmp (sftp ran inside)" || not_ok "scp'd file not in $SB/tmp"
check "scp it back out" scp -q -F "$CFG" -o BatchMode=yes dev:/tmp/payload back
cmp -s payload back && ok "... the same bytes" || not_ok "scp back differs"
# VS Code Remote starts its server with "bash" and a long script on stdin
{
	i=0
	while [ $i -lt 400 ]; do echo "x$i=\"$(printf '%080d' $i)\""; i=$((i + 1)); done
	echo 'cat /etc/os-release | head -n 1; echo "$x399" | wc -c; echo "bash $BASH_VERSION" | cut -c1-5'
} >vscode.sh
run_gg connect dev -- bash <vscode.sh
expect_eq "bash reading a long script on stdin (VS Code Remote's way): inside" "$(printf '%s' "$OUT" | tr '\n' ' ')" "ID=gridgpu-test 81 bash "
# an interactive login: a login shell in the container, on a terminal
out=$(python3 "$top/tests/e2e/pty-run.py" --timeout 60 -- ssh -F "$CFG" -tt dev 'cat /etc/os-release' 2>&1)
printf '%s' "$out" | grep -q "ID=gridgpu-test" && ok "ssh -tt with a command on a terminal: inside" || not_ok "tty login: $out"
# (typed on the terminal: a login shell of the image's bash, a command, exit)
out=$(python3 - "$CFG" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp("ssh", ["ssh", "-F", sys.argv[1], "-tt", "dev"])
os.write(fd, b"cat /etc/os-release; shopt -q login_shell && echo shell=login-$0; exit\n")
out, end = b"", time.time() + 60
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 1)
    if not r:
        continue
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
print(out.decode(errors="replace"))
PY
)
printf '%s' "$out" | grep -q "ID=gridgpu-test" && printf '%s' "$out" | grep -q "shell=login-/bin/bash" &&
	ok "an interactive login: a login shell (the image's bash), inside" || not_ok "interactive login: $out"

# --- freeze --session: the sandbox as it is now, less the session's own files ----
run_gg connect dev -- "echo skip >/usr/local/share/skip; mkdir -p /root/.cache && echo c >/root/.cache/c"
run_gg freeze --session dev --exclude /usr/local/share/skip -o work.sif
expect_eq "freeze --session dev (no --path): the sandbox" "$RC" 0
printf '%s' "$ERR" | grep -q "records no GPUs" && not_ok "freeze --session of a session without GPUs warned: $ERR" ||
	ok "... no warning about GPUs for a session that has none"
off=$(grep -obUa hsqs work.sif | head -n 1 | cut -d: -f1)
unsquashfs -l -o "$off" work.sif 2>/dev/null | sed 's|^squashfs-root||' >list
grep -qx /usr/local/share/stamp list && grep -qx /bin/bash list && ok "the image holds what was installed in the session" || not_ok "not in the image: $(head -c 300 list)"
! grep -q -e '^/tmp/.' -e '^/home' -e '^/root/.cache' -e '/usr/local/share/skip' list && grep -qx /tmp list &&
	ok "... and not /tmp's files, the session's mount points (/home, the session dir), /root/.cache, nor --exclude's" ||
	not_ok "left in: $(grep -e '^/tmp/.' -e '^/home' -e '^/root/.cache' -e skip list | head -5 | tr '\n' ' ')"
# compressed on the node (auto: zstd here) against a plain tar stream: fewer bytes
# over the link, the same image
run_gg --json freeze --session dev --exclude /usr/local/share/skip --link-comp none -o plain.sif
rn=$(printf '%s' "$OUT" | py 'import json,sys; d=json.load(sys.stdin); print(d["received_bytes"], d["data_bytes"])')
run_gg --json freeze --session dev --exclude /usr/local/share/skip -o packed.sif
json_valid freeze
rz=$(printf '%s' "$OUT" | py 'import json,sys; print(json.load(sys.stdin)["received_bytes"])')
# shellcheck disable=SC2086 # two numbers
set -- $rn
[ "$1" -ge "$2" ] && [ "$rz" -gt 0 ] && [ $((rz * 2)) -lt "$1" ] &&
	ok "freeze --session: compressed on the node, $rz bytes over the link instead of $1 (files: $2 bytes)" ||
	not_ok "received: plain '$rn', compressed '$rz'"
lsq() { unsquashfs -lln -o "$(grep -obUa hsqs "$1" | head -n 1 | cut -d: -f1)" "$1" 2>/dev/null | sed 's|squashfs-root||'; }
lsq plain.sif >plain.ls && lsq packed.sif >packed.ls && [ "$(wc -l <plain.ls)" -gt 10 ] && cmp -s plain.ls packed.ls &&
	ok "... the same files in both images (modes, owners, sizes, times, $(wc -l <plain.ls) entries)" || not_ok "plain.sif and packed.sif hold other files: $(diff plain.ls packed.ls | head -5)"
expect_fail "--link-comp without --session" 2 "--link-comp goes with --session" freeze --link-comp none rootfs -o x.sif
# the image is installed as plain freeze installs it: an output that exists is
# refused the same way (exit 1) and left as it was; the temp file has no name
# another program could know: the name the old code used, OUTPUT.session.PID
# (the pid of the exec'd gridgpu), is someone else's file, left alone
printf 'mine\n' >ex.sif
expect_fail "freeze --session onto an existing output: refused as plain freeze refuses it" 1 \
	"'ex.sif' exists (use --force to replace it)" freeze --session dev -o ex.sif
expect_eq "... the existing output is untouched" "$(cat ex.sif)" mine
sh -c 'printf "theirs\n" >"sq.sif.session.$$"; echo $$ >sq.pid; exec "$GRIDGPU" freeze -q --session dev -o sq.sif' 2>sq.err
SQ=sq.sif.session.$(cat sq.pid)
[ "$(cat "$SQ" 2>&1)" = theirs ] && [ -s sq.sif ] && [ -z "$(ls sq.sif.* 2>/dev/null | grep -v "^$SQ\$")" ] &&
	ok "freeze --session: a file at its old predictable temp name ($SQ) is left alone, the image made" ||
	not_ok "the file at $SQ: '$(cat "$SQ" 2>&1)', sq.sif: $(ls -l sq.sif* 2>&1 | tr '\n' ' ') $(head -c 300 sq.err)"
# --path is read in the session's container: an image without tar is named, not the node
run_gg connect dev -- 'cp /bin/tar /bin/tar.off && rm /bin/tar'
expect_eq "tar moved aside in the session's sandbox" "$RC" 0
expect_fail "freeze --session --path /usr in an image without tar: the image lacks it, not the node" 1 \
	"has no 'tar', which reading '/usr' needs inside its container: install tar in the image" \
	freeze --session dev --path /usr -o notar.sif
run_gg connect dev -- 'cp /bin/tar.off /bin/tar && rm /bin/tar.off'
expect_eq "tar back in the session's sandbox" "$RC" 0
run_gg inspect work.sif
printf '%s\n' "$OUT" | grep -q 'org.gridgpu.excluded.*\./tmp/\*.*\./usr/local/share/skip' &&
	ok "inspect shows what was excluded" || not_ok "inspect: $OUT"
run_gg submit work.sif --name batch --walltime 30m -- sh -c 'cat /usr/local/share/stamp /usr/share/gg-tool/VERSION; dpkg-query -W -f "\${Status}\n" gg-tool'
expect_eq "submit the frozen session" "$RC" 0
run_gg get --wait --timeout 3m batch
want=$(printf '%s\ngg-tool %s\ninstall ok installed' "$stamp" "$$")
[ "$(cat batch/gridgpu-job.out 2>&1)" = "$want" ] &&
	ok "the batch job sees the file written and the package installed in the session" ||
	not_ok "the batch job: $(cat batch/gridgpu-job.out batch/gridgpu-job.err 2>&1 | head -n 8) (get: $RC $ERR)"
run_gg kill dev

# --- the job's GPU environment in every login (the Slurm site) ------------------
if [ -n "${GG_TB_GPU_RTE:-}" ]; then
	PUB=$(gridgpu_for_others)
	run_gg request --name ga --gpus 1 --image dev.tar --walltime 30m
	ra=$RC
	run_gg request --name gb --gpus 1 --walltime 30m
	expect_eq "two 1-GPU sessions, one in the image, one on the node" "$ra $RC" "0 0"
	sf() { py 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$GG_TB_SESSION_DIR/$(ce_id "$1")/gridgpu-session.json" "$2"; }
	VA=$(sf ga cuda_visible_devices) VB=$(sf gb cuda_visible_devices)
	envline='echo "$CUDA_VISIBLE_DEVICES|$GPU_DEVICE_ORDINAL|$SLURM_JOB_GPUS|$GRIDGPU_GPUS|$GRIDGPU_SESSION"'
	run_gg connect ga -- "$envline"
	expect_eq "ga, a login inside the container: its GPU (Slurm's), GPU_DEVICE_ORDINAL, SLURM_JOB_GPUS, GRIDGPU_GPUS, GRIDGPU_SESSION" "$OUT" "$VA|$VA|$VA|1|ga"
	run_gg connect gb -- "$envline"
	expect_eq "gb, a login on the node: the same for its own GPU" "$OUT" "$VB|$VB|$VB|1|gb"
	[ -n "$VA" ] && [ -n "$VB" ] && [ "$VA" != "$VB" ] && ok "... disjoint GPUs ($VA, $VB)" || not_ok "GPUs a=$VA b=$VB"
	run_gg freeze --session ga -o ga.sif
	expect_eq "freeze --session ga (inside the container): the image records the session's GPU, as nvidia-smi on the node described it" \
		"$RC $("$GRIDGPU" --json inspect ga.sif | py 'import json,sys; g=json.load(sys.stdin)["provenance"]["gpus"]; print(g["cuda_visible_devices"], [(d["index"], d["name"]) for d in g["gpus"]])' 2>&1)" \
		"0 $VA [($VA, 'NVIDIA A100-SXM4-40GB')]"
	run_gg connect gb -- "$PUB" gpus --json
	expect_eq "gb: gridgpu gpus --json in a login: 1 of the node's 4 GPUs usable, the one Slurm gave" \
		"$(printf '%s' "$OUT" | py 'import json,sys; d=json.load(sys.stdin); print(d["visible"], len(d["gpus"]), ",".join(str(g["index"]) for g in d["gpus"] if g.get("visible")))' 2>&1)" "1 4 $VB" ||
		printf '%s\n' "$OUT" "$ERR" | head -c 400 | sed 's/^/#   gpus: /'
	expect_fail "freeze --session of a session without an image, no --path: says so" 1 "has no sandbox" freeze --session gb -o nb.sif
	run_gg kill ga gb
fi
run_gg clean --all
done_testing
