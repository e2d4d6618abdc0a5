# shellcheck shell=bash
# The test site's jump host that asks for a second factor (sourced by site-up):
# "jumpotp", an sshd in the root namespace on 127.0.0.1:BASE+8 that requires
# AuthenticationMethods publickey,keyboard-interactive, the second a TOTP code
# checked by PAM (Debian's libpam-oath). The TOTP secret is made here at the
# first start (never committed), in DIR/ssh/jumpotp/users.oath (0600);
# tests/testbed/totp-code prints the code to type now. Profiles reach the site
# through it as an extra jump before jump1 (jumpotp, jump1, jump2), so the
# site's other profiles and tests are untouched.
#
# The PAM service is the sshd's program name (OpenSSH 9.2 has no
# PAMServiceName): the sshd runs as a symbolic link named gridgpu-otp-NS, and
# its stack is /etc/pam.d/gridgpu-otp-NS (recorded for site-down to remove).

totp_paths() {
	TB_OTP_PORT=$((TB_PORT_BASE + 8))
	TB_OTP=$TB_SSH/jumpotp
	TB_OTP_SERVICE=gridgpu-otp-$TB_NS
}

totp_material() {
	totp_paths
	[ -r /lib/x86_64-linux-gnu/security/pam_oath.so ] || [ -n "$(find /lib /usr/lib -name pam_oath.so 2>/dev/null | head -n 1)" ] ||
		die "libpam-oath is not installed (make deps)"
	command -v oathtool >/dev/null || die "oathtool is not installed (make deps)"
	mkdir -p "$TB_OTP"
	[ -s "$TB_OTP/ssh_host_ed25519_key" ] ||
		ssh-keygen -q -t ed25519 -N '' -C "gridgpu-testbed jumpotp" -f "$TB_OTP/ssh_host_ed25519_key"
	if [ ! -s "$TB_OTP/secret" ]; then
		umask 077
		od -An -N20 -tx1 /dev/urandom | tr -d ' \n' >"$TB_OTP/secret"
		printf 'HOTP/T30/6 %s - %s\n' "$TB_USER" "$(cat "$TB_OTP/secret")" >"$TB_OTP/users.oath"
		umask 022
	fi
	chmod 0600 "$TB_OTP/secret" "$TB_OTP/users.oath"
	sshd_config jumpotp "$TB_OTP_PORT"
	sed -i -e 's/^AuthenticationMethods .*/AuthenticationMethods publickey,keyboard-interactive/' \
		-e 's/^KbdInteractiveAuthentication .*/KbdInteractiveAuthentication yes/' \
		-e 's/^UsePAM .*/UsePAM yes/' "$TB_OTP/sshd_config"
	put "/etc/pam.d/$TB_OTP_SERVICE" 0644 <<EOP
# the gridgpu test site's TOTP jump host (tests/testbed/totp.sh; site-down removes it)
auth required pam_oath.so usersfile=$TB_OTP/users.oath window=3 digits=6
account required pam_permit.so
session required pam_permit.so
password required pam_deny.so
EOP
	note_created "/etc/pam.d/$TB_OTP_SERVICE"
	ln -sfn /usr/sbin/sshd "$TB_OTP/$TB_OTP_SERVICE"
	awk -v n="[127.0.0.1]:$TB_OTP_PORT" '{ print n, $1, $2 }' "$TB_OTP/ssh_host_ed25519_key.pub" >>"$TB_SSH/known_hosts"
	say "jumpotp: host key, TOTP secret, PAM service $TB_OTP_SERVICE"
}

totp_start() {
	local pid
	totp_paths
	if pid=$(running jumpotp); then say "jumpotp: already running (pid $pid)"; return 0; fi
	comp jumpotp
	rm -f "$C_PF"
	port_free "" "$C_PORT" jumpotp
	"${TB_ENV[@]}" "$TB_OTP/$TB_OTP_SERVICE" -f "$TB_OTP/sshd_config" \
		-E "$TB_LOG/jumpotp.log" </dev/null >>"$TB_LOG/jumpotp.out" 2>&1 9>&- ||
		die "sshd jumpotp refused to start" "$TB_LOG/jumpotp.out" "$TB_LOG/jumpotp.log"
	wait_for 5000 running jumpotp >/dev/null || die "sshd jumpotp did not come up" "$TB_LOG/jumpotp.log"
	say "jumpotp: sshd (TOTP) on 127.0.0.1:$C_PORT pid $(running jumpotp)"
}

totp_env() {
	totp_paths
	{
		echo "export GG_TB_JUMPOTP=$(sq "$TB_USER@127.0.0.1:$TB_OTP_PORT")"
		echo "export GG_TB_OTP_PORT=$TB_OTP_PORT"
		echo "export GG_TB_TOTP_CODE=$(sq "$TB_HERE/totp-code")"
	} >>"$TB_DIR/env.sh"
}
