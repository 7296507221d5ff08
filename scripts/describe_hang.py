#!/usr/bin/env python3
"""Says in words what the supervisor's GET /hang answers.

Reads the hang document from http://host:port/hang (or a saved hang.json),
prints one line per group of stuck ranks and the supervisor's own summary, and
optionally saves the text it read. Exit status: 0 hung, 1 no hang (a stall,
nothing in flight and nothing completing, is printed then), 2 not a hang
document this script reads, or nothing could be read (one line saying why).

The document's keys are docs/architecture.md "Hang document"; its owner is
common/hang_document.h (the C++ reader). This script reads only the keys it
prints, and refuses a "version" other than the one it knows.
"""
import argparse
import json
import sys
import urllib.request

VERSION = 1  # common/hang_document.h kVersion; a document without the key is read the same
# --help's description; not taken from __doc__, which python -OO strips.
SUMMARY = "Says in words what the supervisor's GET /hang answers."


def load(src):
    """The document's text; OSError (URLError is one) when it cannot be read."""
    if src.startswith("http://") or src.startswith("https://"):
        with urllib.request.urlopen(src, timeout=5) as r:
            return r.read().decode("utf-8", "replace")
    with open(src, encoding="utf-8", errors="replace") as f:
        return f.read()


def ranks_text(ranks):
    return "%s %s" % ("ranks" if len(ranks) > 1 else "rank", ",".join(str(r) for r in ranks))


def describe(doc):
    """The lines to print for a hang document (a dict)."""
    parts = []
    for g in doc.get("groups") or []:
        where = g.get("operation", "?")
        if g.get("comm") is not None:
            where += " #%s on comm %s" % (g.get("seq"), g["comm"])
            if g.get("comm_name"):
                where += " (%s)" % g["comm_name"]
        parts.append("%s stuck in %s (pending %.1f s)" % (
            ranks_text(g.get("ranks") or []), where, g.get("pending_s") or 0))
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, dict)]
    for state in ("missing", "unresponsive", "exited"):
        these = [r for r in ranks if r.get("state") == state]
        if not these:
            continue
        detail = ""
        seqs = [r["last_completed_seq"] for r in these if r.get("last_completed_seq") is not None]
        if state == "missing" and seqs:
            detail = " (last completed #%s)" % ",".join(str(s) for s in seqs)
        parts.append("%s %s%s" % (ranks_text([r.get("rank") for r in these]), state, detail))
    lines = ["; ".join(parts)]
    if doc.get("summary"):
        lines.append("supervisor says: " + doc["summary"])
    return lines


def main(argv):
    parser = argparse.ArgumentParser(
        prog="describe_hang.py", description=SUMMARY,
        epilog="example: describe_hang.py http://127.0.0.1:9091/hang --save hang_live.json")
    parser.add_argument("source", metavar="URL_OR_FILE",
                        help="http://host:port/hang, or a saved hang.json")
    parser.add_argument("--save", metavar="PATH", help="also write the text read to PATH")
    args = parser.parse_args(argv[1:])
    try:
        text = load(args.source)
        if args.save:
            with open(args.save, "w") as f:
                f.write(text)
    except (OSError, ValueError) as e:  # unreachable, missing, unreadable; a bad URL
        print("%s: cannot read: %s" % (args.source, getattr(e, "reason", None) or e),
              file=sys.stderr)
        return 2
    try:
        doc = json.loads(text)
    except ValueError as e:
        print("%s: not valid JSON (%s)" % (args.source, e), file=sys.stderr)
        return 2
    if not isinstance(doc, dict) or not isinstance(doc.get("ranks"), list):
        print("%s: no \"ranks\" array: not a hang report" % args.source, file=sys.stderr)
        return 2
    version = doc.get("version", VERSION)
    if type(version) is not int or version != VERSION:
        print("%s: hang document version %s; this script reads version %d"
              % (args.source, json.dumps(version), VERSION), file=sys.stderr)
        return 2
    if doc.get("hung") is not True:
        if doc.get("stalled") is True:
            print("no hang; stalled since %s: %s" % (doc.get("stalled_since"), doc.get("summary")))
        else:
            print("no hang reported")
        return 1
    for line in describe(doc):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
