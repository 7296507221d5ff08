#!/usr/bin/env python3
"""Says in words what the supervisor's GET /hang answers.

usage: describe_hang.py URL_OR_FILE [--save PATH]
Reads the JSON from http://host:port/hang (or a saved hang.json), prints one
line per group of ranks and the supervisor's own summary, and optionally saves
the JSON it read.
"""
import json
import sys
import urllib.request


def load(src):
    if src.startswith("http://"):
        with urllib.request.urlopen(src, timeout=5) as r:
            return r.read().decode()
    with open(src) as f:
        return f.read()


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    text = load(argv[1])
    if "--save" in argv:
        with open(argv[argv.index("--save") + 1], "w") as f:
            f.write(text)
    doc = json.loads(text)
    if not doc.get("hung"):
        print("no hang reported")
        return 1
    groups = {}
    for r in doc.get("ranks", []):
        if r.get("state") == "stuck":
            op = r.get("operation") or {}
            key = (op.get("name", "?"), op.get("seq"), op.get("comm", "?"))
            groups.setdefault(key, []).append(r)
    parts = []
    for (name, seq, comm), ranks in sorted(groups.items(), key=lambda kv: kv[1][0]["rank"]):
        pending = max(r.get("pending_s", 0) for r in ranks)
        parts.append("%s %s stuck in %s #%s on comm %s (pending %.1f s)" % (
            "ranks" if len(ranks) > 1 else "rank",
            ",".join(str(r["rank"]) for r in ranks), name, seq, comm, pending))
    for state in ("missing", "unresponsive", "exited"):
        ranks = [r for r in doc.get("ranks", []) if r.get("state") == state]
        if ranks:
            detail = ""
            seqs = [r.get("last_completed_seq") for r in ranks if r.get("last_completed_seq") is not None]
            if state == "missing" and seqs:
                detail = " (last completed #%s)" % ",".join(str(s) for s in seqs)
            parts.append("rank%s %s %s%s" % ("s" if len(ranks) > 1 else "",
                                              ",".join(str(r["rank"]) for r in ranks), state, detail))
    print("; ".join(parts))
    if doc.get("summary"):
        print("supervisor says: " + doc["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
