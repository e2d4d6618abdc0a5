#!/usr/bin/python3
"""Tiny OIDC issuer for the gridgpu local test site.

Serves, over HTTPS, what A-REX needs to validate WLCG bearer tokens and what
oidc-agent needs to make an account and refresh its tokens:
  /.well-known/openid-configuration   discovery document (issuer, jwks_uri, token_endpoint)
  /jwks                               the RS256 public key as a JWK set
  /token                              POST: grant_type password, refresh_token or
                                      client_credentials, for the static clients of
                                      --clients (client_secret_basic or _post)
Tokens are signed with the key mint-token uses, with the same issuer and claims, so
A-REX accepts both.  Each token issued is logged as one line
  "token issued client=ID grant=G sub=S exp=E n=N" (never the token itself),
N counting the tokens of that client since the issuer started.

--clients is a JSON file read at each request:
  {"clients": {"ID": {"secret": S, "token_lifetime": SECONDS}},
   "users": {"NAME": {"password": P, "sub": SUB}}}

A-REX sends absolute-form request lines ("GET https://localhost:9544/jwks
HTTP/1.1", notes §7), so the request target is parsed as a URL when it is one.
The pid file is written after the socket is bound: its presence means "ready".
"""
import argparse
import base64
import json
import os
import ssl
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

SCOPES = ["openid", "offline_access", "compute.create", "compute.read",
          "compute.modify", "compute.cancel"]
DEFAULT_AUD = "https://wlcg.cern.ch/jwt/v1/any"


