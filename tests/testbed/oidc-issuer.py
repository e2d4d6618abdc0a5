#!/usr/bin/python3
"""Tiny OIDC issuer for the gridgpu local test site.

Serves, over HTTPS, only what A-REX needs to validate WLCG bearer tokens:
  /.well-known/openid-configuration   discovery document (issuer, jwks_uri)
  /jwks                               the RS256 public key as a JWK set
Tokens themselves are minted offline by tests/testbed/mint-token with the same key.

A-REX sends absolute-form request lines ("GET https://localhost:9544/jwks
HTTP/1.1", notes §7), so the request target is parsed as a URL when it is one.
The pid file is written after the socket is bound: its presence means "ready".
"""
import argparse
import base64
import json
import os
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization


def b64url_uint(n):
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def build_documents(issuer, jwt_key_path, kid):
    with open(jwt_key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    pub = key.public_key().public_numbers()
    jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                      "n": b64url_uint(pub.n), "e": b64url_uint(pub.e)}]}
    config = {
        "issuer": issuer,
        "jwks_uri": issuer + "/jwks",
        "token_endpoint": issuer + "/token",
        "authorization_endpoint": issuer + "/authorize",
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "compute.create", "compute.read",
                             "compute.modify", "compute.cancel"],
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nbf", "scope", "wlcg.ver"],
    }
    return {
        "/.well-known/openid-configuration": json.dumps(config).encode(),
        "/jwks": json.dumps(jwks).encode(),
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gridgpu-test-issuer/1"
    documents = {}

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
    a = ap.parse_args()

    Handler.documents = build_documents(a.issuer, a.jwt_key, a.kid)
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
