#!/usr/bin/python3
"""faultproxy.py: a stand-in for the test site's CE on 127.0.0.1 that fails on purpose.

    faultproxy.py --port PORT --dir DIR [--mode MODE] [--upstream 127.0.0.1:$GG_TB_REST_PORT]
                  [--ca-cert PEM --ca-key PEM] [--control-dir CE_CONTROL_DIR]

DIR (the test's own temporary directory) holds
    mode    the control file: one line "MODE [ARG...]"; re-read for every new
            connection and every 0.1 s; the test writes it (write a temp file
            and rename it over, so the proxy never reads half a line)
    state   the mode in force, once the listener matches it (wait for it
            after writing mode)
    pid     the proxy's pid (tests stop it with kill $(cat DIR/pid))
    log     one line per event: "listening", "accept N MODE", "job ID held", ...
    certs/  server certificates made at start from the test site's CA (and an
            untrusted CA made here); nothing of this is committed anywhere

A-REX knows the user by the TLS client certificate, which a TLS-terminating
proxy cannot pass on, so there are two kinds of modes.

Raw modes forward TCP to the real CE (the user's TLS session goes through
untouched) and inject faults at the TCP level:
    pass                  forward
    down                  nothing listens: connection refused
    blackhole             accept, never send a byte (the TLS handshake hangs)
    reset                 accept, then close at once with a TCP reset
    slow BYTES MS         forward; what the CE sends goes on in BYTES-sized
                          pieces, one every MS milliseconds
    hold-after-job M      forward until the CE holds a job whose description
                          (CE_CONTROL_DIR/job.ID.description) contains M; the
                          CE's answer to that submission and everything after it
                          is withheld ("job ID held")
    drop-after-job M      the same trigger, but the connection is closed instead
                          of passing the answer on, and the mode becomes "down"
                          (the CE died right after accepting the job)
    cut-upload M          the answer to the submission goes through; at the
                          client's next bytes (the upload of the inputs) the
                          connection is closed and the mode becomes "down"
    stall-upload M        the answer goes through; then the client's bytes are
                          no longer read: the upload hangs ("job ID stalled")

Fake modes terminate TLS here with a certificate from certs/ and answer every
request themselves, never forwarding:
    ok                    {"version":["1.0"]} for .../rest, an empty body (what
                          A-REX sends for an empty list) for anything else
    http500 [REASON...]   "HTTP/1.1 500 REASON" with an empty body (A-REX puts
                          its error text in the reason phrase)
    http503               "503 Service Unavailable" (retried by idempotent calls)
    html                  200 with an HTML page (what A-REX answers without Accept)
    notjson               200 application/json that is not JSON
    truncjson             200 application/json, the JSON text cut in the middle
    partial               Content-Length 4096, 12 bytes sent, then closed
    huge [MIB]            200 with a body of MIB MiB (default 256) that is not JSON
    garbage               binary garbage instead of HTTP, then closed
    empty                 the request is read, the connection closed, no answer
    stall                 the request is read, nothing is ever answered
    tls-wronghost         "ok", with a certificate for wronghost.invalid
    tls-expired           "ok", with a certificate that expired yesterday
    tls-untrusted         "ok", with a certificate from a CA nobody trusts
    http302               "302 Found" to another URL (A-REX never redirects)
    http400               "400 Bad Request"
    http404               "404 Not Found" for every path (a wrong CE path)
    refuse K...           a CE that takes submissions, one xRSL or several in one
                          request ("+(&...)(&...)"), and answers per job as A-REX
                          does: the Kth, ... job of each request (from 1) refused
                          (status-code 500, "Refused by the fault proxy"), the
                          others made as fpjob<N> ("submit N jobs, refused K ..."
                          in the log); uploads, kill and clean answered 200/202
    badjobid              a REST version; the submission answered 201 with a job
                          id that is not one ("../../x y")
    failed ID             job ID is FAILED; its diagnostics (errors, failed) and its
                          wrapper's gridgpu-job.exit hold
                          ESC/OSC sequences, a forged "session ready, host key
                          SHA256:... (pinned)" line and bidi overrides
    listing ID            job ID is FINISHED; its session directory lists
                          "out.txt", "..", "", ".", "a/b", a name with ESC and
                          "ok2.txt"; each file holds "data of NAME\n"
    glue2 FREE WAITING [delay MS]
                          a CE's information: GET .../rest a REST version, GET
                          .../info the GLUE2 document (JSON, as A-REX gives it:
                          numbers as strings) of a Slurm CE with shares "cpu"
                          and "gpu" (FREE free slots each), WAITING waiting
                          jobs, 64 slots, the runtime environment ENV/GPU;
                          "delay MS": each answer after MS milliseconds
    jobs PREFIX N STATE [delay MS] [hold]
                          a CE with N jobs, PREFIX0 .. PREFIX<N-1>, all in STATE
                          (A-REX's word: RUNNING, FINISHED, ...): the live list
                          (GET jobs?state=) and every bulk POST (status, info,
                          ...) answer for all of them; "delay MS": each answer
                          after MS milliseconds (a slow CE); "hold": each request
                          is read and its answer withheld until the mode no
                          longer says "hold" ("request held" in the log, then
                          "request released"); it is then answered as the mode
                          says at that moment (the scale bench, the parallel sync)
"""
import argparse
import datetime
import ipaddress
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

