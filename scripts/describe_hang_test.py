#!/usr/bin/env python3
"""ctest describe_hang_test: scripts/describe_hang.py says exactly what it
should for --help (also under python -OO, which strips docstrings), a real
hang.json of a sim job (testdata/hang_sim.json, written by the supervisor),
a stall, no hang, and every input it cannot use: one line, exit 2, never a
traceback."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "describe_hang.py")
failures = []


def run(args, flags=()):
    p = subprocess.run([sys.executable, *flags, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect(name, got, want):
    if got != want:
        failures.append("%s:\n  got  %r\n  want %r" % (name, got, want))


for flags in ((), ("-OO",)):
    rc, out, err = run(["--help"], flags)
    lines = out.splitlines() + ["", "", ""]
    expect("--help %s" % " ".join(flags), (rc, err, lines[0], lines[2]),
           (0, "", "usage: describe_hang.py [-h] [--save PATH] URL_OR_FILE",
            "Says in words what the supervisor's GET /hang answers."))

sample = os.path.join(HERE, "testdata", "hang_sim.json")
with tempfile.TemporaryDirectory() as tmp:
    saved = os.path.join(tmp, "saved.json")
    expect("sim hang.json", run([sample, "--save", saved]), (0, (
        "ranks 0,1,3 stuck in AllReduce #6 on comm f4b95255a6ff4864 (pending 5.9 s); "
        "rank 2 missing (last completed #5)\n"
        "supervisor says: ranks 0,1,3 stuck in AllReduce #6 on comm f4b95255a6ff4864 for 5.9 s; "
        "rank 2 missing (last completed #5 on that comm)\n"), ""))
    with open(sample) as a, open(saved) as b:
        expect("--save keeps the text read", a.read() == b.read(), True)

    def doc_file(name, doc):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    stalled = doc_file("stalled.json", {"version": 1, "hung": False, "stalled": True,
                                        "stalled_since": 1795483864, "summary": "ranks 0-3 stalled",
                                        "ranks": []})
    expect("stall", run([stalled]), (1, "no hang; stalled since 1795483864: ranks 0-3 stalled\n", ""))
    quiet = doc_file("quiet.json", {"version": 1, "hung": False, "ranks": []})
    expect("no hang", run([quiet]), (1, "no hang reported\n", ""))
    future = doc_file("v2.json", {"version": 2, "hung": True, "ranks": []})
    expect("version 2", run([future]),
           (2, "", future + ": hang document version 2; this script reads version 1\n"))
    noranks = doc_file("noranks.json", {"hung": True})
    expect("no ranks", run([noranks]), (2, "", noranks + ": no \"ranks\" array: not a hang report\n"))
    text = doc_file("text.json", "not json")
    rc, out, err = run([text])
    expect("not JSON", (rc, out, err.startswith(text + ": not valid JSON (")), (2, "", True))
    missing = os.path.join(tmp, "absent.json")
    expect("missing file", run([missing]), (2, "", "%s: cannot read: [Errno 2] No such file or "
                                            "directory: '%s'\n" % (missing, missing)))
    expect("a folder", run([tmp]), (2, "", "%s: cannot read: [Errno 21] Is a directory: '%s'\n"
                                     % (tmp, tmp)))
    # Port 1 on the loopback: nothing listens there, the connection is refused.
    expect("unreachable URL", run(["http://127.0.0.1:1/hang"]),
           (2, "", "http://127.0.0.1:1/hang: cannot read: [Errno 111] Connection refused\n"))

for f in failures:
    print("FAIL " + f)
print("PASS" if not failures else "%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
