#!/usr/bin/env python3
"""Type a command line and TAB into an interactive bash (on a pty, through
readline) with a completion script loaded; print the line as readline leaves it.

    bash-type.py SCRIPT LINE [PRELOAD]

PRELOAD is a file sourced first (bash-completion's bash_completion)."""
import os
import pty
import select
import sys
import time


def read(fd, quiet=0.3, limit=5.0):
    out, end, last = b"", time.time() + limit, time.time()
    while time.time() < end and time.time() - last < quiet:
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            b = os.read(fd, 4096)
        except OSError:
            break
        if not b:
            break
        out, last = out + b, time.time()
    return out


def main():
    script, line = sys.argv[1], sys.argv[2]
    preload = sys.argv[3] if len(sys.argv) > 3 else ""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(PS1="$ ", INPUTRC="/dev/null", TERM="dumb")
        os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
    setup = ". '%s'; " % preload if preload else ""
    os.write(fd, (setup + ". '%s'; bind 'set bell-style none'; echo READY\n" % script).encode())
    read(fd, quiet=1.0)
    os.write(fd, (line + "\t").encode())
    out = read(fd, quiet=1.0)
    os.write(fd, b"\x15exit\n")
    read(fd)
    os.waitpid(pid, 0)
    sys.stdout.write(out.decode(errors="replace").replace("\r", "").split("\n")[-1])


main()