RAW = {"pass", "blackhole", "reset", "slow", "hold-after-job", "drop-after-job",
       "cut-upload", "stall-upload"}
FAKE = {"ok", "huge", "http500", "http503", "html", "notjson", "truncjson", "partial", "garbage",
        "empty", "stall", "tls-wronghost", "tls-expired", "tls-untrusted", "http302",
        "http400", "http404", "badjobid", "failed", "listing", "jobs", "refuse", "glue2"}

# What a hostile CE puts in a failed job's diagnostics.
HOSTILE_DIAG = ("\x1b]0;owned\x07\x1b[2J\x1b[1;1H"
                "\ngridgpu: session ready, host key SHA256:AAAAforged (pinned)\r\n"
                "ok \u202eSHA256:reversed\u202c \u2066hidden\u2069 \x9b2J\n")
# ... and in its wrapper's record of how the command ended (gridgpu-job.exit).
HOSTILE_TAIL = (b"\x1b]0;owned\x07\x1b[2J\n"
                b"gridgpu: session ready, host key SHA256:AAAAforged (pinned)\r\n"
                b"ok \xe2\x80\xaeSHA256:reversed \xff\x00 \xc2\x9b2J\n")
HOSTILE_EXIT = (b"gridgpu-job-exit 1\nexit 7\noom-kills 0\nstderr-bytes %d\nstderr\n"
                % len(HOSTILE_TAIL)) + HOSTILE_TAIL
LISTING = ["out.txt", "..", "", ".", "a/b", "x\x1b[2Jy", "ok2.txt"]


def glue2_answer(words, path):
    """(status, content type, body) of the glue2 mode."""
    import json
    p = path.split("?")[0].rstrip("/")
    if p.endswith("/rest"):
        return "200 OK", "application/json", b'{"version":["1.0"]}'
    if not p.endswith("/info"):
        return "404 Not Found", "application/json", b""
    free = words[1] if len(words) > 1 else "8"
    waiting = words[2] if len(words) > 2 else "0"
    shares = [{"Name": q, "FreeSlots": free, "RunningJobs": "0", "WaitingJobs": waiting}
              for q in ("cpu", "gpu")]
    svc = {"Name": "simulated", "RunningJobs": "0", "WaitingJobs": waiting,
           "PreLRMSWaitingJobs": "0", "ComputingShare": shares,
           "ComputingManager": {"ProductName": "SLURM", "TotalSlots": "64",
                                "ApplicationEnvironments": {"ApplicationEnvironment": [
                                    {"AppName": "ENV/GPU"}, {"AppName": "ENV/PROXY"}]},
                                "ExecutionEnvironments": {"ExecutionEnvironment": {
                                    "Platform": "amd64", "OSName": "debian",
                                    "OSVersion": "12"}}}}
    doc = {"Domains": {"AdminDomain": {"Services": {"ComputingService": svc}}}}
    return "200 OK", "application/json", json.dumps(doc).encode()


