#!/usr/bin/env python3
"""Type a command line and TAB into an interactive bash (on a pty, through
readline) with a completion script loaded; print the line as readline leaves it.

    bash-type.py SCRIPT LINE [PRELOAD]

PRELOAD is a file sourced first (bash-completion's bash_completion).

No quiet-time reads: after the setup we wait for the text READY that it
prints, and after LINE and TAB we type C-x C-l, bound (bind -x) to print
readline's buffer between markers. Readline handles keys in order, so that
text comes once the completion is done; we wait for it with a deadline."""
import os
import pty
import re
import select
import signal
import sys
import time

DEADLINE = 20.0


class Pty:
    def __init__(self, fd):
        self.fd, self.buf = fd, b""

    def expect(self, pattern, limit=DEADLINE):
        """Wait for pattern (a bytes regex) in the output; the match, or exit 1
        saying what was seen when the deadline passes or bash goes away."""
        end = time.monotonic() + limit
        while True:
            m = re.search(pattern, self.buf) if pattern else None
            if m:
                self.buf = self.buf[m.end():]
                return m
            left = end - time.monotonic()
            if left <= 0:
                fail("no %r within %gs" % (pattern, limit), self.buf)
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                continue
            try:
                b = os.read(self.fd, 4096)
            except OSError:  # EIO: the other side closed
                b = b""
            if not b:
                if pattern is None:
                    return None
                fail("bash ended before %r" % pattern, self.buf)
            self.buf += b


def fail(what, seen):
    sys.stderr.write("bash-type: %s; seen: %r\n" % (what, seen[-400:]))
    os.kill(CHILD, signal.SIGKILL)
    sys.exit(1)


CHILD = 0


def main():
    global CHILD
    script, line = sys.argv[1], sys.argv[2]
    preload = sys.argv[3] if len(sys.argv) > 3 else ""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(PS1="$ ", INPUTRC="/dev/null", TERM="dumb")
        os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
    CHILD = pid
    p = Pty(fd)
    setup = ". '%s'; " % preload if preload else ""
    setup += ". '%s'; bind 'set bell-style none'; " % script
    setup += "bind -x '\"\\C-x\\C-l\": printf \"\\n<<%s>>\\n\" \"$READLINE_LINE\"'; "
    # RE""ADY: the echo of what we type does not hold the word we wait for.
    os.write(fd, (setup + 'echo RE""ADY\n').encode())
    p.expect(rb"READY\r?\n")
    os.write(fd, (line + "\t\x18\x0c").encode())
    m = p.expect(rb"<<(.*)>>\r?\n")
    os.write(fd, b"\x15exit\n")
    try:
        p.expect(None)  # until bash has gone (EOF on the pty)
    finally:
        os.waitpid(pid, 0)
    sys.stdout.write(m.group(1).decode(errors="replace"))


main()
