#!/usr/bin/env python3
"""mkdocker.py ROOTFS OUT.tar: a docker-archive (as `docker save` writes it) of a
root file system directory, in two layers: the tree, then a layer that adds
/etc/os-release (ID=gridgpu-test) and removes /data (a whiteout), so an image
that was unpacked with its layers applied is told from the bare tree."""
import hashlib
import io
import json
import os
import sys
import tarfile


def tree_layer(root):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for n in sorted(dirs) + sorted(files):
                p = os.path.join(d, n)
                t.add(p, arcname=os.path.relpath(p, root), recursive=False)
    return b.getvalue()


def top_layer():
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        data = b'ID=gridgpu-test\nNAME="gridgpu test image"\n'
        ti = tarfile.TarInfo("etc/os-release")
        ti.size, ti.mode, ti.mtime = len(data), 0o644, 1700000000
        t.addfile(ti, io.BytesIO(data))
        ti = tarfile.TarInfo(".wh.data")
        ti.mtime = 1700000000
        t.addfile(ti, io.BytesIO(b""))
    return b.getvalue()


def main():
    root, out = sys.argv[1], sys.argv[2]
    layers = [tree_layer(root), top_layer()]
    sha = lambda b: hashlib.sha256(b).hexdigest()
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/bin"]},
                      "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(r) for r in layers]}}).encode()
    members = {}
    names = []
    for r in layers:
        members[sha(r) + "/layer.tar"] = r
        names.append(sha(r) + "/layer.tar")
    members[sha(cfg) + ".json"] = cfg
    members["manifest.json"] = json.dumps([{"Config": sha(cfg) + ".json", "RepoTags": ["dev:1"], "Layers": names}]).encode()
    with tarfile.open(out, "w") as t:
        for n, b in members.items():
            ti = tarfile.TarInfo(n)
            ti.size = len(b)
            t.addfile(ti, io.BytesIO(b))


main()
