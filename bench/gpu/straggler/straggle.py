"""A Hugging Face GPT-2 trained with DDP for a fixed time, optionally with one
rank's host slowed from a given moment: the job of the real-GPU straggler
checks (bench/gpu/straggler/run.sh). Nothing in it knows of xpu-timer.

Prints (rank 0 unless said): `RANK_START <rank> <unix s>` on every rank,
`HEALTHY_STEP_S <median>` once the healthy steps are measured, and on the
delayed rank `DELAY_ONSET <rank> <unix s> <ms>` when its delay begins, then
`STEPS <n> <unix s>` every 100 steps.

  torchrun --nproc_per_node=4 straggle.py --seconds 120 \\
      [--host-delay-rank 1 --host-delay-share 0.05 --delay-after 60]

--batch and --seq set the input (8 x 1024 by default, GPU-bound on an H100 or
H200; 1 x 128 makes the job host-bound: its steps wait for Python).

--host-delay-share S: from --delay-after seconds on, the rank sleeps S times
the healthy median step (measured over steps 20-70 on every rank, agreed by
an all-reduce before the delay starts) before each step: a slow input
pipeline. --host-delay-ms sets the sleep directly instead.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=120)
    p.add_argument("--host-delay-rank", type=int, default=-1)
    p.add_argument("--host-delay-share", type=float, default=0)
    p.add_argument("--host-delay-ms", type=float, default=0)
    p.add_argument("--delay-after", type=float, default=60)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    a = p.parse_args()
    rank = int(os.environ.get("RANK", 0))
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(1234 + rank)
    cfg = GPT2Config(n_layer=12, n_embd=1024, n_head=16, n_positions=1024, vocab_size=50257,
                     attn_implementation="sdpa")
    model = DDP(GPT2LMHeadModel(cfg).to(dev, dtype=torch.bfloat16), device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device=dev)
    print("RANK_START %d %.3f" % (rank, time.time()), flush=True)
    start = time.monotonic()
    step_times = []
    delay_s = 0.0
    delaying = False
    n = 0
    last = time.perf_counter()
    while True:
        # Every rank stops after the same step: each deciding by its own clock,
        # a host-bound rank ran one step more than its peer, whose final
        # barrier then met that step's gradient all-reduce (xpu-timer named
        # the mismatch). Agreed every 50 steps, one small all-reduce each time.
        if n % 50 == 0:
            over = torch.tensor([float(time.monotonic() - start >= a.seconds)], device=dev)
            dist.all_reduce(over, op=dist.ReduceOp.MAX)
            if over.item() > 0:
                break
        if delaying:
            time.sleep(delay_s)
        out = model(input_ids=idx, labels=idx)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        now = time.perf_counter()
        if 20 <= n < 70:
            step_times.append(now - last)
        last = now
        if n == 70:
            # Every rank's median host step, agreed on: the healthy step.
            med = torch.tensor([statistics.median(step_times)], device=dev)
            dist.all_reduce(med, op=dist.ReduceOp.MAX)
            healthy = med.item()
            if rank == 0:
                print("HEALTHY_STEP_S %.5f" % healthy, flush=True)
            delay_s = a.host_delay_ms / 1e3 if a.host_delay_ms > 0 else a.host_delay_share * healthy
        if (rank == a.host_delay_rank and not delaying and n > 70 and delay_s > 0
                and time.monotonic() - start >= a.delay_after):
            delaying = True
            print("DELAY_ONSET %d %.3f %.2f" % (rank, time.time(), delay_s * 1e3), flush=True)
        if rank == 0 and n % 100 == 0:
            print("STEPS %d %.3f" % (n, time.time()), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
