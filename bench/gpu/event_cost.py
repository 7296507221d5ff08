#!/usr/bin/env python3
"""What two CUDA events around an operation cost a host-bound loop, with and
without timing (cudaEventDisableTiming), on one GPU.

The injected library records a start and an end event around every collective
on the collective's stream. On two H200s a collective's events cost about
10 us of step time each, more than their runtime calls' host time
(bench/results/2026-11-29-two-gpu-overhead-hooks-vs-background-h200x2.md). This
loop asks whether an event without timing costs less: per iteration, a tiny
kernel on the main stream, then the pattern of a DDP bucket's all-reduce on a
side stream (the side stream waits for the main one, runs a tiny kernel, the
main stream waits for the side one), with around the side kernel no events,
two timing events, or two events without timing. The GPU is never the
bottleneck (tiny kernels), so the loop's time is the host's.

Arms alternate round by round in one process; each round runs every arm for
--iters iterations. Printed: per arm, the median over rounds of the cost per
iteration against the arm without events, with a 95% bootstrap interval.

  python3 bench/gpu/event_cost.py --rounds 30 --iters 4000 --out result.json
"""
import argparse
import json
import random
import statistics
import time

import torch


def bootstrap_median(xs, reps=4000, seed=1):
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    main_stream = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    x = torch.ones(256, device=dev)
    y = torch.ones(256, device=dev)
    handoff = [torch.cuda.Event(), torch.cuda.Event()]  # PyTorch's own, as DDP's

    def events(timing):
        return [torch.cuda.Event(enable_timing=timing) for _ in range(2)]

    arms = {"none": None, "timing": events(True), "no_timing": events(False)}

    def run(arm, n):
        ours = arms[arm]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
            handoff[0].record(main_stream)
            side.wait_event(handoff[0])
            with torch.cuda.stream(side):
                if ours is not None:
                    ours[0].record(side)
                y.add_(1.0)
                if ours is not None:
                    ours[1].record(side)
                handoff[1].record(side)
            main_stream.wait_event(handoff[1])
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    for arm in arms:  # warm up
        run(arm, 500)
    per_iter = {arm: [] for arm in arms}
    names = list(arms)
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for arm in order:
            per_iter[arm].append(run(arm, args.iters))

    result = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
              "rounds": args.rounds, "iters": args.iters, "arms": {}}
    base = per_iter["none"]
    for arm in names:
        diffs_us = [(a - b) * 1e6 for a, b in zip(per_iter[arm], base)]
        lo, hi = bootstrap_median(diffs_us)
        result["arms"][arm] = {
            "median_iter_us": statistics.median(per_iter[arm]) * 1e6,
            "median_extra_us": statistics.median(diffs_us), "ci95_extra_us": [lo, hi]}
        print(f"{arm:10s} iteration {statistics.median(per_iter[arm]) * 1e6:7.2f} us, "
              f"extra {statistics.median(diffs_us):6.2f} us [{lo:6.2f}, {hi:6.2f}]")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
