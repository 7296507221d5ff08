#!/usr/bin/env python3
"""Whole-job overhead of xpu-timer, the way a user sees it.

The same unmodified training script (bench/gpu/workloads/) runs as a whole job
under plain `torchrun` ("bare") and under `xpu_timer_supervisor -- torchrun`
(and other arms: the supervisor with settings changed through the
environment), whole jobs alternated: round r runs every arm once, in an order
rotated by r and reversed on odd rounds, so slow drift of the machine (clocks,
temperature) falls on every arm alike. Each job reports the wall time of each
measured step (after its warm-up); a job's figure is its median step. Printed
and written to OUT/summary.json: per arm the median of its jobs' medians and
the per-round ratios arm/bare (same round) with their median, min, max and
interquartile range.

usage: whole_job.py --dist DIST --workload gpt2_ddp --rounds 8 --out OUT [--cpus 0-7]
                    [--arm NAME[:VAR=VAL,...]]... [-- workload args]
An arm named `bare` runs without the supervisor; every other arm runs under it
with the listed environment added (e.g. `--arm disable:XPU_TIMER_DISABLE=1`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1", "PYTHONUNBUFFERED": "1"}


def parse_arm(spec):
    name, _, envs = spec.partition(":")
    env = {}
    for kv in filter(None, envs.split(",")):
        k, _, v = kv.partition("=")
        env[k] = v
    return name, env


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def bootstrap_ci(ratios, n=10000, seed=1):
    """95% interval of the median of per-round ratios, resampling rounds."""
    import random
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choice(ratios) for _ in ratios) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def run_job(args, arm, env_add, rnd, port):
    script = os.path.join(HERE, "workloads", args.workload + ".py")
    torchrun = ["torchrun", "--nproc_per_node=%d" % args.nproc, "--master_port=%d" % (port + 1000),
                script] + args.workload_args
    env = dict(os.environ, **SAFE_ENV)
    if arm == "bare":
        cmd = torchrun
    else:
        dump = os.path.join(args.out, "dumps", "%s-r%d-%s" % (args.workload, rnd, arm))
        cmd = [os.path.join(args.dist, "bin", "xpu_timer_supervisor"), "--port", str(port),
               "--dump-dir", dump, "--"] + torchrun
        env.update(env_add)
    if args.cpus:  # every arm on the same CPUs (the supervisor, torchrun and the ranks)
        cmd = ["taskset", "-c", args.cpus] + cmd
    log = os.path.join(args.out, "logs", "%s-r%d-%s.log" % (args.workload, rnd, arm))
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ " + " ".join(("%s=%s " % kv for kv in env_add.items())) + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=args.job_timeout)
    wall = time.time() - t0
    steps = None
    extra = {}
    watched = False
    with open(log) as f:
        for line in f:
            if line.startswith("XPU_BENCH_STEPS "):
                doc = json.loads(line[len("XPU_BENCH_STEPS "):])
                steps = doc["step_s"]
                # Further series (the host's share of a step, per-phase costs):
                # each job contributes the median of each.
                if doc.get("host_s"):
                    extra["host"] = statistics.median(doc["host_s"])
                for name, xs in (doc.get("phases") or {}).items():
                    extra[name] = statistics.median(xs)
            if "registered" in line and "rank" in line:
                watched = True
    if rc != 0 or steps is None:
        raise SystemExit("job failed (exit %d, steps %s): see %s" % (rc, steps is not None, log))
    return statistics.median(steps), wall, watched, extra


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist", required=True, help="unpacked release tarball (bin/, lib/)")
    p.add_argument("--workload", required=True, help="a script name in bench/gpu/workloads/")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--arm", action="append", default=[], help="NAME[:VAR=VAL,...]; default: bare and sup")
    p.add_argument("--out", required=True)
    p.add_argument("--port", type=int, default=18900)
    p.add_argument("--job-timeout", type=int, default=300)
    p.add_argument("--cpus", default="", help="taskset CPU list for every job (e.g. 0-7); '': none")
    p.add_argument("workload_args", nargs="*")
    args = p.parse_args()
    args.dist = os.path.abspath(args.dist)
    arms = [parse_arm(a) for a in (args.arm or ["bare", "sup"])]
    if arms[0][0] != "bare":
        arms.insert(0, ("bare", {}))
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "dumps"), exist_ok=True)
    per_arm = {name: [] for name, _ in arms}
    rows = []
    extra_rows = []
    for rnd in range(args.rounds):
        k = rnd % len(arms)
        order = arms[k:] + arms[:k]
        if rnd % 2:
            order = order[::-1]
        medians = {}
        extras = {}
        for name, env in order:
            med, wall, watched, extra = run_job(args, name, env, rnd, args.port + rnd)
            medians[name] = med
            extras[name] = extra
            per_arm[name].append(med)
            print("round %d %-12s median step %.3f ms (job %.1f s%s)" %
                  (rnd, name, med * 1e3, wall, ", watched" if watched else ""), flush=True)
        rows.append(medians)
        extra_rows.append(extras)
    summary = {"workload": args.workload, "rounds": args.rounds, "nproc": args.nproc,
               "workload_args": args.workload_args, "arms": {}}
    print("\nworkload %s, %d rounds, %d ranks" % (args.workload, args.rounds, args.nproc))
    print("| arm | median step (ms) | median ratio to bare | 95% bootstrap interval | min | p25 | p75 | max | per-round ratios |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, env in arms:
        ratios = [r[name] / r["bare"] for r in rows]
        s = {"env": env, "median_step_ms": statistics.median(per_arm[name]) * 1e3,
             "job_medians_ms": [x * 1e3 for x in per_arm[name]], "ratios": ratios,
             "median_ratio": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
             "p25": quantile(ratios, 0.25), "p75": quantile(ratios, 0.75),
             "ci95": bootstrap_ci(ratios)}
        summary["arms"][name] = s
        print("| %s | %.3f | %.4f | %.4f-%.4f | %.4f | %.4f | %.4f | %.4f | %s |" % (
            name + ("" if not env else " (" + ",".join("%s=%s" % kv for kv in env.items()) + ")"),
            s["median_step_ms"], s["median_ratio"], s["ci95"][0], s["ci95"][1], s["min"], s["p25"],
            s["p75"], s["max"],
            " ".join("%.4f" % r for r in ratios)))
    series = sorted({k for r in extra_rows for e in r.values() for k in e})
    if series:
        print("\nper series: median over jobs (us), ratio to bare (median of per-round ratios), "
              "difference to bare (us, median of per-round differences)")
        print("| series | " + " | ".join(name for name, _ in arms) + " |")
        print("| --- |" + " --- |" * len(arms))
    for key in series:
        cells = []
        summary.setdefault("series", {})[key] = {}
        for name, _ in arms:
            vals = [r[name][key] for r in extra_rows if key in r.get(name, {})]
            pairs = [(r[name][key], r["bare"][key]) for r in extra_rows
                     if key in r.get(name, {}) and key in r.get("bare", {})]
            ratio = statistics.median([a / b for a, b in pairs]) if pairs else float("nan")
            diff = statistics.median([a - b for a, b in pairs]) if pairs else float("nan")
            med = statistics.median(vals) if vals else float("nan")
            summary["series"][key][name] = {"median_s": med, "ratio": ratio, "diff_s": diff,
                                           "job_medians_s": vals}
            cells.append("%.2f (%.4f, %+.3f)" % (med * 1e6, ratio, diff * 1e6))
        print("| %s | %s |" % (key, " | ".join(cells)))
    with open(os.path.join(args.out, "summary-%s.json" % args.workload), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
