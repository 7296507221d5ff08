"""The call site of each collective on real GPUs (issue 38 item 4): a DDP
model trained step by step, then one explicit all-reduce a step from a
function of the user's. With --mismatch, at step --at the last rank
all-gathers where the others all-reduce: the supervisor must place the odd
rank at odd_sync's all_gather line, not where the rank is when its stacks
are taken.

usage: torchrun --nproc_per_node=N call_sites.py [--steps 30] [--mismatch --at 10]
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def sync(x):
    dist.all_reduce(x)  # the common line


def odd_sync(x, world):
    out = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(out, x)  # the odd line


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--at", type=int, default=10)
    p.add_argument("--mismatch", action="store_true")
    args = p.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 1024)).to(dev), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.ones(4096, device=dev)
    for step in range(args.steps):
        loss = model(torch.randn(64, 1024, device=dev)).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if args.mismatch and rank == world - 1 and step == args.at:
            odd_sync(x, world)
        else:
            sync(x)
        torch.cuda.synchronize()
    if not args.mismatch:
        dist.barrier()
    dist.destroy_process_group()
    print("rank %d done" % rank, flush=True)


if __name__ == "__main__":
    main()
