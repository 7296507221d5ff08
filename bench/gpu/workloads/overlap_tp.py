"""Tensor-parallel style step where communication overlaps computation.

Each step runs `--layers` blocks: a column-parallel and a row-parallel matmul
(bf16) on the default stream, and the all-reduce of the previous block's output
on a second stream, so NCCL kernels run concurrently with the GEMMs, then the
backward-like pair of matmuls. Usage: torchrun --nproc_per_node=N overlap_tp.py
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
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=150)
    a = p.parse_args()
    rank, dev = common.setup()
    ws = dist.get_world_size()
    bf = torch.bfloat16
    x = torch.randn(a.tokens, a.width, device=dev, dtype=bf)
    w1 = [torch.randn(a.width, 4 * a.width // ws, device=dev, dtype=bf) * 0.01 for _ in range(a.layers)]
    w2 = [torch.randn(4 * a.width // ws, a.width, device=dev, dtype=bf) * 0.01 for _ in range(a.layers)]
    comm = torch.cuda.Stream(device=dev)
    outs = [torch.empty_like(x) for _ in range(a.layers)]

    def step():
        main = torch.cuda.current_stream()
        h = x
        for i in range(a.layers):
            y = torch.matmul(torch.matmul(h, w1[i]), w2[i], out=outs[i])
            ev = torch.cuda.Event()
            ev.record(main)
            with torch.cuda.stream(comm):
                comm.wait_event(ev)
                dist.all_reduce(y)  # overlaps the next block's GEMMs
            h = x if i % 2 else torch.matmul(torch.matmul(x, w1[i]), w2[i])
        main.wait_stream(comm)

    times = common.run_steps(step, a.warmup, a.steps)
    common.report(rank, "overlap_tp", times)


if __name__ == "__main__":
    main()
