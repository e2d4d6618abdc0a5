#!/usr/bin/env python3
"""mkwheel.py NAME VERSION OUTDIR: writes OUTDIR/NAME-VERSION-py3-none-any.whl, a
wheel of one pure-Python package NAME (NAME/__init__.py sets VERSION), made here
with zipfile: no network, no build backend. Prints the wheel's path."""
import base64
import hashlib
import os
import sys
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def main():
    name, version, outdir = sys.argv[1:4]
    info = "%s-%s.dist-info" % (name, version)
    files = {
        name + "/__init__.py": ('"""%s: a package the gridgpu tests install."""\n'
                                'VERSION = "%s"\n' % (name, version)).encode(),
        info + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                             "Summary: a package the gridgpu tests install\n" % (name, version)).encode(),
        info + "/WHEEL": (b"Wheel-Version: 1.0\nGenerator: gridgpu-tests\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        info + "/top_level.txt": (name + "\n").encode(),
    }
    record = [record_line(n, d) for n, d in files.items()] + [info + "/RECORD,,"]
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(outdir, "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            zi = zipfile.ZipInfo(n, date_time=(2024, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, d, zipfile.ZIP_DEFLATED)
    print(path)


if __name__ == "__main__":
    main()
