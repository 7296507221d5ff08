#!/usr/bin/env python3
"""Accuracy of xpu-timer's GEMM TFLOPS and NCCL bus bandwidth on a real GPU.

Each rank times an 8192x8192x8192 bf16 matmul and a 256 MiB bf16 all-reduce
with CUDA events of its own (median of N after warm-up); rank 0 reads the
supervisor's /metrics before and after the timed loops and compares, per rank,
the counters' delta (flops / GPU time, bus bytes / GPU time) with the script's
numbers. Exits 1 when any ratio is off by more than 5% or the AllReduce series
has algo/proto "unknown".

Run under the supervisor (2 GPUs):
  xpu_timer_supervisor --port 18888 -- \
    torchrun --nproc_per_node 2 bench/gpu/metrics_accuracy.py
The port comes from XPU_TIMER_PORT, else the file named by XPU_TIMER_PORT_FILE
(the supervisor writes <dump-dir>/supervisor.port), else 18888.
"""
import math
import os
import re
import statistics
import sys
import time
import urllib.request

import torch
import torch.distributed as dist

N, WARMUP, DIM = 20, 5, 8192
AR_BYTES = 256 << 20
GEMM_BUCKET = int(math.log2(2 * DIM**3))  # size_bucket label: floor(log2(flops))
AR_BUCKET = int(math.log2(AR_BYTES))
LINE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def port():
    if os.environ.get("XPU_TIMER_PORT"):
        return int(os.environ["XPU_TIMER_PORT"])
    path = os.environ.get("XPU_TIMER_PORT_FILE")
    return int(open(path).read()) if path else 18888


def scrape():
    """[(family, labels, value)] of the supervisor's exposition."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port()}/metrics", timeout=10).read().decode()
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append((m[1], dict(LABEL.findall(m[2])), float(m[3])))
    return out


def total(samples, family, **want):
    return sum(v for f, l, v in samples if f == family and all(l.get(k) == w for k, w in want.items()))


def event_median_ms(fn, barrier=False):
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(N):
        if barrier:  # start the collective together, as nccl-tests does
            torch.cuda.synchronize()
            dist.barrier()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def settled_scrape():
    """Both ranks idle and their xpu-timer pages refreshed, then rank 0 scrapes."""
    torch.cuda.synchronize()
    dist.barrier()
    time.sleep(1.0)
    samples = scrape() if dist.get_rank() == 0 else None
    dist.barrier()
    return samples


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    a = torch.randn(DIM, DIM, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(DIM, DIM, device="cuda", dtype=torch.bfloat16)
    x = torch.ones(AR_BYTES // 2, device="cuda", dtype=torch.bfloat16)
    for _ in range(WARMUP):  # cuBLAS heuristics, NCCL connections
        a @ b
        dist.all_reduce(x)

    before = settled_scrape()
    gemm_ms = event_median_ms(lambda: a @ b)
    ar_ms = event_median_ms(lambda: dist.all_reduce(x), barrier=True)
    after = settled_scrape()

    ref = {"tflops": 2 * DIM**3 / (gemm_ms / 1e3) / 1e12,
           "busbw": AR_BYTES / (ar_ms / 1e3) * 2 * (world - 1) / world}
    refs = [None] * world
    dist.all_gather_object(refs, ref)

    failed = 0
    if rank == 0:
        for r, ref in enumerate(refs):
            g = dict(rank=str(r), kind="gemm", dtype="bf16", size_bucket=str(GEMM_BUCKET))
            c = dict(rank=str(r), op="AllReduce", dtype="bf16", size_bucket=str(AR_BUCKET))
            d = lambda fam, sel: total(after, fam, **sel) - total(before, fam, **sel)
            ours = {"tflops": d("xpu_timer_gemm_flops_total", g)
                    / d("xpu_timer_operation_gpu_seconds_total", g) / 1e12,
                    "busbw": d("xpu_timer_nccl_bus_bytes_total", c)
                    / d("xpu_timer_operation_gpu_seconds_total", c)}
            for k in ("tflops", "busbw"):
                ratio = ours[k] / ref[k]
                unit = "TFLOPS" if k == "tflops" else "GB/s"
                scale = 1 if k == "tflops" else 1e-9
                ok = abs(ratio - 1) <= 0.05
                failed |= not ok
                print(f"rank {r} {k:6}: xpu-timer {ours[k] * scale:9.2f} {unit}  "
                      f"cuda events {ref[k] * scale:9.2f} {unit}  ratio {ratio:.4f}  "
                      f"{'ok' if ok else 'MISMATCH > 5%'}")
            labels = {(l.get("algo"), l.get("proto"), l.get("transport"))
                      for f, l, _ in after if f == "xpu_timer_operations_total"
                      and all(l.get(k) == v for k, v in c.items())}
            print(f"rank {r} AllReduce algo/proto/transport seen: {sorted(labels)}")
            if not labels or any("unknown" in (alg, pro) for alg, pro, _ in labels):
                print(f"rank {r}: NCCL algorithm/protocol labels missing or unknown")
                failed = 1
    verdict = torch.tensor([failed], device="cuda")
    dist.broadcast(verdict, 0)
    dist.destroy_process_group()
    sys.exit(int(verdict.item()))


if __name__ == "__main__":
    main()