def job_answer(mode, words, method, path):
    """(status, content type, body) of the job modes: failed, listing, badjobid."""
    import json
    import re
    import urllib.parse
    jid = words[1] if len(words) > 1 else ""
    p = path.split("?")[0].rstrip("/")
    if p.endswith("/rest"):
        return "200 OK", "application/json", b'{"version":["1.0"]}'
    if mode == "badjobid":
        if "action=new" in path:
            return "201 Created", "application/json", json.dumps(
                {"job": {"id": "../../x y", "status-code": "201", "reason": "Created"}}).encode()
        return "200 OK", "application/json", b""
    state = "FAILED" if mode == "failed" else "FINISHED"
    if re.search(r"/jobs$", p):
        return "201 Created" if method == "POST" else "200 OK", "application/json", json.dumps(
            {"job": [{"id": jid, "state": state, "status-code": "200"}]}).encode()
    m = re.search(r"/jobs/([^/]+)/(diagnose|session)(/(.*))?$", p)
    if not m or m.group(1) != jid:
        return "404 Not Found", "text/plain", b""
    item = urllib.parse.unquote(m.group(4) or "")
    if m.group(2) == "diagnose" and mode == "failed" and item in ("errors", "failed"):
        return "200 OK", "text/plain", HOSTILE_DIAG.encode()
    if m.group(2) == "session" and mode == "failed" and item == "gridgpu-job.exit":
        return "200 OK", "application/octet-stream", HOSTILE_EXIT
    if m.group(2) == "session" and mode == "listing":
        if item == "":
            return "200 OK", "application/json", json.dumps({"file": LISTING}).encode()
        if item in ("out.txt", "ok2.txt"):
            return "200 OK", "application/octet-stream", ("data of %s\n" % item).encode()
    return "404 Not Found", "text/plain", b""


REFUSE = {"made": 0}


def refuse_answer(words, method, path, body):
    """(status, content type, body, log line) of the "refuse K..." mode."""
    import json
    import re
    p = path.split("?")[0].rstrip("/")
    if p.endswith("/rest"):
        return "200 OK", "application/json", b'{"version":["1.0"]}', None
    if method == "POST" and "action=new" in path:
        text = body.decode("utf-8", "replace").lstrip()
        n = len(re.findall(r"\(\s*&", text)) if text.startswith("+") else 1
        bad = {int(w) for w in words[1:]}
        jobs = []
        for i in range(1, n + 1):
            if i in bad:
                jobs.append({"status-code": "500", "reason": "Refused by the fault proxy"})
            else:
                REFUSE["made"] += 1
                jobs.append({"status-code": "201", "reason": "Created", "state": "ACCEPTING",
                             "id": "fpjob%d" % REFUSE["made"]})
        doc = {"job": jobs if n > 1 else jobs[0]}
        return "201 Created", "application/json", json.dumps(doc).encode(), \
            "submit %d jobs, refused %s" % (n, " ".join(str(i) for i in sorted(bad) if i <= n))
    if method == "POST" and ("action=kill" in path or "action=clean" in path):
        ids = [j.get("id") for j in (lambda v: v if isinstance(v, list) else [v])(
            json.loads(body or b"{}").get("job", []))]
        return "201 Created", "application/json", json.dumps(
            {"job": [{"id": i, "status-code": "202", "reason": "Queued"} for i in ids]}).encode(), \
            "%s %s" % ("kill" if "kill" in path else "clean", " ".join(ids))
    return "200 OK", "application/json", b"", None


def jobs_answer(words, path):
    """(status, content type, body) of the "jobs PREFIX N STATE ..." mode."""
    import json
    if path.split("?")[0].rstrip("/").endswith("/rest"):
        return "200 OK", "application/json", b'{"version":["1.0"]}'
    prefix, n, state = words[1], int(words[2]), words[3]
    jobs = [{"id": "%s%d" % (prefix, i), "state": state, "status-code": "200"}
            for i in range(n)]
    return "200 OK", "application/json", json.dumps({"job": jobs}).encode()