def b64url_uint(n):
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def load_key(jwt_key_path):
    with open(jwt_key_path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def build_documents(issuer, key, kid):
    pub = key.public_key().public_numbers()
    jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                      "n": b64url_uint(pub.n), "e": b64url_uint(pub.e)}]}
    config = {
        "issuer": issuer,
        "jwks_uri": issuer + "/jwks",
        "token_endpoint": issuer + "/token",
        "authorization_endpoint": issuer + "/authorize",
        "response_types_supported": ["code"],
        "grant_types_supported": ["password", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                  "client_secret_post"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": SCOPES,
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nbf", "scope", "wlcg.ver"],
    }
    return {
        "/.well-known/openid-configuration": json.dumps(config).encode(),
        "/jwks": json.dumps(jwks).encode(),
    }


class Minter:
    """Signs WLCG-profile JWTs (as mint-token does) and keeps refresh tokens."""

    def __init__(self, issuer, key, kid, clients_path):
        self.issuer, self.key, self.kid, self.clients_path = issuer, key, kid, clients_path
        self.lock = threading.Lock()
        self.refresh = {}   # refresh token -> (client id, sub, scope)
        self.counts = {}

    def registry(self):
        if not self.clients_path:
            return {"clients": {}, "users": {}}
        with open(self.clients_path) as f:
            return json.load(f)

    def jwt(self, sub, aud, scope, lifetime):
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        payload = {"wlcg.ver": "1.0", "iss": self.issuer, "sub": sub, "aud": aud,
                   "scope": scope, "iat": now, "nbf": now, "exp": now + lifetime,
                   "jti": secrets.token_hex(16)}
        signing_input = "%s.%s" % (b64url(json.dumps(header).encode()),
                                   b64url(json.dumps(payload).encode()))
        sig = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(sig), now + lifetime

    def grant(self, form, basic):
        """The token response (status, dict) for a POSTed form."""
        reg = self.registry()
        cid, secret = basic if basic else (form.get("client_id"), form.get("client_secret"))
        client = reg.get("clients", {}).get(cid or "")
        if not client or not secrets.compare_digest(client.get("secret", ""), secret or ""):
            return 401, {"error": "invalid_client"}
        gt = form.get("grant_type")
        want = (form.get("scope") or "").split()
        if gt == "password":
            user = reg.get("users", {}).get(form.get("username") or "")
            if not user or not secrets.compare_digest(user["password"],
                                                      form.get("password") or ""):
                return 400, {"error": "invalid_grant",
                             "error_description": "wrong user name or password"}
            sub = user["sub"]
        elif gt == "refresh_token":
            with self.lock:
                held = self.refresh.get(form.get("refresh_token") or "")
            if not held or held[0] != cid:
                return 400, {"error": "invalid_grant",
                             "error_description": "unknown refresh token"}
            sub = held[1]
            want = want or held[2].split()
        elif gt == "client_credentials":
            sub = client.get("sub", cid)
        else:
            return 400, {"error": "unsupported_grant_type"}
        scope = " ".join(s for s in (want or SCOPES) if s in SCOPES)
        aud = form.get("audience") or form.get("resource") or DEFAULT_AUD
        lifetime = int(client.get("token_lifetime", 3600))
        token, exp = self.jwt(sub, aud, scope, lifetime)
        ans = {"access_token": token, "token_type": "Bearer", "expires_in": lifetime,
               "scope": scope}
        with self.lock:
            if gt == "password":
                rt = secrets.token_urlsafe(32)
                self.refresh[rt] = (cid, sub, scope)
                ans["refresh_token"] = rt
            elif gt == "refresh_token":
                ans["refresh_token"] = form["refresh_token"]
            self.counts[cid] = n = self.counts.get(cid, 0) + 1
        sys.stderr.write("%s token issued client=%s grant=%s sub=%s exp=%d n=%d\n" % (
            time.strftime("%Y-%m-%dT%H:%M:%S"), cid, gt, sub, exp, n))
        return 200, ans


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gridgpu-test-issuer/1"
    documents = {}
    minter = None

    def setup(self):
        # TLS handshake here, in the request thread, so that a stuck client
        # cannot block the accept loop.
        self.request.settimeout(15)
        self.request.do_handshake()
        super().setup()

    def _target_path(self):
        target = self.path
        if "://" in target.split("?", 1)[0]:      # absolute-form request line
            target = urlsplit(target).path or "/"
        return target.split("?", 1)[0]

    def _send(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        body = self.documents.get(self._target_path())
        if body is None:
            self._send(404, b'{"error":"not found"}')
        else:
            self._send(200, body)

    do_HEAD = do_GET

    def _basic(self):
        auth = self.headers.get("Authorization", "")
        if not auth.lower().startswith("basic "):
            return None
        try:
            cid, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        except ValueError:
            return None
        return unquote(cid), unquote(secret)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if 0 < n < 65536 else ""
        if self._target_path() != "/token":
            self._send(404, b'{"error":"not found"}')
            return
        form = {k: v[0] for k, v in parse_qs(body).items()}
        try:
            code, ans = self.minter.grant(form, self._basic())
        except (OSError, ValueError, KeyError) as e:
            code, ans = 500, {"error": "server_error", "error_description": str(e)}
        self._send(code, json.dumps(ans).encode())

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"),
                                         self.address_string(), fmt % args))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls = None

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.tls.wrap_socket(sock, server_side=True,
                                    do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address):
        sys.stderr.write("%s %s error: %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"),
                                                client_address[0], sys.exc_info()[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="test-site state dir (identifies the process)")
    ap.add_argument("--issuer", required=True)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--jwt-key", required=True)
    ap.add_argument("--kid", required=True)
    ap.add_argument("--pidfile", required=True)
    ap.add_argument("--clients", help="static clients and users (JSON, read per request)")
    a = ap.parse_args()

    key = load_key(a.jwt_key)
    Handler.documents = build_documents(a.issuer, key, a.kid)
    Handler.minter = Minter(a.issuer, key, a.kid, a.clients)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(a.cert, a.key)
    srv = Server((a.bind, a.port), Handler)
    srv.tls = tls
    tmp = "%s.%d" % (a.pidfile, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(tmp, a.pidfile)
    sys.stderr.write("%s listening on https://%s:%d/ as %s\n" % (
        time.strftime("%Y-%m-%dT%H:%M:%S"), a.bind, a.port, a.issuer))
    srv.serve_forever()


if __name__ == "__main__":
    main()
