"""Shared by the whole-job workloads: torchrun setup and the step-time report.

Each workload is an ordinary training script, unaware of xpu-timer. Rank 0
prints one line `XPU_BENCH_STEPS {json}` with the wall time of every measured
step (seconds, each step ended by torch.cuda.synchronize() as a logging loss
read would) and the host time of each (until the step's last launch
returned), which bench/gpu/whole_job.py parses.
"""
import json
import os
import time

import torch
import torch.distributed as dist


def setup():
    rank = int(os.environ.get("RANK", 0))
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(1234 + rank)
    return rank, torch.device("cuda", local)


def run_steps(step, warmup, steps):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    host = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        host.append(t1 - t0)
    # The host's share of each step (until the last launch returned): a step
    # whose host time is close to its wall time is host-bound.
    run_steps.host_s = host
    return times


def report(rank, name, times, extra=None):
    if rank == 0:
        doc = {"workload": name, "step_s": times}
        if getattr(run_steps, "host_s", None):
            doc["host_s"] = run_steps.host_s
        if extra:
            doc.update(extra)
        print("XPU_BENCH_STEPS " + json.dumps(doc), flush=True)
    dist.barrier()
    dist.destroy_process_group()
