"""Process groups as a user makes them (PyTorch's group_desc), for issue 38 on
real GPUs: the default group, a "tp" group of every rank and one "dp" group
per rank, each used every step, with an optimizer step between.

  --mode names   runs --steps steps and ends
  --mode hang    the last rank waits forever in wait_for_shard_from_storage()
                 before the "tp" all-reduce of step --at: the others wait on it
  --mode crash   the last rank dereferences NULL (ctypes) at step --at, between
                 two collectives: torchrun then ends the others
  --eager        device_id given to init_process_group: communicators made at
                 once, new_group's by ncclCommSplit (else lazily, at a group's
                 first collective, by ncclCommInitRankConfig)

usage: torchrun --nproc_per_node=N groups_crash.py --mode hang [--at 20] [--eager]
"""
import argparse
import ctypes
import os
import time

import torch
import torch.distributed as dist


def wait_for_shard_from_storage():
    while True:
        time.sleep(1)


def crash():
    print("CRASH_AT %.3f" % time.time(), flush=True)
    ctypes.string_at(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["names", "hang", "crash"], default="names")
    p.add_argument("--at", type=int, default=20)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--eager", action="store_true")
    a = p.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", **({"device_id": dev} if a.eager else {}))
    rank, world = dist.get_rank(), dist.get_world_size()
    tp = dist.new_group(list(range(world)), group_desc="tp")
    dps = [dist.new_group([r], group_desc="dp") for r in range(world)]
    dp = dps[rank]
    model = torch.nn.Linear(2048, 2048, device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 2048, device=dev)
    last = rank == world - 1
    for step in range(1, a.steps + 1 if a.mode == "names" else 10**9):
        loss = model(x).square().mean()
        loss.backward()
        for prm in model.parameters():
            dist.all_reduce(prm.grad)  # default_pg
        if a.mode == "crash" and last and step == a.at:
            crash()
        t = torch.ones(1 << 16, device=dev)
        if a.mode == "hang" and last and step == a.at:
            wait_for_shard_from_storage()
        dist.all_reduce(t, group=tp)
        dist.all_reduce(t, group=dp)
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()
        if step == 1 and rank == 0:
            print("STEP1_AT %.3f" % time.time(), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
