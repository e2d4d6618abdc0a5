#!/usr/bin/python3
"""The local store after a storm of gridgpu processes (used by the e2e tests):
   store-check.py REC SSHD [WANT CLEANED KILLED]
Every record parses, has the required fields and its own name, has a job id
once past "requested", has its key while live; no two records share a uid or a
job id; no temp file in the store or the SSH directory. With WANT, CLEANED and
KILLED (space-separated names), the records are exactly WANT and KILLED minus
CLEANED. Prints what is wrong ("" when nothing) and exits 1 then."""
import json, os, sys

rec, sshd = sys.argv[1:3]
bad = []
for d in (rec, sshd, os.path.join(sshd, "keys")):
    if os.path.isdir(d):
        bad += ["temp file " + os.path.join(d, n) for n in os.listdir(d) if ".tmp." in n or ".part." in n]
recs = {}
for n in sorted(os.listdir(rec)) if os.path.isdir(rec) else []:
    if not n.endswith(".json"):
        continue
    try:
        with open(os.path.join(rec, n)) as f:
            r = json.load(f)
    except Exception as e:
        bad.append("%s does not parse: %s" % (n, e))
        continue
    miss = [k for k in ("version", "kind", "name", "uid", "state", "created", "ce", "site") if k not in r]
    if miss:
        bad.append("%s lacks %s" % (n, ",".join(miss)))
    if r.get("name", "") + ".json" != n:
        bad.append(n + " holds another name")
    recs[r.get("name")] = r
    if r.get("state") not in ("requested", "killed", "failed") and not r.get("job_id"):
        bad.append("%s is %s without a job id" % (n, r.get("state")))
    key = r.get("key")
    if key and r.get("state") not in ("requested", "killed", "finished", "failed") and not os.path.exists(key):
        bad.append("%s: its key %s is missing" % (n, key))
uids = [r.get("uid") for r in recs.values()]
if len(uids) != len(set(uids)):
    bad.append("two records share a uid")
jobs = [r.get("job_id") for r in recs.values() if r.get("job_id")]
if len(jobs) != len(set(jobs)):
    bad.append("two records share a job id")
if len(sys.argv) == 6:
    want, cleaned, killed = (set(a.split()) for a in sys.argv[3:6])
    # a session killed while it was being requested keeps its (killed) record
    # until a clean removes it
    expect = (want | killed) - cleaned
    if set(recs) != expect:
        bad.append("records %s, expected %s (missing %s, extra %s)" % (len(recs), len(expect),
                   sorted(expect - set(recs)), sorted(set(recs) - expect)))
print("; ".join(bad))
sys.exit(1 if bad else 0)
