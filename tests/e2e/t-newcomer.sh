#!/bin/sh
# A newcomer's first day: the README's two blocks, taken from README.md between
# its newcomer markers and run as written, each command on a terminal (the pass
# phrase typed at the prompt; the shell `gridgpu connect` opens is given what
# the user would type), against the local test site: its CE URL, jump hosts and
# storage stand in for the example ones, the test user's certificate and ssh
# key are where the README says a user's are. The first block ("Getting started
# at a site"): proxy, site, doctor, a session, a shell on the node. The second
# (the day's loop of issue 53): a session in a docker-archive, a tool installed
# into it, frozen, the image submitted over an input at the storage element with
# its output written back there, status, get. Nothing is mounted: the
# newcomer's home is a plain directory of copies, and ssh is only ever run by
# gridgpu with its generated config (-F).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
PTY=$GG_TOP/tests/e2e/pty-run.py
README=$GG_TOP/README.md

# block N: the README's Nth newcomer block, its continuation lines joined: one
# command per line.
block() {
	awk -v n="$1" '/^<!-- newcomer:begin/{s=(++b == n);next} /^<!-- newcomer:end/{s=0} s && !/^```/' "$README" |
		sed -e ':a' -e '/\\$/N; s/\\\n//; ta'
}
block 1 > "$T_TMP/steps"
block 2 > "$T_TMP/steps2"
expect_eq "the README's first block has the five steps" "$(awk '{print $1" "$2}' "$T_TMP/steps" | tr '\n' ' ')" \
	"gridgpu proxy gridgpu site gridgpu doctor gridgpu request gridgpu connect "

# --help and gridgpu(1) show the same sequence.
steps_of() { grep -oE 'gridgpu (proxy init|site add|doctor|request|connect)' | awk '!s[$0]++' | tr '\n' ' '; }
want=$(steps_of < "$T_TMP/steps")
expect_eq "gridgpu --help shows the README's steps" "$("$GRIDGPU" --help | sed -n '/^Getting started/,/^$/p' | steps_of)" "$want"
expect_eq "gridgpu(1) shows the README's steps" "$(sed -n '/^\.SH GETTING STARTED/,/^\.SH [A-FH-Z]/p' "$GG_TOP/man/gridgpu.1" | sed 's/\\-/-/g' | steps_of)" "$want"

# The site's values in place of the example ones (a README that no longer
# names them fails here, not later); the local site's workers are reached as
# 127.0.0.1 by its last jump host and it runs images with bubblewrap (Debian
# has no apptainer), the two settings a real site does not need.
# The GPU mapping is the site's (the Slurm site's RTE; the fork site has only
# its one queue, which does not hand out GPUs: the request still runs).
for ex in https://ce.example.org:443/arex you@gw.example.org you@login.example.org "--gpu-rte ENV/GPU"; do
	grep -qF -- "$ex" "$T_TMP/steps" && ok "the block names $ex" || not_ok "the block no longer names $ex"
done
GPUMAP="--gpu-queue fork"
[ -z "${GG_TB_GPU_RTE:-}" ] || GPUMAP="--gpu-rte $GG_TB_GPU_RTE"
sed -e "s|https://ce.example.org:443/arex|$GG_TB_CE_URL|" -e "s|you@gw.example.org|$GG_TB_JUMP1|" \
	-e "s|you@login.example.org|$GG_TB_JUMP2|" \
	-e "s|--gpu-rte ENV/GPU|$GPUMAP|" \
	-e "s|^gridgpu site add .*|& --worker-address 127.0.0.1 --runtime bwrap|" "$T_TMP/steps" > "$T_TMP/steps.site"

# The newcomer's machine: a certificate in ~/.globus, an ssh key in ~/.ssh, the
# jump hosts' keys as the site publishes them, the CA certificates; gridgpu on
# PATH. The proxy goes to a file of this test's own (X509_USER_PROXY), not to the
# /tmp/x509up_u<uid> other tests on this machine may use.
mkdir -p "$HOME/.globus" "$HOME/.ssh" "$T_TMP/bin"
chmod 700 "$HOME/.ssh"
cp "$GG_TB_USER_CERT" "$HOME/.globus/usercert.pem"
cp "$GG_TB_USER_KEY" "$HOME/.globus/userkey.pem"
cp "$GG_TB_SSH_KEY" "$HOME/.ssh/id_ed25519"
cp "$GG_TB_SSH_KNOWN_HOSTS" "$HOME/.ssh/glasgow_known_hosts"
chmod 600 "$HOME/.globus/userkey.pem" "$HOME/.ssh/id_ed25519"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$GRIDGPU" > "$T_TMP/bin/gridgpu"
chmod 755 "$T_TMP/bin/gridgpu"
export PATH="$T_TMP/bin:$PATH" X509_CERT_DIR="$GG_TB_CA_DIR" X509_USER_PROXY="$T_TMP/x509up"

