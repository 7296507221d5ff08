"""A small 2+ rank PyTorch job for proving xpu-timer on real GPUs.

Each step runs bf16 `a @ a` (cublasGemmEx or cublasLtMatmul), `torch.bmm`
(strided batched), an `nn.Linear` (cublasLt) and an all-reduce. Options make
one rank hang (it stops calling collectives and sleeps in
`user_code_stuck_here`) or wait at the end for a "go" file so that a driver
can scrape /metrics while the ranks are still alive.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def user_code_stuck_here(seconds):
    # The missing rank of a hang test: alive, busy in host code, never
    # reaching the next collective.
    time.sleep(seconds)


def user_code_crashes_here(kind, step):
    print(f"crashing ({kind}) at step {step}", flush=True)
    if kind == "segv":
        import ctypes
        ctypes.string_at(0)  # reads address 0: SIGSEGV in the interpreter
    raise RuntimeError(f"user code failed at step {step}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-step", type=int, default=-1)
    p.add_argument("--hang-seconds", type=float, default=600)
    p.add_argument("--crash-rank", type=int, default=-1)
    p.add_argument("--crash-step", type=int, default=-1)
    p.add_argument("--crash-kind", choices=["segv", "exception"], default="segv")
    p.add_argument("--wait-file", default="", help="after the last step, wait until this file exists")
    p.add_argument("--ready-file", default="", help="rank 0 touches this after the last step")
    args = p.parse_args()

    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    dev = torch.device("cuda", local_rank)
    a = torch.randn(args.size, args.size, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4, 512, 512, device=dev, dtype=torch.bfloat16)
    lin = torch.nn.Linear(1024, 1024, device=dev, dtype=torch.bfloat16)
    x = torch.randn(256, 1024, device=dev, dtype=torch.bfloat16)
    g = torch.ones(1 << 20, device=dev, dtype=torch.float32)

    for step in range(args.steps):
        if rank == args.hang_rank and step == args.hang_step:
            print(f"rank {rank}: hanging at step {step}", flush=True)
            user_code_stuck_here(args.hang_seconds)
        if rank == args.crash_rank and step == args.crash_step:
            user_code_crashes_here(args.crash_kind, step)
        c = a @ a
        d = torch.bmm(b, b)
        y = lin(x)
        dist.all_reduce(g)
        torch.cuda.synchronize()
        del c, d, y
    print(f"rank {rank}: {args.steps} steps done", flush=True)
    if args.ready_file and rank == 0:
        open(args.ready_file, "w").close()
    if args.wait_file:
        deadline = time.time() + 120
        while not os.path.exists(args.wait_file) and time.time() < deadline:
            time.sleep(0.1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
