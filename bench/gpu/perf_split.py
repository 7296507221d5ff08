#!/usr/bin/env python3
"""Splits a sampling profile of an A/B pairs run into its A and B steps.

Where does the time a watched step adds go? bench/gpu/overhead.py --pairs
alternates watched (A) and paused or part-off (B) steps in one process and,
with --step-log, writes each step's mode and CLOCK_MONOTONIC bounds. A
profile of the same run taken with `perf record -k CLOCK_MONOTONIC -e
cpu-clock -F FREQ` and printed with
`perf script -F comm,tid,time,ip,sym,dso --ns` is cut by those bounds here:
for each thread kind and shared object (and each symbol), the CPU time per A
step, per B step and their difference, with a standard error from the
per-step counts (DSOs) or from the sample counts (symbols, Poisson).

usage: perf script ... | perf_split.py --freq 4000 STEPLOG.rank0 [--arm paused] [--top 40]
The steps of rank 0 bound the samples of every process: the ranks step in
lockstep (a barrier before each step, collectives inside it).
"""
import argparse
import bisect
import collections
import math
import re
import sys

LINE = re.compile(r"^\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")


def thread_kind(comm):
    """pt_autograd_0 and pt_autograd_1 are one kind; so are NCCL's threads."""
    return re.sub(r"_?\d+$", "", comm) or comm


def short_dso(path):
    return path.rsplit("/", 1)[-1]


def load_steps(path, arm):
    steps = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4 or (arm and parts[0] != arm):
                continue
            steps.append((int(parts[2]), int(parts[3]), parts[1]))
    steps.sort()
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steplog")
    ap.add_argument("--freq", type=float, required=True, help="perf record -F")
    ap.add_argument("--arm", default="", help="only the steps of this arm")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--threads", default="python,pt_autograd",
                    help="thread kinds whose symbols are listed (the step's critical path)")
    args = ap.parse_args()
    samples = []
    unparsed = 0
    for line in sys.stdin:
        m = LINE.match(line)
        if not m:
            unparsed += 1
            continue
        samples.append((int(round(float(m.group(3)) * 1e9)), m.group(1), m.group(5), m.group(6)))
    if not samples:
        sys.exit("perf_split: no samples on stdin")
    # Only the steps the profile covers whole: a recording shorter than the
    # run must not dilute the per-step figures.
    t_first = min(x[0] for x in samples)
    t_last = max(x[0] for x in samples)
    steps = [st for st in load_steps(args.steplog, args.arm) if st[0] >= t_first and st[1] <= t_last]
    if not steps:
        sys.exit("perf_split: no step of %s lies within the profile" % args.steplog)
    starts = [st[0] for st in steps]
    n = collections.Counter(st[2] for st in steps)
    dur = collections.Counter()
    for st in steps:
        dur[st[2]] += st[1] - st[0]
    us_per_sample = 1e6 / args.freq
    by_dso = collections.defaultdict(lambda: collections.Counter())  # key -> step index -> samples
    by_sym = {"A": collections.Counter(), "B": collections.Counter()}
    outside = 0
    listed = set(args.threads.split(","))
    for t_ns, comm, sym, path in samples:
        i = bisect.bisect_right(starts, t_ns) - 1
        if i < 0 or t_ns >= steps[i][1]:
            outside += 1
            continue
        mode = steps[i][2]
        kind = thread_kind(comm)
        dso = short_dso(path)
        by_dso[(kind, dso)][i] += 1
        by_dso[(kind, "(all)")][i] += 1
        if kind in listed:
            by_sym[mode][(dso, sym.split("+0x")[0])] += 1

    print("steps within the profile: A %d (mean %.3f ms), B %d (mean %.3f ms); "
          "samples outside them %d, unparsed lines %d"
          % (n["A"], dur["A"] / max(n["A"], 1) / 1e6, n["B"], dur["B"] / max(n["B"], 1) / 1e6,
             outside, unparsed))
    print("CPU per step in us (A - B, +- one standard error), by thread kind and object:")
    rows = []
    for key, per_step in by_dso.items():
        vals = {"A": [], "B": []}
        for i, s in enumerate(steps):
            vals[s[2]].append(per_step.get(i, 0) * us_per_sample)
        mean = {k: sum(v) / len(v) if v else 0.0 for k, v in vals.items()}
        var = {k: (sum((x - mean[k]) ** 2 for x in v) / (len(v) - 1) if len(v) > 1 else 0.0)
               for k, v in vals.items()}
        se = math.sqrt(var["A"] / max(n["A"], 1) + var["B"] / max(n["B"], 1))
        rows.append((mean["A"] - mean["B"], key, mean["A"], mean["B"], se))
    rows.sort(key=lambda r: -abs(r[0]))
    print("%-16s %-40s %10s %10s %10s %8s" % ("thread", "object", "A us", "B us", "A-B us", "se"))
    for d, key, a, b, se in rows[:args.top]:
        print("%-16s %-40s %10.1f %10.1f %10.1f %8.1f" % (key[0], key[1][:40], a, b, d, se))
    print("\nsymbols on threads %s (A - B us per step, +- Poisson standard error):" % args.threads)
    keys = set(by_sym["A"]) | set(by_sym["B"])
    srows = []
    for k in keys:
        ca, cb = by_sym["A"][k], by_sym["B"][k]
        a = ca * us_per_sample / max(n["A"], 1)
        b = cb * us_per_sample / max(n["B"], 1)
        se = math.sqrt(ca / max(n["A"], 1) ** 2 + cb / max(n["B"], 1) ** 2) * us_per_sample
        srows.append((a - b, k, a, b, se))
    srows.sort(key=lambda r: -abs(r[0]))
    print("%-28s %-50s %9s %9s %9s %7s" % ("object", "symbol", "A us", "B us", "A-B us", "se"))
    for d, k, a, b, se in srows[:args.top]:
        print("%-28s %-50s %9.1f %9.1f %9.1f %7.1f" % (k[0][:28], k[1][:50], a, b, d, se))


if __name__ == "__main__":
    main()
