#!/usr/bin/python3
"""exit-cases.py MAN: the documented errors of gridgpu(1)'s EXIT STATUS section,
one line each: STATUS<TAB>KINDS<TAB>CASE, KINDS the kinds its status names
("(kind usage)", "(kinds network, protocol, host-key)", comma-separated) and
CASE the text of one of its bullets (.IP \\(bu), the roff markup taken out and
every font change kept as *WORD* (so a test can read the names in bold). A
status without a kind, or with no case, is an error: t-exits.sh tests each
case, so the page must say them."""
import re
import sys

text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^\.SH EXIT STATUS\n(.*?)^\.SH ", text, re.M | re.S)
if not m:
    sys.exit("no EXIT STATUS section")
section = m.group(1)


def words(args):
    return [w.strip('"') for w in re.findall(r'"[^"]*"|\S+', args)]


def plain(lines):
    """Roff lines as one line of text, bold and italic words as *WORD*."""
    out = []
    for ln in lines:
        ln = ln.replace("\\-", "-").replace("\\(bu", "").replace("\\e", "\\")
        ln = re.sub(r"\\f[BI](.*?)\\f[RP]", r"*\1*", ln)
        m = re.match(r"^\.(B|I|BR|RB|BI|IB|IR|RI) (.*)$", ln)
        if not m:
            out.append(re.sub(r"^\.[A-Z]+ ?", "", ln))
        elif m.group(1) in ("B", "I"):
            out.append("*%s*" % " ".join(words(m.group(2))))
        else:  # alternating fonts, no space between
            first = 0 if m.group(1)[0] in "BI" else 1
            out.append("".join("*%s*" % w if (k + first) % 2 == 0 else w
                               for k, w in enumerate(words(m.group(2)))))
    return re.sub(r"\s+", " ", " ".join(out)).strip()


status, kinds, case, cases, bad = None, None, None, [], []
head = []
lines = section.split("\n")
i = 0
while i < len(lines):
    ln = lines[i]
    if ln == ".TP" and i + 1 < len(lines) and re.match(r"^\.B \d+$", lines[i + 1]):
        if case is not None:
            cases.append((status, kinds, plain(case)))
        case = None
        status = lines[i + 1][3:]
        kinds, head = None, []
        i += 2
        continue
    if status is not None and case is None and ln not in (".RS", ".RE") and not ln.startswith(".IP"):
        head.append(ln)
        k = re.search(r"\(kinds? ([a-z, -]+)\)", plain(head))
        if k:
            kinds = ",".join(x.strip() for x in k.group(1).split(","))
    if ln.startswith(".IP \\(bu"):
        if case is not None:
            cases.append((status, kinds, plain(case)))
        case = []
    elif ln == ".RE" or ln.startswith(".PP"):
        if case is not None:
            cases.append((status, kinds, plain(case)))
        case = None
    elif case is not None:
        case.append(ln)
    i += 1
statuses = re.findall(r"^\.TP\n\.B (\d+)$", section, re.M)
for s in statuses:
    if s != "0" and not any(c[0] == s for c in cases):
        bad.append("status %s lists no case" % s)
for s, k, c in cases:
    if not k:
        bad.append("status %s names no kind" % s)
if bad:
    sys.exit("; ".join(bad))
for s, k, c in cases:
    print("%s\t%s\t%s" % (s, k, c))
