#!/usr/bin/env python3
"""How many Prometheus series one supervisor's GET /metrics exposes.

For each rank count and histogram mode (--metrics-histograms node|rank), runs
a real supervisor over a simulated job (xpu_timer_sim_launch, one node) whose
Python ranks use every feature that adds series: all seven GEMM entry points,
mixed collectives, NVTX ranges, optimizer steps, garbage collections and a
DataLoader. Once every rank completed --steps steps, scrapes /metrics and
counts the samples (series) by family: those with a `rank` label (per rank)
and those without (per node and job).

Usage: bench/metrics_series.py --build build --ranks 8,64 [--steps 20]
Prints a Markdown table per run; --json FILE writes the counts.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

from multinode_scale import wait_until  # bench/, beside this script


def http_get(port, path, timeout=10.0):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.read().decode()
    except Exception:
        return None


def count_series(text):
    """family -> [series with a rank label, series without]."""
    histograms = set(re.findall(r"^# TYPE (\S+) histogram$", text, re.M))
    counts = collections.defaultdict(lambda: [0, 0])
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[: -len(suffix)] in histograms:
                name = name[: -len(suffix)]
        per_rank = re.search(r'[{,]rank="', line) is not None
        counts[name][0 if per_rank else 1] += 1
    return counts


def run(args, ranks, mode, work):
    d = tempfile.mkdtemp(prefix="series-%d-%s-" % (ranks, mode), dir=work)
    env = dict(os.environ)
    env.update({
        "XPU_TIMER_SIM_LIB_DIR": os.path.join(args.build, "simgpu", "lib"),
        "XPU_TIMER_HANG_TIMEOUT": "", "XPU_TIMER_HANG_KILL": "", "XPU_TIMER_BASEPORT": "",
        "XPU_TIMER_JOB_NAME": "series-bench",
        "XPU_TIMER_METRICS_HISTOGRAMS": mode,
        "XPU_TIMER_SAMPLE_PER_SEC": "0",
        "XPU_TIMER_DATALOADER_ITER": "__main__:SimLoaderIter",
        "XPU_TIMER_OPTIMIZER_HOOK": "__main__:register_step_hook",
        "PYTHONUNBUFFERED": "1",
    })
    argv = [os.path.join(args.build, "bin", "xpu_timer_supervisor"), "--port", "0",
            "--dump-dir", d, "--metrics-linger", "0", "--hang-timeout", "600",
            "--", os.path.join(args.build, "bin", "xpu_timer_sim_launch"), "--nproc", str(ranks),
            "--", sys.executable, os.path.join(args.source, "tests", "simgpu", "sim_trainer.py"),
            "--steps", "1000000", "--gemm-api", "all", "--collective", "mixed",
            "--bytes", "65536", "--gemm", "256,256,256", "--nvtx", "--optimizer-steps",
            "--gc-per-step", "1", "--loader-ms", "1", "--step-ms", str(args.step_ms)]
    log = open(os.path.join(d, "console.log"), "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        pf = os.path.join(d, "supervisor.port")
        wait_until(lambda: os.path.exists(pf) and open(pf).read().strip(), 60, "the port file")
        port = int(open(pf).read())

        def steps_done():
            text = http_get(port, "/metrics")
            if text is None:
                return None
            done = [float(v) for v in re.findall(
                r'^xpu_timer_step_last_seconds\{[^}]*\} (\S+)$', text, re.M)]
            ranks_json = json.loads(http_get(port, "/ranks") or "[]")
            if len(ranks_json) != ranks or len(done) != ranks:
                return None
            # 3 GEMMs and a collective a step.
            if min(r.get("completed_total", 0) for r in ranks_json) < args.steps * 4:
                return None
            return text
        wait_until(steps_done, args.timeout, "%d ranks to run %d steps" % (ranks, args.steps))
        # A second scrape, so that the window gauges have a previous sample.
        time.sleep(1)
        text = http_get(port, "/metrics")
        return count_series(text), len(text)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(60)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True, help="build folder")
    p.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--ranks", default="8,64", help="comma-separated rank counts")
    p.add_argument("--modes", default="node,rank", help="--metrics-histograms values")
    p.add_argument("--steps", type=int, default=20, help="steps before the scrape")
    p.add_argument("--step-ms", type=float, default=50, help="host ms per step (CPU per rank)")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--json", help="write the counts here")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    results = []
    with tempfile.TemporaryDirectory(prefix="metrics-series-") as work:
        for ranks in [int(r) for r in args.ranks.split(",")]:
            for mode in args.modes.split(","):
                counts, size = run(args, ranks, mode, work)
                per_rank = sum(c[0] for c in counts.values())
                per_node = sum(c[1] for c in counts.values())
                results.append({"ranks": ranks, "mode": mode, "bytes": size,
                                "per_rank_series": per_rank, "per_node_series": per_node,
                                "families": {k: v for k, v in sorted(counts.items())}})
                print("\n### %d ranks, --metrics-histograms %s\n" % (ranks, mode))
                print("%d series: %d with a rank label (%.1f per rank), %d without; %d bytes\n"
                      % (per_rank + per_node, per_rank, per_rank / ranks, per_node, size))
                print("| family | per rank (each) | without rank |")
                print("| --- | ---: | ---: |")
                for name, (r, n) in sorted(counts.items()):
                    print("| `%s` | %s | %d |" % (name, ("%.2f" % (r / ranks)).rstrip("0").rstrip("."), n))
                sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
