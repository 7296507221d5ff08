"""Polls a supervisor's GET /slow every --every seconds into a JSON-lines file
(`{"t": unix s, "slow": ...}`) and asks POST /dump/timeline at the given
seconds after the first answer; ends when the supervisor stops answering
after having answered. Usage: poll.py DUMP_DIR OUT.jsonl [--dumps 60,120]"""
import argparse
import json
import os
import sys
import time
import urllib.request


def call(port, path, method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read().decode())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dump_dir")
    p.add_argument("out")
    p.add_argument("--every", type=float, default=1.0)
    p.add_argument("--dumps", default="")
    a = p.parse_args()
    dumps = sorted(float(x) for x in a.dumps.split(",") if x)
    pf = os.path.join(a.dump_dir, "supervisor.port")
    deadline = time.time() + 120
    while time.time() < deadline and not (os.path.exists(pf) and open(pf).read().strip()):
        time.sleep(0.2)
    port = int(open(pf).read())
    first = None
    misses = 0
    with open(a.out, "w") as out:
        while True:
            try:
                slow = call(port, "/slow")
                misses = 0
            except Exception:
                misses += 1
                if first is not None and misses >= 5:
                    return 0
                if first is None and time.time() > deadline:
                    return 1
                time.sleep(a.every)
                continue
            now = time.time()
            first = first or now
            out.write(json.dumps({"t": now, "slow": slow}) + "\n")
            out.flush()
            while dumps and now - first >= dumps[0]:
                dumps.pop(0)
                try:
                    d = call(port, "/dump/timeline", "POST")
                    print("dump at %.1f s: %s" % (now - first, d.get("dir")), flush=True)
                except Exception as e:
                    print("dump at %.1f s failed: %s" % (now - first, e), flush=True)
            time.sleep(a.every)


if __name__ == "__main__":
    sys.exit(main())
