#!/bin/sh
# gridgpu proxy: init, info, destroy; the proxies checked by the peers (openssl
# verify, voms-proxy-info, arcproxy) and by the test site's ARC CE; every bad
# input refused with exit 3 and nothing written.
#
# Uses the test site's credentials when $GG_TB_DIR/env.sh is there; otherwise
# (and for what the site does not provide) a CA made here with openssl.
. "$(dirname "$0")/lib.sh"
unset X509_CERT_DIR

# ---- credentials ----------------------------------------------------------------
# make_ca DIR NAME: a CA in DIR/ca, its hashed trust dir in DIR/certificates.
make_ca() {
	d=$1
	mkdir -p "$d/ca" "$d/certificates"
	cat >"$d/ca/ca.cnf" <<EOF
[ca]
default_ca = CA_default
[CA_default]
dir = $d/ca
database = $d/ca/index.txt
new_certs_dir = $d/ca
serial = $d/ca/serial
private_key = $d/ca/ca.key
certificate = $d/ca/ca.pem
default_md = sha256
policy = policy_any
unique_subject = no
preserve = yes
email_in_dn = no
[policy_any]
domainComponent = optional
commonName = supplied
[req]
distinguished_name = dn
[dn]
[v3_ca]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[usr]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
	: >"$d/ca/index.txt"
	echo 1000 >"$d/ca/serial"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca/ca.key" -out "$d/ca/ca.pem" \
		-days 30 -subj "/DC=org/DC=example/CN=$2" -config "$d/ca/ca.cnf" -extensions v3_ca \
		2>/dev/null
	cp "$d/ca/ca.pem" "$d/certificates/"
	openssl rehash "$d/certificates" 2>/dev/null || c_rehash "$d/certificates" >/dev/null
}
# sign_user DIR KEY CN START END OUT: a user certificate from the CA in DIR.
sign_user() {
	openssl req -new -key "$2" -subj "/DC=org/DC=example/CN=$3" -out "$6.csr" \
		-config "$1/ca/ca.cnf" 2>/dev/null &&
		openssl ca -batch -notext -config "$1/ca/ca.cnf" -extensions usr -startdate "$4" \
			-enddate "$5" -in "$6.csr" -out "$6" >/dev/null 2>&1
}
udate() { date -u -d "$1" +%Y%m%d%H%M%SZ; }

OWN=$T_TMP/own
make_ca "$OWN" "gridgpu e2e CA"
make_ca "$OWN/bad" "gridgpu e2e untrusted CA"
openssl genrsa -out "$OWN/userkey-plain.pem" 2048 2>/dev/null
openssl genrsa -out "$OWN/otherkey.pem" 2048 2>/dev/null
chmod 600 "$OWN/userkey-plain.pem" "$OWN/otherkey.pem"
printf 'e2e secret\n' >"$OWN/userkey.pass"
openssl pkey -in "$OWN/userkey-plain.pem" -aes256 -passout "file:$OWN/userkey.pass" \
	-out "$OWN/userkey.pem"
chmod 600 "$OWN/userkey.pem" "$OWN/userkey.pass"
sign_user "$OWN" "$OWN/userkey-plain.pem" "gridgpu e2e User" "$(udate '-1 day')" \
	"$(udate '+20 days')" "$OWN/usercert.pem"
sign_user "$OWN" "$OWN/userkey-plain.pem" "gridgpu e2e User" "$(udate '-20 days')" \
	"$(udate '-1 day')" "$OWN/expired.pem"
sign_user "$OWN" "$OWN/userkey-plain.pem" "gridgpu e2e User" "$(udate '+1 day')" \
	"$(udate '+20 days')" "$OWN/future.pem"

if [ -n "${GG_TB_USER_CERT:-}" ]; then
	SRC="test site"
	CA_DIR=$GG_TB_CA_DIR BAD_CA_DIR=$GG_TB_BAD_CA_DIR
	CERT=$GG_TB_USER_CERT KEY=$GG_TB_USER_KEY PLAIN=$GG_TB_USER_KEY_PLAIN
	PASSFILE=$GG_TB_USER_KEY_PASS_FILE DN=$GG_TB_USER_DN
	EXP_CERT=$GG_TB_EXPIRED_CERT EXP_KEY=$GG_TB_EXPIRED_KEY
	OTHER_KEY=${GG_TB_BAD_USER_KEY:-$OWN/otherkey.pem}