class Proxy:
    def __init__(self, a):
        self.a = a
        self.dir = a.dir
        self.mode_path = os.path.join(self.dir, "mode")
        self.log_lock = threading.Lock()
        self.n = 0
        host, port = a.upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.seen = {}  # description file -> its text (they never change)
        self.stop = False

    # ---- events and the control file -------------------------------------------------
    def log(self, msg):
        with self.log_lock:
            with open(os.path.join(self.dir, "log"), "a") as f:
                f.write(msg + "\n")

    def mode(self):
        try:
            with open(self.mode_path) as f:
                words = f.read().split()
        except OSError:
            words = []
        return words or ["pass"]

    def set_mode(self, line):
        tmp = self.mode_path + ".p"
        with open(tmp, "w") as f:
            f.write(line + "\n")
        os.rename(tmp, self.mode_path)
        self.log("mode " + line)

    def write_state(self, words):
        """DIR/state: the mode in force (tests wait for it after a change)."""
        tmp = os.path.join(self.dir, "state.p")
        with open(tmp, "w") as f:
            f.write(" ".join(words) + "\n")
        os.rename(tmp, os.path.join(self.dir, "state"))

    # ---- certificates -----------------------------------------------------------
    def make_certs(self):
        d = os.path.join(self.dir, "certs")
        os.makedirs(d, mode=0o700, exist_ok=True)
        with open(self.a.ca_cert, "rb") as f:
            ca_cert = x509.load_pem_x509_certificate(f.read())
        with open(self.a.ca_key, "rb") as f:
            ca_key = serialization.load_pem_private_key(f.read(), None)
        now = datetime.datetime.now(datetime.timezone.utc)
        day = datetime.timedelta(days=1)
        # a CA nobody trusts
        bad_key = ec.generate_private_key(ec.SECP256R1())
        bad_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "faultproxy untrusted CA")])
        bad_ca = (x509.CertificateBuilder().subject_name(bad_name).issuer_name(bad_name)
                  .public_key(bad_key.public_key()).serial_number(x509.random_serial_number())
                  .not_valid_before(now - day).not_valid_after(now + 30 * day)
                  .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                  .sign(bad_key, hashes.SHA256()))
        specs = {
            "good": (ca_cert, ca_key, "localhost", now - day, now + 30 * day),
            "wronghost": (ca_cert, ca_key, "wronghost.invalid", now - day, now + 30 * day),
            "expired": (ca_cert, ca_key, "localhost", now - 30 * day, now - day),
            "untrusted": (bad_ca, bad_key, "localhost", now - day, now + 30 * day),
        }
        self.ctx = {}
        for name, (issuer, ikey, host, nb, na) in specs.items():
            key = ec.generate_private_key(ec.SECP256R1())
            alt = [x509.DNSName(host)]
            if host == "localhost":
                alt.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
            cert = (x509.CertificateBuilder()
                    .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
                    .issuer_name(issuer.subject).public_key(key.public_key())
                    .serial_number(x509.random_serial_number())
                    .not_valid_before(nb).not_valid_after(na)
                    .add_extension(x509.SubjectAlternativeName(alt), critical=False)
                    .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                    .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                                   critical=False)
                    .sign(ikey, hashes.SHA256()))
            cp, kp = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
            with open(cp, "wb") as f:
                f.write(cert.public_bytes(serialization.Encoding.PEM))
                f.write(issuer.public_bytes(serialization.Encoding.PEM))
            fd = os.open(kp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
            c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            c.load_cert_chain(cp, kp)
            c.verify_mode = ssl.CERT_NONE
            self.ctx[name] = c

    # ---- the CE's control dir: has the marked job been created? --------------------
    def marked_job(self, marker):
        d = self.a.control_dir
        if not d:
            return None
        try:
            names = os.listdir(d)
        except OSError:
            return None
        m = marker.encode()
        young = False
        for n in names:
            if not (n.startswith("job.") and n.endswith(".description")):
                continue
            text = self.seen.get(n)
            if text is None:
                try:
                    with open(os.path.join(d, n), "rb") as f:
                        text = f.read()
                        st = os.fstat(f.fileno())
                except OSError:
                    continue
                # a file still being written is read again next time
                if time.time() - st.st_mtime > 5:
                    self.seen[n] = text
                elif m not in text and time.time() - st.st_mtime < 1:
                    young = True
            if m in text:
                return n[4:-len(".description")]
        return "young" if young else None

    def wait_marked_job(self, marker):
        """The marked job, waiting up to 0.5 s when a job is being created (its
        description may be only half written when the CE's answer passes by)."""
        end = time.time() + 0.5
        while True:
            job = self.marked_job(marker)
            if job != "young":
                return job
            if time.time() > end:
                return None
            time.sleep(0.02)

    # ---- raw modes ----------------------------------------------------------------
    def raw(self, c, words):
        mode = words[0]
        if mode == "blackhole":
            self.drain_until_closed(c)
            return
        if mode == "reset":
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
            return
        try:
            u = socket.create_connection(self.upstream, timeout=10)
        except OSError as e:
            self.log("upstream unreachable: %s" % e)
            c.close()
            return
        u.settimeout(None)
        c.settimeout(None)
        marker = words[1] if len(words) > 1 and mode not in ("pass", "slow") else None
        st = {"fired": None, "closed": False}
        lock = threading.Lock()

        def close_all():
            with lock:
                if st["closed"]:
                    return
                st["closed"] = True
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

        def up():  # client -> CE
            try:
                while True:
                    data = c.recv(65536)
                    if not data:
                        break
                    if st["fired"] and mode == "cut-upload":
                        self.log("job %s upload cut" % st["fired"])
                        self.set_mode("down")
                        break
                    if st["fired"] and mode == "stall-upload":
                        self.log("job %s stalled" % st["fired"])
                        self.drain_until_closed(c, read=False)
                        break
                    u.sendall(data)
            except OSError:
                pass
            close_all()

        def down():  # CE -> client
            try:
                while True:
                    data = u.recv(65536)
                    if not data:
                        break
                    if marker and not st["fired"]:
                        job = self.wait_marked_job(marker)
                        if job:
                            st["fired"] = job
                            if mode == "hold-after-job":
                                self.log("job %s held" % job)
                                self.drain_until_closed(c, read=False)
                                break
                            if mode == "drop-after-job":
                                self.log("job %s dropped" % job)
                                self.set_mode("down")
                                break
                            self.log("job %s answered" % job)
                    if mode == "slow":
                        step, ms = int(words[1]), int(words[2])
                        for i in range(0, len(data), step):
                            c.sendall(data[i:i + step])
                            time.sleep(ms / 1000.0)
                    else:
                        c.sendall(data)
            except OSError:
                pass
            close_all()

        t = threading.Thread(target=up, daemon=True)
        t.start()
        down()
        t.join()

    def drain_until_closed(self, c, read=True):
        """Keep a connection open, answering nothing, until the client goes away
        (or the proxy stops). With read=False the client's bytes are not read."""
        try:
            if read:
                while not self.stop:
                    r, _, _ = select.select([c], [], [], 0.2)
                    if r and not c.recv(65536):
                        break
            else:
                # POLLRDHUP tells when the client has gone even with its unread
                # bytes still queued here
                p = select.poll()
                p.register(c.fileno(), select.POLLRDHUP | select.POLLHUP | select.POLLERR)
                while not self.stop and not p.poll(200):
                    pass
        except OSError:
            pass
        try:
            c.close()
        except OSError:
            pass

    # ---- fake modes -----------------------------------------------------------------
    def read_request(self, s, keep=None):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return None
            buf += d
            if len(buf) > 1 << 20:
                return None
        head, body = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        n = 0
        for h in lines[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                n = int(v.strip())
        while len(body) < n:
            d = s.recv(65536)
            if not d:
                break
            body += d
        if keep is not None:
            keep.append(body)
        return lines[0]

    def fake(self, c, words):
        mode = words[0]
        cert = {"tls-wronghost": "wronghost", "tls-expired": "expired",
                "tls-untrusted": "untrusted"}.get(mode, "good")
        c.settimeout(30)
        try:
            s = self.ctx[cert].wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.log("tls handshake failed (%s): %s" % (mode, e))
            c.close()
            return
        try:
            while True:
                got = []
                line = self.read_request(s, got)
                if line is None:
                    break
                self.log("request %s: %s" % (mode, line))
                path = line.split(" ")[1] if " " in line else ""
                if mode == "empty":
                    break
                if mode == "stall":
                    s.settimeout(None)
                    self.drain_until_closed(s)
                    return
                if mode == "garbage":
                    s.sendall(os.urandom(3000) + b"\r\n\r\n\x00\xff garbage")
                    break
                if mode == "huge":
                    # an endless-looking answer: N MiB that are not JSON
                    mib = int(words[1]) if len(words) > 1 else 256
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n" % (mib << 20))
                    chunk = b"x" * (1 << 20)
                    try:
                        for _ in range(mib):
                            s.sendall(chunk)
                    except OSError:
                        pass
                    break
                if mode == "partial":
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              b"Content-Length: 4096\r\n\r\n{\"job\":[{\"id")
                    break
                status, ctype, body = "200 OK", "application/json", b""
                extra = ""
                if mode == "jobs":
                    words = self.jobs_wait(words, line)
                    mode = words[0]
                if mode == "glue2" and "delay" in words and words.index("delay") + 1 < len(words):
                    time.sleep(int(words[words.index("delay") + 1]) / 1000.0)
                if mode == "jobs":
                    status, ctype, body = jobs_answer(words, path)
                elif mode == "refuse":
                    status, ctype, body, note = refuse_answer(words, line.split(" ")[0], path,
                                                              got[0] if got else b"")
                    if note:
                        self.log(note)
                elif mode == "glue2":
                    status, ctype, body = glue2_answer(words, path)
                elif mode in ("badjobid", "failed", "listing"):
                    status, ctype, body = job_answer(mode, words, line.split(" ")[0], path)
                elif mode == "http302":
                    status = "302 Found"
                    extra = "Location: https://elsewhere.invalid/arex\r\n"
                elif mode == "http400":
                    status = "400 Bad Request"
                elif mode == "http404":
                    status, ctype = "404 Not Found", "text/html"
                    body = b"<html><body>Not Found</body></html>\n"
                elif mode in ("ok", "tls-wronghost", "tls-expired", "tls-untrusted"):
                    if path.split("?")[0].rstrip("/").endswith("/rest"):
                        body = b'{"version":["1.0"]}'
                elif mode == "http500":
                    status = "500 " + (" ".join(words[1:]) or "Internal Server Error")
                elif mode == "http503":
                    status = "503 Service Unavailable"
                elif mode == "html":
                    ctype = "text/html"
                    body = (b"<!DOCTYPE html><html><head><title>Maintenance</title></head>"
                            b"<body><h1>The CE is down for maintenance</h1></body></html>\n")
                elif mode == "notjson":
                    body = b"this is not JSON at all\n"
                elif mode == "truncjson":
                    body = b'{"version":["1.0"],"job":[{"id":"abc","state":"RUNN'
                s.sendall(("HTTP/1.1 %s\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n"
                           % (status, ctype, extra, len(body))).encode() + body)
        except (ssl.SSLError, OSError):
            pass
        try:
            s.close()
        except OSError:
            pass

    def jobs_wait(self, words, line):
        """The "jobs" mode's hold and delay: the mode in force when it answers."""
        if "hold" in words:
            self.log("request held: %s" % line)
            while "hold" in words and words[0] == "jobs" and not self.stop:
                time.sleep(0.05)
                words = self.mode()
            self.log("request released: %s" % line)
        if "delay" in words and words.index("delay") + 1 < len(words):
            time.sleep(int(words[words.index("delay") + 1]) / 1000.0)
        return words

    # ---- the listener -------------------------------------------------------------------
    def handle(self, c, words, n):
        try:
            if words[0] in RAW:
                self.raw(c, words)
            else:
                self.fake(c, words)
        except Exception as e:  # a fault proxy must not die of one connection
            self.log("connection %d: %r" % (n, e))
            try:
                c.close()
            except OSError:
                pass

    def listener(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.a.port))
        ls.listen(64)
        return ls

    def run(self):
        self.make_certs()
        ls = None
        with open(os.path.join(self.dir, "pid.p"), "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(os.path.join(self.dir, "pid.p"), os.path.join(self.dir, "pid"))
        announced = False
        applied = None
        while not self.stop:
            words = self.mode()
            if words[0] not in RAW and words[0] not in FAKE and words[0] != "down":
                if words != getattr(self, "unknown", None):
                    self.unknown = words
                    self.log("unknown mode %r: acting as down" % words[0])
                words = ["down"]
            if words[0] == "down" and ls:
                ls.close()
                ls = None
                self.log("stopped listening")
            elif words[0] != "down" and not ls:
                ls = self.listener()
                self.log("listening again" if announced else
                         "listening on 127.0.0.1:%d" % self.a.port)
                announced = True
            if words != applied:
                self.write_state(words)
                applied = words
            if not ls:
                time.sleep(0.1)
                continue
            r, _, _ = select.select([ls], [], [], 0.1)
            if not r:
                continue
            try:
                c, _ = ls.accept()
            except OSError:
                continue
            # the mode as it is now, not as it was before the wait
            words = self.mode()
            if words[0] not in RAW and words[0] not in FAKE:
                c.close()
                continue
            self.n += 1
            self.log("accept %d %s" % (self.n, " ".join(words)))
            threading.Thread(target=self.handle, args=(c, words, self.n), daemon=True).start()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--upstream", default="127.0.0.1:" + os.environ.get("GG_TB_REST_PORT", "9543"))
    tb = os.environ.get("GG_TB_DIR", "/tmp/gridgpu-testbed")
    p.add_argument("--ca-cert", default=os.path.join(tb, "ca", "ca.pem"))
    p.add_argument("--ca-key", default=os.path.join(tb, "ca", "ca.key"))
    p.add_argument("--control-dir", default=os.environ.get("GG_TB_CONTROL_DIR", ""))
    p.add_argument("--mode", help="the initial mode (else DIR/mode as it is, else pass)")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    if a.mode:
        with open(os.path.join(a.dir, "mode"), "w") as f:
            f.write(a.mode + "\n")
    px = Proxy(a)

    def stop(sig, frm):
        px.stop = True
    import signal
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        px.run()
    finally:
        try:
            os.unlink(os.path.join(a.dir, "pid"))
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
