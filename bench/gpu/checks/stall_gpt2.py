"""A GPT-2 job (DDP, one rank is enough) whose training loop stops for a while in
plain Python, with nothing on the GPU: a stall, the case issue 25 measured
unreported for 35 s at a 5 s hang timeout. Prints `STALL_BEGIN <unix s>` and
`STALL_END <unix s>` around the wait, then trains on and exits 0.

usage: torchrun --nproc_per_node=1 stall_gpt2.py [--before 20] [--wait-s 30] [--after 10]
                [--batch 8 --seq 1024]
"""
import argparse
import os
import sys
import time

import torch

from gpt2_model import ddp_gpt2_step

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
import common  # noqa: E402


def waiting_in_python_loop(seconds):
    """What a stalled job does: no CUDA work, the interpreter busy in its own code."""
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += sum(i * i for i in range(1000))
        time.sleep(0.001)
    return n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", type=int, default=20)
    p.add_argument("--wait-s", type=float, default=30)
    p.add_argument("--after", type=int, default=10)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    a = p.parse_args()
    rank, dev = common.setup()
    step = ddp_gpt2_step(dev, a.batch, a.seq)

    for _ in range(a.before):
        loss = step()
    print("loss %.4f" % loss.item(), flush=True)
    torch.cuda.synchronize()
    print("STALL_BEGIN %.3f" % time.time(), flush=True)
    waiting_in_python_loop(a.wait_s)
    print("STALL_END %.3f" % time.time(), flush=True)
    for _ in range(a.after):
        loss = step()
    print("loss %.4f" % loss.item(), flush=True)
    common.report(rank, "stall_gpt2", [])


if __name__ == "__main__":
    main()
