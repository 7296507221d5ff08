"""Launch-bound step: many small matmuls and small all-reduces, where the host
launch rate, not the GPU, sets the step time (worst case for per-call costs).
Usage: torchrun --nproc_per_node=N launch_bound.py
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gemms", type=int, default=200)
    p.add_argument("--allreduces", type=int, default=20)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--steps", type=int, default=800)
    a = p.parse_args()
    rank, dev = common.setup()
    a_ = torch.randn(a.dim, a.dim, device=dev, dtype=torch.bfloat16)
    buf = torch.randn(1024, device=dev)
    every = max(1, a.gemms // max(1, a.allreduces))

    def step():
        h = a_
        for i in range(a.gemms):
            h = torch.mm(h, a_)
            if i % every == 0:
                dist.all_reduce(buf)

    times = common.run_steps(step, a.warmup, a.steps)
    common.report(rank, "launch_bound", times)


if __name__ == "__main__":
    main()
