"""Checks GPU idle per step and the host events of the timeline on a real GPU.

Run under the supervisor (one rank) with XPU_TIMER_SAMPLE_PER_SEC=0 (every
GEMM timed) and XPU_TIMER_STEP_RANGE=train_step. Each of STEPS steps is an
NVTX range "train_step" holding:
  - one batch from a DataLoader (num_workers=0) whose __getitem__ sleeps
    LOADER_MS: the GPU is idle meanwhile;
  - GEMMS bf16 matmuls of N x N x N, back to back, bracketed by CUDA events
    (the reference GPU busy time of the step, measured by torch, not by us);
  - torch.cuda.synchronize(), one gc.collect() (automatic GC is off), and a
    host sleep of SLEEP_MS: idle again.
Expected: xpu-timer's idle fraction (idle / (idle + busy) over the measured
steps) equals 1 - (sum of the CUDA-event GEMM times) / (sum of the step
times), where the step times are xpu-timer's own (the NVTX range); the
difference is the clock mapping and the launch gaps between the matmuls.
Then POST /dump/timeline and count what the timeline draws: STEPS "step"
slices, STEPS "GC gen 2", STEPS "DataLoader wait", the 1 GiB cudaMalloc and
cudaFree made around the loop, and the "kernel launches per ms" counter,
whose integral must equal the launch counter on /metrics at that moment.
Prints one line `XPU_CHECK {json}`.
Usage: XPU_CHECK_PORT=P XPU_TIMER_SAMPLE_PER_SEC=0 XPU_TIMER_STEP_RANGE=train_step \
  xpu_timer_supervisor --port P -- torchrun --nproc_per_node 1 idle_steps.py
"""
import gc
import json
import os
import time
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_text import http, value  # noqa: E402

PORT = int(os.environ["XPU_CHECK_PORT"])
STEPS = 20
GEMMS = 8
N = 8192
LOADER_MS = 5.0
SLEEP_MS = 10.0


class SlowDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        time.sleep(LOADER_MS / 1000.0)
        return torch.zeros(4)


def main():
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(dev)
    a = torch.randn(N, N, device=dev, dtype=torch.bfloat16)
    b = torch.randn(N, N, device=dev, dtype=torch.bfloat16)
    c = torch.empty(N, N, device=dev, dtype=torch.bfloat16)
    for _ in range(3):  # warm-up: cuBLAS picks its kernel, the allocator its blocks
        torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    big = torch.empty(1 << 30, dtype=torch.uint8, device=dev)  # one cudaMalloc of 1 GiB
    loader = iter(torch.utils.data.DataLoader(SlowDataset(), batch_size=1, num_workers=0))
    # The probes are installed shortly after the first CUDA call.
    deadline = time.monotonic() + 20
    while not gc.callbacks and time.monotonic() < deadline:
        time.sleep(0.01)
    gc.collect()
    gc.disable()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(STEPS)]
    for i in range(STEPS):
        with torch.cuda.nvtx.range("train_step"):
            next(loader)
            ev[i][0].record()
            for _ in range(GEMMS):
                torch.mm(a, b, out=c)
            ev[i][1].record()
            torch.cuda.synchronize()
            gc.collect()
            time.sleep(SLEEP_MS / 1000.0)
    gc.enable()
    del big
    torch.cuda.empty_cache()  # its cudaFree
    torch.cuda.synchronize()
    busy_ref_s = sum(s.elapsed_time(e) for s, e in ev) / 1000.0

    text = ""
    for _ in range(200):  # settled: every step measured
        text = http(PORT, "/metrics")
        if value(text, "xpu_timer_step_seconds_count") == STEPS and \
                (value(text, "xpu_timer_step_gpu_busy_seconds_total") or 0) > 0:
            busy = value(text, "xpu_timer_step_gpu_busy_seconds_total")
            idle = value(text, "xpu_timer_step_gpu_idle_seconds_total")
            steps_sum = value(text, "xpu_timer_step_seconds_sum")
            if abs(busy + idle - steps_sum) < 1e-6:
                break
        time.sleep(0.05)
    busy = value(text, "xpu_timer_step_gpu_busy_seconds_total")
    idle = value(text, "xpu_timer_step_gpu_idle_seconds_total")
    steps_sum = value(text, "xpu_timer_step_seconds_sum")
    idle_ratio = idle / (idle + busy) if busy is not None and idle is not None else None
    idle_ref = 1.0 - busy_ref_s / steps_sum if steps_sum else None

    time.sleep(0.3)  # past one launch-sampling interval (100 ms): every launch sampled
    launches_metric = value(http(PORT, "/metrics"), "xpu_timer_kernel_launches_total")
    dump = json.loads(http(PORT, "/dump/timeline", "POST"))
    with open(os.path.join(dump["dir"], "timeline.json")) as f:
        trace = json.load(f)
    slices = {}
    counter = []
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "range":
            slices[e["name"]] = slices.get(e["name"], 0) + 1
        if e.get("ph") == "C" and e.get("name") == "kernel launches per ms":
            counter.append((e["ts"], e["args"]["launches"]))
    counter.sort()
    launched = sum(v * (counter[i + 1][0] - t) / 1000.0 for i, (t, v) in enumerate(counter[:-1]))
    result = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(dev),
        "steps": value(text, "xpu_timer_step_seconds_count"),
        "step_seconds_sum": steps_sum,
        "gpu_busy_s": busy,
        "gpu_idle_s": idle,
        "idle_ratio": idle_ratio,
        "busy_ref_cuda_events_s": busy_ref_s,
        "idle_ratio_ref": idle_ref,
        "idle_points_off": None if idle_ratio is None or idle_ref is None
        else round(100 * (idle_ratio - idle_ref), 3),
        "untimed": value(text, "xpu_timer_step_untimed_operations_total"),
        "last_bubble_ratio": value(text, "xpu_timer_step_bubble_ratio"),
        "gc_gen2_metric": value(text, "xpu_timer_python_gc_collections_total", 'generation="2"'),
        "loader_batches_metric": value(text, "xpu_timer_dataloader_batches_total"),
        "timeline_slices": {k: v for k, v in slices.items()
                            if k in ("step", "train_step", "GC gen 2", "DataLoader wait")
                            or k.startswith("cuda")},
        "launches_metric": launches_metric,
        "launches_timeline_integral": round(launched, 3),
        "dump_dir": dump["dir"],
    }
    print("XPU_CHECK " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