else
	SRC="own CA"
	CA_DIR=$OWN/certificates BAD_CA_DIR=$OWN/bad/certificates
	CERT=$OWN/usercert.pem KEY=$OWN/userkey.pem PLAIN=$OWN/userkey-plain.pem
	PASSFILE=$OWN/userkey.pass DN="/DC=org/DC=example/CN=gridgpu e2e User"
	EXP_CERT=$OWN/expired.pem EXP_KEY=$OWN/userkey-plain.pem
	OTHER_KEY=$OWN/otherkey.pem
fi
FUT_CERT=$OWN/future.pem FUT_KEY=$OWN/userkey-plain.pem
echo "# credentials: $SRC ($CERT)"

# newdir: a fresh directory for one test, with HOME and X509_USER_PROXY inside it.
newdir() {
	D=$(mktemp -d "$T_TMP/t.XXXXXX")
	export HOME="$D/home" X509_USER_PROXY="$D/x509up"
	mkdir -p "$HOME" "$D/out"
	P=$X509_USER_PROXY
}
# nothing_written DESC: no file at all appeared in $D/out.
nothing_written() {
	if [ -z "$(ls -A "$D/out")" ] && [ ! -e "$P" ]; then ok "$1: nothing written"
	else not_ok "$1: nothing written ($(ls -A "$D/out" | tr '\n' ' '))"; fi
}
# bad DESC SUBSTRING ARGS... (stdin passed through): exit 3, message, nothing written.
bad() {
	d=$1 m=$2
	shift 2
	expect_fail "$d" 3 "$m" "$@"
	nothing_written "$d"
}
# run_env VAR=VALUE... -- ARGS...: run_gg with extra environment (POSIX sh has
# no portable per-call assignments for functions). Values must not contain spaces.
run_env() {
	_e=""
	while [ "$1" != -- ]; do _e="$_e $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $_e "$GRIDGPU" "$@" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
	OUT=$(cat "$T_TMP/.stdout")
	ERR=$(cat "$T_TMP/.stderr")
}
has() { printf '%s\n' "$OUT" | grep -qF -- "$1"; }
json() { printf '%s' "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
mode() { stat -c %a "$1"; }
ce_get() { # PROXY -> HTTP status of GET /jobs with the proxy as client certificate
	curl -s -o /dev/null -w '%{http_code}' --max-time 20 --cert "$1" --key "$1" \
		--capath "$CA_DIR" -H 'Accept: application/json' "$GG_TB_CE_URL/rest/1.0/jobs"
}
peers() { # DESC PROXY: openssl verify, voms-proxy-info, arcproxy accept it
	if openssl verify -allow_proxy_certs -CApath "$CA_DIR" -untrusted "$2" "$2" >"$T_TMP/.v" 2>&1; then
		ok "$1: openssl verify -allow_proxy_certs"
	else
		not_ok "$1: openssl verify -allow_proxy_certs ($(tail -2 "$T_TMP/.v" | tr '\n' ' '))"
	fi
	v=$(X509_CERT_DIR=$CA_DIR voms-proxy-info --all --file "$2" 2>&1)
	if printf '%s\n' "$v" | grep -q "^issuer .*: $DN" && printf '%s\n' "$v" | grep -q '^timeleft *: [1-9]'; then
		ok "$1: voms-proxy-info --all"
	else
		not_ok "$1: voms-proxy-info --all"
		printf '%s\n' "$v" | sed 's/^/#   /' | head -12
	fi
	a=$(X509_CERT_DIR=$CA_DIR arcproxy -I -P "$2" -T "$CA_DIR" 2>&1)
	if printf '%s\n' "$a" | grep -qF "Identity: $DN" && printf '%s\n' "$a" | grep -q 'RFC compliant'; then
		ok "$1: arcproxy -I"
	else
		not_ok "$1: arcproxy -I"
		printf '%s\n' "$a" | sed 's/^/#   /' | head -12
	fi
}
ce_accepts() { # DESC PROXY
	if [ -z "${GG_TB_DIR:-}" ]; then
		ok "$1: accepted by the test site's CE # SKIP no test site (GG_TB_DIR unset)"
	elif [ -z "${GG_TB_CE_URL:-}" ]; then
		not_ok "$1: accepted by the test site's CE (no $GG_TB_DIR/env.sh: is the site up?)"
	else
		code=$(ce_get "$2")
		expect_eq "$1: accepted by the test site's CE (GET /rest/1.0/jobs)" "$code" 200
	fi
}

# ---- init, info, destroy -------------------------------------------------------------
newdir
run_gg proxy init --cert "$CERT" --key "$KEY" --pass-stdin <"$PASSFILE"
expect_eq "init --pass-stdin (encrypted key) exits 0" "$RC" 0
[ -f "$P" ] && [ "$(mode "$P")" = 600 ] && ok "init writes \$X509_USER_PROXY, mode 0600" ||
	not_ok "init writes \$X509_USER_PROXY, mode 0600"
printf '%s' "$ERR" | grep -q "is valid until" && ok "init says until when" || not_ok "init says until when ($ERR)"
[ "$(find "$D" -maxdepth 1 -name 'x509up?*' | wc -l)" = 0 ] && ok "init leaves no temp file" ||
	not_ok "init leaves no temp file"
grep -q 'BEGIN RSA PRIVATE KEY' "$P" && [ "$(grep -c 'BEGIN CERTIFICATE' "$P")" = 2 ] &&
	ok "proxy file: cert, key, user cert" || not_ok "proxy file: cert, key, user cert"

run_gg proxy info
if [ "$RC" = 0 ] && has "identity  : $DN" && has "type      : RFC 3820 compliant impersonation proxy" &&
	has "strength  : 2048 bits" && has "path      : $P" && has "subject   : $DN/CN=" && has "issuer    : $DN" &&
	printf '%s\n' "$OUT" | grep -q '^timeleft  : 1[12]:[0-5][0-9]:[0-5][0-9] (until '; then
	ok "info (text)"
else
	not_ok "info (text)"; printf '%s\n' "$OUT" "$ERR" | sed 's/^/#   /'
fi
run_gg --json proxy info
json_valid proxy-info
expect_eq "info --json" "$(json 'd["identity"], d["kind"], d["bits"], d["path"] == "'"$P"'", 43000 < d["time_left"] <= 43200')" \
	"$DN proxy 2048 True True"
run_gg proxy info --exists
expect_eq "info --exists: 0 with a valid proxy" "$RC" 0
expect_eq "info --exists prints nothing" "$OUT$ERR" ""
run_gg proxy info --exists --valid 11h
expect_eq "info --exists --valid 11h: 0" "$RC" 0
run_gg proxy info --valid 13h
expect_eq "info --valid 13h: 1" "$RC" 1
run_gg proxy info --valid 11:00
expect_eq "info --valid 11:00 (voms form): 0" "$RC" 0
run_gg proxy info --left
if [ "$RC" = 0 ] && [ "$OUT" -gt 43000 ] && [ "$OUT" -le 43200 ]; then ok "info --left prints the seconds ($OUT)"
else not_ok "info --left prints the seconds (rc $RC, '$OUT')"; fi
run_gg proxy info --verify --ca-dir "$CA_DIR"
[ "$RC" = 0 ] && has "verified  : yes" && ok "info --verify" || not_ok "info --verify ($RC $ERR)"
run_gg proxy info --verify --ca-dir "$BAD_CA_DIR"
expect_eq "info --verify against another CA: exit 3" "$RC" 3
run_env "X509_CERT_DIR=$BAD_CA_DIR" -- proxy info --exists --verify
expect_eq "info --exists --verify against another CA (X509_CERT_DIR): 1" "$RC" 1
peers "proxy" "$P"
ce_accepts "proxy" "$P"

# a bearer token is shown too (expiry from the JWT, not verified)
H=$(printf '{"alg":"RS256"}' | base64 | tr '+/' '-_' | tr -d '=\n')
B=$(printf '{"exp":2000000000,"sub":"e2e-user","iss":"https://issuer.example"}' | base64 -w0 | tr '+/' '-_' | tr -d '=')
run_env "BEARER_TOKEN=$H.$B.c2ln" -- proxy info
has "token     : BEARER_TOKEN (JWT)" && has "token exp : 2033-05-18 03:33 UTC" && has "token sub : e2e-user" &&
	ok "info shows the bearer token and its exp" || not_ok "info shows the bearer token ($OUT)"
mkdir -p "$D/run"
printf '%s.%s.c2ln\n' "$H" "$B" >"$D/run/bt_u$(id -u)"
chmod 644 "$D/run/bt_u$(id -u)"
run_env "XDG_RUNTIME_DIR=$D/run" -- proxy info
[ "$RC" = 0 ] && printf '%s' "$ERR" | grep -qF "token file '$D/run/bt_u$(id -u)' is open to others (mode 0644): not used; run chmod 600" &&
	! printf '%s' "$OUT" | grep -q "^token" && ok "a token file others can read: info says why it is not used" ||
	not_ok "a token file others can read is refused in info ($RC $OUT $ERR)"
chmod 600 "$D/run/bt_u$(id -u)"
run_env "XDG_RUNTIME_DIR=$D/run" -- --json proxy info
expect_eq "info --json: token from \$XDG_RUNTIME_DIR/bt_u<uid>" "$(json 'd["token"]["source"].endswith("/bt_u'"$(id -u)"'"), d["token"]["exp"], d["token"]["jwt"]')" \
	"True 2033-05-18T03:33:20Z True"
run_env "BEARER_TOKEN=not\"a\"token" -- proxy info
[ "$RC" = 0 ] && printf '%s' "$ERR" | grep -q "not a valid bearer token" && ok "an invalid token is a warning in info" ||
	not_ok "an invalid token is a warning in info ($RC $ERR)"

# proxy of a proxy
run_gg proxy init --cert "$P" --out "$D/p2" --valid 2h --verify --ca-dir "$CA_DIR"
expect_eq "init from a proxy (proxy of a proxy), --verify" "$RC" 0
run_gg --json proxy info -f "$D/p2"
expect_eq "proxy of a proxy: identity, chain" "$(json 'd["identity"], d["chain_length"], d["issuer"].startswith("'"$DN"'/CN=")')" "$DN 2 True"
peers "proxy of a proxy" "$D/p2"
ce_accepts "proxy of a proxy" "$D/p2"

run_gg proxy destroy
[ "$RC" = 0 ] && [ ! -e "$P" ] && ok "destroy removes the proxy" || not_ok "destroy removes the proxy ($RC $ERR)"
run_gg proxy destroy
expect_eq "destroy without a proxy: 0" "$RC" 0
run_gg proxy info --exists
expect_eq "info --exists without a proxy: 1" "$RC" 1
run_gg proxy info --left
expect_eq "info --left without a proxy: 3" "$RC" 3
expect_fail "info without a proxy says so" 3 "no proxy at '$P'" proxy info
run_gg proxy destroy -f "$D/p2"
[ ! -e "$D/p2" ] && ok "destroy -f FILE" || not_ok "destroy -f FILE"

# options of init
newdir
run_gg --json proxy init --cert "$CERT" --key "$PLAIN" --out "$D/out/lim" --limited --path-length 1 --valid 90m --bits 3072
json_valid proxy-init
expect_eq "init --limited --path-length 1 --valid 90m --bits 3072 --json" \
	"$(json 'd["kind"], d["path_length"], d["bits"], 5300 < d["time_left"] <= 5400')" "limited 1 3072 True"
openssl x509 -in "$D/out/lim" -noout -text | grep -q '1.3.6.1.4.1.3536.1.1.1.9' &&
	ok "limited policy OID in the certificate" || not_ok "limited policy OID in the certificate"
peers "limited proxy" "$D/out/lim"
run_gg proxy init --cert "$CERT" --key "$PLAIN" --valid 1000d
[ "$RC" = 0 ] && printf '%s' "$ERR" | grep -q "valid until .* only" && ok "init says when the lifetime is clipped" ||
	not_ok "init says when the lifetime is clipped ($ERR)"
run_gg proxy init --cert "$CERT" --key "$PLAIN" --valid 3s
sleep 4
run_gg proxy info --exists
expect_eq "info --exists on an expired proxy: 1" "$RC" 1
run_gg proxy info --left
expect_eq "info --left on an expired proxy: 0" "$OUT" 0
run_gg proxy info
printf '%s\n' "$OUT" | grep -q '^timeleft  : 0:00:00 .*expired' && ok "info shows an expired proxy" || not_ok "info shows an expired proxy ($OUT)"

# ~/.globus discovery, PKCS#12
newdir
mkdir -p "$HOME/.globus"
cp "$CERT" "$HOME/.globus/usercert.pem"
cp "$KEY" "$HOME/.globus/userkey.pem"
chmod 600 "$HOME/.globus/userkey.pem"
run_gg proxy init --pass-stdin <"$PASSFILE"
[ "$RC" = 0 ] && [ -f "$P" ] && ok "init finds ~/.globus/usercert.pem + userkey.pem" || not_ok "init finds ~/.globus ($ERR)"
rm -f "$HOME/.globus/usercert.pem" "$HOME/.globus/userkey.pem" "$P"
openssl pkcs12 -export -in "$CERT" -inkey "$PLAIN" -passout pass:p12-secret -out "$HOME/.globus/usercred.p12"
chmod 600 "$HOME/.globus/usercred.p12"
run_gg proxy init --pass-stdin <<EOF
p12-secret
EOF
[ "$RC" = 0 ] && [ -f "$P" ] && ok "init from ~/.globus/usercred.p12 (PKCS#12)" || not_ok "init from ~/.globus/usercred.p12 ($ERR)"
peers "proxy from PKCS#12" "$P"
rm -f "$P"
run_env "X509_USER_CERT=$HOME/.globus/usercred.p12" -- proxy init --pass-stdin --out "$D/from-env" <<EOF
p12-secret
EOF
[ "$RC" = 0 ] && [ -f "$D/from-env" ] && ok "init with X509_USER_CERT naming a PKCS#12 file" || not_ok "init with X509_USER_CERT=PKCS#12 ($ERR)"
openssl pkcs12 -export -legacy -in "$CERT" -inkey "$PLAIN" -passout pass:old-secret -out "$D/legacy.p12"
chmod 600 "$D/legacy.p12"
run_gg proxy init --cert "$D/legacy.p12" --pass-stdin --out "$D/from-legacy" <<EOF
old-secret
EOF
[ "$RC" = 0 ] && [ -f "$D/from-legacy" ] && ok "init from an old PKCS#12 file (RC2, as browsers exported them)" ||
	not_ok "init from an old PKCS#12 file ($ERR)"

# the prompt on a terminal: echo off, key made meanwhile
newdir
PASS=$(cat "$PASSFILE")
out=$(python3 - "$GRIDGPU" "$CERT" "$KEY" "$PASS" "$D/out/tty" <<'EOF' 2>&1
import os, pty, sys, time, select
gg, cert, key, pw, out = sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(gg, [gg, "proxy", "init", "--cert", cert, "--key", key, "--out", out])
buf = b""
def read(until, t=10):
    global buf
    end = time.time() + t
    while until not in buf and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try: buf += os.read(fd, 4096)
            except OSError: break
read(b"pass phrase")
time.sleep(0.3)
os.write(fd, pw.encode() + b"\n")
read(b"valid until")
_, st = os.waitpid(pid, 0)
print("exit", os.waitstatus_to_exitcode(st), "echoed" if pw.encode() in buf else "not-echoed",
      "prompt" if b"Enter GRID pass phrase for" in buf else "no-prompt")
EOF
)
expect_eq "init prompts on the terminal with echo off" "$out" "exit 0 not-echoed prompt"
[ -f "$D/out/tty" ] && ok "init with a typed passphrase writes the proxy" || not_ok "init with a typed passphrase writes the proxy"

# ---- bad input: exit 3, a clear message, nothing written -------------------------------
newdir
bad "wrong passphrase" "wrong passphrase" proxy init --cert "$CERT" --key "$KEY" --out "$D/out/p" --pass-stdin <<EOF
not the passphrase
EOF
bad "key that does not match the certificate" "does not match certificate" proxy init --cert "$CERT" --key "$OTHER_KEY" --out "$D/out/p"
bad "expired certificate" "expired on" proxy init --cert "$EXP_CERT" --key "$EXP_KEY" --out "$D/out/p"
bad "certificate not valid yet" "is not valid before" proxy init --cert "$FUT_CERT" --key "$FUT_KEY" --out "$D/out/p"
cp "$PLAIN" "$D/loose.pem"
chmod 644 "$D/loose.pem"
bad "key readable by others" "accessible by others (mode 0644)" proxy init --cert "$CERT" --key "$D/loose.pem" --out "$D/out/p"
chmod 640 "$D/loose.pem"
bad "key readable by the group" "accessible by others (mode 0640)" proxy init --cert "$CERT" --key "$D/loose.pem" --out "$D/out/p"
head -c 700 "$CERT" >"$D/trunc.pem"
bad "truncated certificate" "truncated or corrupt" proxy init --cert "$D/trunc.pem" --key "$PLAIN" --out "$D/out/p"
head -c 900 "$PLAIN" >"$D/trunckey.pem"
chmod 600 "$D/trunckey.pem"
bad "truncated key" "no private key found" proxy init --cert "$CERT" --key "$D/trunckey.pem" --out "$D/out/p"
printf 'garbage\n' >"$D/garbage.pem"
bad "garbage certificate" "no certificate found" proxy init --cert "$D/garbage.pem" --key "$PLAIN" --out "$D/out/p"
bad "garbage file alone" "neither PEM nor PKCS#12" proxy init --cert "$D/garbage.pem" --out "$D/out/p"
openssl pkcs12 -export -in "$CERT" -inkey "$PLAIN" -passout pass:right -out "$D/cred.p12"
chmod 600 "$D/cred.p12"
bad "PKCS#12 with a wrong password" "wrong passphrase" proxy init --cert "$D/cred.p12" --out "$D/out/p" --pass-stdin <<EOF
wrong
EOF
expect_fail "--valid that cannot be parsed is a usage error (2)" 2 "invalid duration 'garbage'" proxy init --cert "$CERT" --key "$PLAIN" --out "$D/out/p" --valid garbage
nothing_written "--valid that cannot be parsed"
expect_fail "info --valid that cannot be parsed" 2 "invalid duration" proxy info --valid 5x
bad "--verify against another CA" "verifying" proxy init --cert "$CERT" --key "$PLAIN" --out "$D/out/p" --verify --ca-dir "$BAD_CA_DIR"
setsid -w sh -c '"$@" </dev/null' sh "$GRIDGPU" proxy init --cert "$CERT" --key "$KEY" --out "$D/out/p" \
	>"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
RC=$?
[ "$RC" = 3 ] && grep -q "no terminal" "$T_TMP/.stderr" && ok "no terminal and no --pass-stdin: exit 3" ||
	not_ok "no terminal and no --pass-stdin: exit 3 ($RC $(cat "$T_TMP/.stderr"))"
nothing_written "no terminal"
bad "no certificate anywhere" "no user certificate" proxy init --out "$D/out/p"

# an output directory we cannot write (as an unprivileged user when we are root)
mkdir -p "$D/ro"
chmod 555 "$D/ro"
if [ "$(id -u)" = 0 ]; then
	chmod 711 "$T_TMP" "$D"
	mkdir -p "$D/nob"
	cp "$CERT" "$D/nob/cert.pem"
	cp "$PLAIN" "$D/nob/key.pem"
	chown -R 65534:65534 "$D/nob"
	chmod 600 "$D/nob/key.pem"
	setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$D/nob" "$(gridgpu_for_others)" proxy init \
		--cert "$D/nob/cert.pem" --key "$D/nob/key.pem" --out "$D/ro/p" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
else
	"$GRIDGPU" proxy init --cert "$CERT" --key "$PLAIN" --out "$D/ro/p" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?
fi
[ "$RC" = 3 ] && grep -q "cannot write proxy '$D/ro/p'.*Permission denied" "$T_TMP/.stderr" &&
	ok "output directory not writable: exit 3" || not_ok "output directory not writable ($RC $(cat "$T_TMP/.stderr"))"
[ -z "$(ls -A "$D/ro")" ] && ok "output directory not writable: nothing written" || not_ok "output directory not writable: nothing written"

# an existing proxy file owned by someone else
if [ "$(id -u)" = 0 ]; then
	printf 'not yours\n' >"$D/out/theirs"
	chown 65534:65534 "$D/out/theirs"
	expect_fail "existing proxy owned by another user" 3 "owned by uid 65534" proxy init --cert "$CERT" --key "$PLAIN" --out "$D/out/theirs"
	[ "$(cat "$D/out/theirs")" = "not yours" ] && [ "$(ls -A "$D/out")" = theirs ] &&
		ok "existing proxy owned by another user: untouched" || not_ok "existing proxy owned by another user: untouched"
	expect_fail "destroy refuses a proxy owned by another user" 3 "owned by uid 65534" proxy destroy -f "$D/out/theirs"
else
	expect_fail "existing proxy owned by another user" 3 "owned by uid 0" proxy init --cert "$CERT" --key "$PLAIN" --out /etc/passwd
fi

# usage errors are exit 2
expect_fail "init --bits 100 is a usage error" 2 "--bits" proxy init --bits 100
expect_fail "unknown subcommand" 2 "unknown sub-command 'renew'" proxy renew
run_gg help proxy
expect_eq "help proxy" "$RC" 0
done_testing
