"""The hang clock on a real GPU (one rank).

Each step queues --gemms GEMMs of N^3 bf16 on the compute stream (N=16384:
about 12 ms each on an H100, 300 of them ~3.6 s), then all-reduces a small
tensor (world size 1: NCCL still runs it on its own stream, after the compute
stream's work) and reads the loss (.item()). Run under
`xpu_timer_supervisor --hang-timeout 2`: the all-reduce waits longer than the
timeout behind the GEMMs on every step, which is no hang.
With --stop-at-step S, step S puts an endless kernel (torch.cuda._sleep) in
front of its all-reduce: the GPU never reaches it; that is a hang.
Prints `QUEUED step K s` per step.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--gemms", type=int, default=300)
    p.add_argument("--n", type=int, default=16384)
    p.add_argument("--stop-at-step", type=int, default=-1)
    a = p.parse_args()
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    dev = torch.device("cuda", local)
    m = torch.randn(a.n, a.n, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(m)
    g = torch.ones(1024, device=dev)
    for step in range(a.steps):
        t0 = time.perf_counter()
        for _ in range(a.gemms):
            torch.mm(m, m, out=out)
        if step == a.stop_at_step:
            print(f"QUEUED stopping the GPU before the all-reduce of step {step}", flush=True)
            torch.cuda._sleep(1 << 62)
        dist.all_reduce(g)
        g.div_(2)[0].item()
        print(f"QUEUED step {step} {time.perf_counter() - t0:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
