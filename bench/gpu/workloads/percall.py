"""Per-call cost of the hooked calls, one phase per kind of call.

Each phase repeats one operation many times and reports the wall time per call
of each repetition (ended by torch.cuda.synchronize()):
  tiny_mm    64x64 bf16 matmuls: host-bound, so the time per call is the
             host's launch cost (what a hook adds on the training thread);
  tiny_ar    all-reduces of 4 KiB: the same for a collective;
  tiny_add   in-place adds to a 64-element tensor: host-bound elementwise
             kernels, each one cudaLaunchKernel (counted by xpu-timer);
  mid_mm     8192x1024 @ 1024x4096 bf16 (about 0.1 ms of GPU work): GPU-bound,
             shows what events recorded around a GEMM cost the GPU stream;
  big_mm     8192^3 bf16 (a few ms each): GPU-bound, large kernels.
Rank 0 prints `XPU_BENCH_STEPS {json}`; "step_s" is mid_mm's, "phases" all.
Usage: torchrun --nproc_per_node=N percall.py [--reps 15]
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def timed_reps(fn, calls, reps):
    fn(calls)  # warm-up (kernel selection, NCCL connections)
    torch.cuda.synchronize()
    dist.barrier()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(calls)
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / calls)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=15)
    a = p.parse_args()
    rank, dev = common.setup()
    bf = torch.bfloat16
    t64 = torch.randn(64, 64, device=dev, dtype=bf)
    ar = torch.randn(1024, device=dev)
    x = torch.randn(8192, 1024, device=dev, dtype=bf)
    w = torch.randn(1024, 4096, device=dev, dtype=bf)
    big = torch.randn(8192, 8192, device=dev, dtype=bf)

    def tiny_mm(n):
        for _ in range(n):
            torch.mm(t64, t64)

    def tiny_add(n):
        for _ in range(n):
            t64.add_(1.0)

    def tiny_ar(n):
        for _ in range(n):
            dist.all_reduce(ar)

    def mid_mm(n):
        for _ in range(n):
            torch.mm(x, w)

    def big_mm(n):
        for _ in range(n):
            torch.mm(big, big)

    phases = {
        "tiny_mm": timed_reps(tiny_mm, 4000, a.reps),
        "tiny_ar": timed_reps(tiny_ar, 1000, a.reps),
        "tiny_add": timed_reps(tiny_add, 4000, a.reps),
        "mid_mm": timed_reps(mid_mm, 400, a.reps),
        "big_mm": timed_reps(big_mm, 20, a.reps),
    }
    common.report(rank, "percall", phases["mid_mm"], {"phases": phases})


if __name__ == "__main__":
    main()
