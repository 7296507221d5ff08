"""GPU idle per step of a real torch.distributed.pipelining schedule, 2 GPUs.

Run under the supervisor with XPU_TIMER_SAMPLE_PER_SEC=0 (every GEMM timed) and
XPU_TIMER_STEP_RANGE=train_step. Each rank is one pipeline stage of LAYERS
bias-free Linear layers (width WIDTH, micro-batch MB rows, bf16): its forward and
backward are GEMMs only, so the stage's GPU work is what xpu-timer times. A step is
one schedule.step() over M micro-batches (then torch.cuda.synchronize()), inside an
NVTX range "train_step". The closed form of the bubble of GPipe and 1F1B with P
stages and equal micro-batches is (P-1)/(M+P-1); what else runs on the GPU and is
not a GEMM (activation send/recv, the loss) adds to the measured idle time.
Rank 0 reads the supervisor's counters after WARMUP steps and again after STEPS
more, and prints per rank: idle / (idle + busy) over the measured steps, and the
closed form. Prints one line `XPU_CHECK {json}`.
Usage: torchrun --nproc_per_node 2 pipeline_bubble.py --schedule 1f1b --microbatches 8
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_text import http, value  # noqa: E402

PORT = int(os.environ["XPU_CHECK_PORT"])
WIDTH = 8192
LAYERS = 4
MB = 1024
WARMUP = 3
STEPS = 10


def counters(world):
    text = http(PORT, "/metrics")
    out = {}
    for r in range(world):
        lab = f'rank="{r}"'
        out[r] = {
            "steps": value(text, "xpu_timer_step_seconds_count", lab) or 0,
            "busy": value(text, "xpu_timer_step_gpu_busy_seconds_total", lab) or 0,
            "idle": value(text, "xpu_timer_step_gpu_idle_seconds_total", lab) or 0,
            "untimed": value(text, "xpu_timer_step_untimed_operations_total", lab) or 0,
        }
    return out


def settled(world, steps):
    """Counters once every rank's `steps` steps are measured (busy + idle known)."""
    for _ in range(400):
        c = counters(world)
        if all(c[r]["steps"] >= steps and c[r]["busy"] > 0 for r in range(world)):
            time.sleep(0.2)  # the last step's measurement follows its count by a poll
            c2 = counters(world)
            if c2 == c:
                return c
        time.sleep(0.05)
    return counters(world)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--schedule", choices=["gpipe", "1f1b"], default="1f1b")
    p.add_argument("--microbatches", type=int, default=8)
    a = p.parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(0)
    stage_mod = torch.nn.Sequential(
        *[torch.nn.Linear(WIDTH, WIDTH, bias=False) for _ in range(LAYERS)]).to(dev, torch.bfloat16)
    m = a.microbatches
    x = torch.randn(m * MB, WIDTH, device=dev, dtype=torch.bfloat16)
    target = torch.randn(m * MB, WIDTH, device=dev, dtype=torch.bfloat16)
    example = torch.randn(MB, WIDTH, device=dev, dtype=torch.bfloat16)
    stage = PipelineStage(stage_mod, rank, world, dev, input_args=(example,), output_args=(example,))
    loss_fn = lambda out, tgt: torch.nn.functional.mse_loss(out, tgt)  # noqa: E731
    cls = Schedule1F1B if a.schedule == "1f1b" else ScheduleGPipe
    schedule = cls(stage, n_microbatches=m, loss_fn=loss_fn)

    def step():
        with torch.cuda.nvtx.range("train_step"):
            if rank == 0:
                schedule.step(x)
            elif rank == world - 1:
                schedule.step(target=target, losses=[])
            else:
                schedule.step()
            torch.cuda.synchronize()
        stage_mod.zero_grad(set_to_none=True)

    for _ in range(WARMUP):
        step()
    dist.barrier()
    before = settled(world, WARMUP) if rank == 0 else None
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        step()
    wall = time.perf_counter() - t0
    dist.barrier()
    if rank == 0:
        after = settled(world, WARMUP + STEPS)
        closed = (world - 1) / (m + world - 1)
        per_rank = {}
        for r in range(world):
            busy = after[r]["busy"] - before[r]["busy"]
            idle = after[r]["idle"] - before[r]["idle"]
            per_rank[r] = {
                "busy_s": round(busy, 6),
                "idle_s": round(idle, 6),
                "idle_fraction": round(idle / (idle + busy), 4) if busy + idle > 0 else None,
                "untimed": after[r]["untimed"],
                "steps_measured": after[r]["steps"] - before[r]["steps"],
            }
        print("XPU_CHECK " + json.dumps({
            "schedule": a.schedule, "stages": world, "microbatches": m, "layers": LAYERS,
            "width": WIDTH, "microbatch_rows": MB, "steps": STEPS,
            "step_wall_s": round(wall / STEPS, 5), "closed_form": round(closed, 4),
            "ranks": per_rank, "torch": torch.__version__,
            "device": torch.cuda.get_device_name(dev)}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
