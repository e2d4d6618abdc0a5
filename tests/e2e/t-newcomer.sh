#!/bin/sh
# A newcomer's first hour: the README's first block ("Getting started at a
# site"), taken from README.md between its newcomer markers and run as written,
# each command on a terminal (the pass phrase typed at the prompt; the shell
# `gridgpu connect` opens is given a command), against the local test site:
# its CE URL and jump hosts stand in for the example ones, the test user's
# certificate and ssh key are where the README says a user's are. Nothing is
# mounted: the newcomer's home is a plain directory of copies, and ssh is only
# ever run by gridgpu with its generated config (-F).
. "$(dirname "$0")/lib.sh"
: "${GG_TB_DIR:?the test site must be up (tests/run-e2e starts it)}"
PTY=$GG_TOP/tests/e2e/pty-run.py
README=$GG_TOP/README.md

# The block, its continuation lines joined: one command per line.
awk '/^<!-- newcomer:begin/{s=1;next} /^<!-- newcomer:end/{s=0} s && !/^```/' "$README" |
	sed -e ':a' -e '/\\$/N; s/\\\n//; ta' > "$T_TMP/steps"
expect_eq "the README's first block has the five steps" "$(awk '{print $1" "$2}' "$T_TMP/steps" | tr '\n' ' ')" \
	"gridgpu proxy gridgpu site gridgpu doctor gridgpu request gridgpu connect "

# --help and gridgpu(1) show the same sequence.
steps_of() { grep -oE 'gridgpu (proxy init|site add|doctor|request|connect)' | awk '!s[$0]++' | tr '\n' ' '; }
want=$(steps_of < "$T_TMP/steps")
expect_eq "gridgpu --help shows the README's steps" "$("$GRIDGPU" --help | sed -n '/^Getting started/,/^$/p' | steps_of)" "$want"
expect_eq "gridgpu(1) shows the README's steps" "$(sed -n '/^\.SH GETTING STARTED/,/^\.SH [A-FH-Z]/p' "$GG_TOP/man/gridgpu.1" | sed 's/\\-/-/g' | steps_of)" "$want"

# The site's values in place of the example ones (a README that no longer
# names them fails here, not later); the local site's workers are reached as
# 127.0.0.1 by its last jump host, the one setting a real site does not need.
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
	-e "s|^gridgpu site add .*|& --worker-address 127.0.0.1|" "$T_TMP/steps" > "$T_TMP/steps.site"

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
i=0
while IFS= read -r step; do
	i=$((i + 1))
	case $step in
	"gridgpu connect"*)
		# The shell it opens is fed the command and exit from a pipe, not a
		# terminal: this machine mounts /dev/pts without gid=5 (mode=600), so
		# the session's unprivileged sshd cannot give the pty to group tty and
		# drops a connection that asks for one ("chown(/dev/pts/N, uid, 5)
		# failed" in its log). A node whose devpts has gid=5 (systemd's
		# default) hands out terminals.
		printf '%s\nexit\n' 'echo "newcomer-$((6*7)) $(id -un) $(readlink /proc/self/ns/net)"' |
			timeout 120 sh -c "$step" > "$T_TMP/step$i" 2>&1 ;;
	*) "$PTY" --timeout 300 --pass "$GG_TB_USER_KEY_PASS_FILE" -- sh -c "$step" > "$T_TMP/step$i" 2>&1 ;;
	esac
	rc=$?
	name=$(printf '%s' "$step" | awk '{print $1" "$2}')
	if [ "$rc" -eq 0 ]; then ok "step $i ($name) exits 0"; else
		not_ok "step $i ($name) exits $rc"; sed 's/^/#   /' "$T_TMP/step$i" | tail -15
	fi
done < "$T_TMP/steps.site"

grep -q "pass phrase for $HOME/.globus/userkey.pem" "$T_TMP/step1" && ok "proxy init asked for the pass phrase of ~/.globus/userkey.pem at the terminal" ||
	not_ok "proxy init prompt: $(head -3 "$T_TMP/step1")"
grep -q "$(head -1 "$GG_TB_USER_KEY_PASS_FILE")" "$T_TMP/step1" && not_ok "the pass phrase was echoed" || ok "the pass phrase was not echoed"
grep -q "✗" "$T_TMP/step3" && not_ok "doctor found something to fix: $(grep '✗' "$T_TMP/step3" | head -3)" || ok "doctor: nothing to fix"
tr -d '\r' < "$T_TMP/step5" | grep -qxF "newcomer-42 $GG_TB_JOB_USER $NETNS" &&
	ok "connect: a shell on the test site's node, the command typed ran there" ||
	not_ok "connect: $(tr -d '\r' < "$T_TMP/step5" | tail -5)"
run_gg kill glasgow-1
expect_eq "the newcomer's session is glasgow-1, and kill ends it" "$RC" 0
done_testing
