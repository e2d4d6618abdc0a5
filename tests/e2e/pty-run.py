#!/usr/bin/env python3
"""Run a command on a terminal (a pty) as a person would, answering what it asks.

    pty-run.py [--pass FILE] [--code FILE] [--timeout SECS] -- CMD...

--pass FILE: when the command asks for a pass phrase ("pass phrase" or
"passphrase" at the end of its output), type the first line of FILE (the
terminal does not echo it). --code FILE: the same when it asks for a one-time
password ("One-time password ...:", "Verification code:", as PAM modules ask). Waiting is on the text the command prints, with one
deadline for the whole run, never on the clock. Prints everything the command
wrote to the terminal and exits with the command's exit status (124 when the
deadline passed)."""
import os
import pty
import re
import select
import sys
import time

PASS_RE = re.compile(rb"pass ?phrase[^\n]*: ?$", re.I)
CODE_RE = re.compile(rb"(one-time password|verification code)[^\n]*: ?$", re.I)


def parse(argv):
    opts = {"pass": None, "code": None, "timeout": 300.0}
    i = 0
    while i < len(argv) and argv[i] != "--":
        key = argv[i].lstrip("-")
        if key not in opts or i + 1 >= len(argv):
            sys.exit("pty-run: usage: [--pass FILE] [--code FILE] [--timeout S] -- CMD...")
        opts[key] = argv[i + 1]
        i += 2
    if i + 1 >= len(argv):
        sys.exit("pty-run: no command")
    return opts, argv[i + 1:]


def main():
    opts, cmd = parse(sys.argv[1:])
    secret = None
    if opts["pass"]:
        with open(opts["pass"], "rb") as f:
            secret = f.readline().rstrip(b"\n")
    code = None
    if opts["code"]:
        with open(opts["code"], "rb") as f:
            code = f.readline().rstrip(b"\n")
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    deadline = time.time() + float(opts["timeout"])
    out = b""
    seen = 0  # output already answered
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                b = os.read(fd, 4096)
            except OSError:
                b = b""
            if not b:
                break
            out += b
        if secret is not None and PASS_RE.search(out[seen:]):
            os.write(fd, secret + b"\n")
            seen, secret = len(out), None
        if code is not None and CODE_RE.search(out[seen:]):
            os.write(fd, code + b"\n")
            seen, code = len(out), None
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.stdout.write(out.decode("utf-8", "replace"))
        sys.stdout.write("\npty-run: deadline passed\n")
        return 124
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(out.decode("utf-8", "replace"))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