# The session request makes is glasgow-1 (SITE-N): ended however the test ends.
end_sessions() {
	"$GRIDGPU" kill glasgow-1 >/dev/null 2>&1
	t_cleanup
}
trap end_sessions EXIT

NETNS=$(ip netns exec "$GG_TB_NETNS" readlink /proc/self/ns/net)
# run_steps STEPS PREFIX TYPED: each command of STEPS on a terminal, its output
# in PREFIXi; the shell a `gridgpu connect` opens reads the file TYPED.
run_steps() {
	i=0
	while IFS= read -r step; do
		i=$((i + 1))
		case $step in
		"gridgpu connect"*)
			# The shell it opens is fed from a pipe, not a terminal: this
			# machine mounts /dev/pts without gid=5 (mode=600), so the
			# session's unprivileged sshd cannot give the pty to group tty and
			# drops a connection that asks for one ("chown(/dev/pts/N, uid, 5)
			# failed" in its log). A node whose devpts has gid=5 (systemd's
			# default) hands out terminals.
			timeout 120 sh -c "$step" < "$3" > "$2$i" 2>&1 ;;
		*) "$PTY" --timeout 300 --pass "$GG_TB_USER_KEY_PASS_FILE" -- sh -c "$step" > "$2$i" 2>&1 ;;
		esac
		rc=$?
		name=$(printf '%s' "$step" | awk '{print $1" "$2}')
		if [ "$rc" -eq 0 ]; then ok "${2##*/} $i ($name) exits 0"; else
			not_ok "${2##*/} $i ($name) exits $rc"; sed 's/^/#   /' "$2$i" | tail -15
		fi
	done < "$1"
}
printf '%s\nexit\n' 'echo "newcomer-$((6*7)) $(id -un) $(readlink /proc/self/ns/net)"' > "$T_TMP/typed"
run_steps "$T_TMP/steps.site" "$T_TMP/step" "$T_TMP/typed" < /dev/null

grep -q "pass phrase for $HOME/.globus/userkey.pem" "$T_TMP/step1" && ok "proxy init asked for the pass phrase of ~/.globus/userkey.pem at the terminal" ||
	not_ok "proxy init prompt: $(head -3 "$T_TMP/step1")"
grep -q "$(head -1 "$GG_TB_USER_KEY_PASS_FILE")" "$T_TMP/step1" && not_ok "the pass phrase was echoed" || ok "the pass phrase was not echoed"
grep -q "✗" "$T_TMP/step3" && not_ok "doctor found something to fix: $(grep '✗' "$T_TMP/step3" | head -3)" || ok "doctor: nothing to fix"
tr -d '\r' < "$T_TMP/step5" | grep -qxF "newcomer-42 $GG_TB_JOB_USER $NETNS" &&
	ok "connect: a shell on the test site's node, the command typed ran there" ||
	not_ok "connect: $(tr -d '\r' < "$T_TMP/step5" | tail -5)"
run_gg kill glasgow-1
expect_eq "the newcomer's session is glasgow-1, and kill ends it" "$RC" 0

# ---- the second block: the day's loop ----------------------------------------
expect_eq "the README's second block is the day's loop" "$(awk '{print $1" "$2}' "$T_TMP/steps2" | tr '\n' ' ')" \
	"gridgpu request gridgpu connect gridgpu freeze gridgpu check gridgpu kill gridgpu submit gridgpu status gridgpu get "
# --help and gridgpu(1) show the same loop.
loop_of() { grep -oE 'gridgpu (request|connect|freeze|check|kill|submit|status|get)' | awk '!s[$0]++' | tr '\n' ' '; }
want=$(loop_of < "$T_TMP/steps2")
[ -n "$want" ] || want="(the README has no second block)"
expect_eq "gridgpu --help shows the README's second block" "$("$GRIDGPU" --help | sed -n "/^A day's work/,/^\$/p" | loop_of)" "$want"
expect_eq "gridgpu(1) shows the README's second block" \
	"$(sed -n "/^Then a day's work/,/^\.SH /p" "$GG_TOP/man/gridgpu.1" | sed 's/\\-/-/g' | loop_of)" "$want"
if [ -z "${GG_TB_SE_ROOT:-}" ] || [ -z "${GG_TB_SE_DOOR_DAVS:-}" ]; then
	not_ok "the test site has no storage element for the second block (site-down and site-up it)"
	done_testing
	exit
fi
# The site's storage in place of the example's, with this run's data: a file
# at the storage element as the site's data management would have put it
# there, and the user's directory the output goes to.
RUN=t-newcomer-$$-$(date +%s)
for ex in root://se.example:1094//store/data/run1.root davs://se.example:1094/store/user/you/hist.root; do
	grep -qF -- "$ex" "$T_TMP/steps2" && ok "the block names $ex" || not_ok "the block no longer names $ex"
done
sed -e "s|root://se.example:1094//store/data/|$GG_TB_SE_ROOT//store/data/$RUN/|" \
	-e "s|davs://se.example:1094/store/user/you/|$GG_TB_SE_DOOR_DAVS/store/user/$RUN/|" \
	"$T_TMP/steps2" > "$T_TMP/steps2.site"
for d in "/store/data/$RUN" "/store/user/$RUN"; do
	mkdir -p "$GG_TB_SE_DATA$d"
	while [ "$d" != /store ]; do chown ggxrd: "$GG_TB_SE_DATA$d"; d=$(dirname "$d"); done
done
head -c 1048576 /dev/urandom > "$GG_TB_SE_DATA/store/data/$RUN/run1.root"
chown ggxrd: "$GG_TB_SE_DATA/store/data/$RUN/run1.root"
SUM=$(sha256sum < "$GG_TB_SE_DATA/store/data/$RUN/run1.root" | cut -d' ' -f1)

# The newcomer's image, as `docker save` writes it: a small root file system
# with a shell, tar (freeze --session streams with it) and what the analysis
# runs. In the session the newcomer installs the analysis into /usr/local.
cd "$T_TMP" || exit 1
sh "$GG_TOP/tests/e2e/mkrootfs.sh" rootfs bash tar mkdir chmod cut sha256sum >/dev/null 2>&1
python3 "$GG_TOP/tests/e2e/mkdocker.py" rootfs dev.tar
check "a docker-archive made by the test (dev.tar)" test -s dev.tar
cat > typed2 <<'EOF2'
. /etc/os-release; echo "newcomer in the image: $ID"
mkdir -p /usr/local/bin
printf '#!/bin/sh\nsha256sum "$1" | cut -d" " -f1 >"$2"\necho "analysed $1"\n' > /usr/local/bin/analyse
chmod 755 /usr/local/bin/analyse
exit
EOF2
trap '"$GRIDGPU" kill dev ana >/dev/null 2>&1; end_sessions' EXIT
run_steps "$T_TMP/steps2.site" "$T_TMP/loop" "$T_TMP/typed2" < /dev/null

tr -d '\r' < "$T_TMP/loop2" | grep -qxF "newcomer in the image: gridgpu-test" &&
	ok "connect dev: a shell inside the image (the docker-archive's os-release)" ||
	not_ok "connect dev: $(tr -d '\r' < "$T_TMP/loop2" | tail -5)"
off=$(grep -obUa hsqs work.sif | head -n 1 | cut -d: -f1)
[ -n "$off" ] && unsquashfs -cat -o "$off" work.sif /usr/local/bin/analyse > analyse.frozen 2>/dev/null &&
	grep -qF 'sha256sum "$1"' analyse.frozen && ok "the frozen image holds the tool installed in the session" ||
	not_ok "work.sif has no /usr/local/bin/analyse: $(head -c 200 analyse.frozen 2>&1)"
tr -d '\r' < "$T_TMP/loop4" | grep -qxF "the image runs it as the session dev does (exit 0)" &&
	ok "check: the frozen image runs the installed tool as the session does" ||
	not_ok "check: $(tr -d '\r' < "$T_TMP/loop4" | tail -5)"
expect_eq "get: ana/hist.root, written to storage by the job from the storage input, is the input's digest" \
	"$(cat ana/hist.root 2>&1)" "$SUM"
expect_eq "... the job ran the installed tool (its stdout)" "$(cat ana/gridgpu-job.out 2>&1)" "analysed run1.root"
tr -d '\r' < "$T_TMP/loop7" | grep -qx "name: *ana" && tr -d '\r' < "$T_TMP/loop7" | grep -q "^state: " &&
	tr -d '\r' < "$T_TMP/loop7" | grep -qF "hist.root -> $GG_TB_SE_DOOR_DAVS/store/user/$RUN/hist.root" &&
	ok "status ana: the job, its state and where its output goes" || not_ok "status ana: $(head -5 "$T_TMP/loop7")"
done_testing
