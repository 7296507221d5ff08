"""Checks NVTX ranges and optimizer steps on a real GPU with real PyTorch.

Run under the supervisor (one rank, no XPU_TIMER_STEP_RANGE): a small model
trained STEPS steps; each step is a torch.cuda.nvtx.range("train_step")
holding range_push/range_pop "forward" and "backward", then optimizer.step().
Expected on /metrics once settled: STEPS ranges of each name, STEPS - 1
optimizer steps (source="optimizer": the first step only starts the clock),
no dropped range. Prints one line `XPU_CHECK {json}`.
Usage: XPU_CHECK_PORT=P xpu_timer_supervisor --port P -- torchrun --nproc_per_node 1 nvtx_steps.py
"""
import json
import os
import time
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_text import http, value  # noqa: E402

PORT = int(os.environ["XPU_CHECK_PORT"])
STEPS = 20


def scrape():
    return http(PORT, "/metrics")


def main():
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(dev)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    # The probes register their optimizer hook shortly after the first CUDA call.
    from torch.optim import optimizer as optim_mod
    deadline = time.monotonic() + 20
    while not optim_mod._global_optimizer_post_hooks and time.monotonic() < deadline:
        time.sleep(0.01)
    hooked = bool(optim_mod._global_optimizer_post_hooks)
    t0 = time.monotonic()
    for _ in range(STEPS):
        with torch.cuda.nvtx.range("train_step"):
            torch.cuda.nvtx.range_push("forward")
            loss = model(x).square().mean()
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("backward")
            loss.backward()
            torch.cuda.nvtx.range_pop()
            opt.step()
            opt.zero_grad()
    torch.cuda.synchronize()
    loop_s = time.monotonic() - t0
    text = ""
    for _ in range(100):  # settled: the background thread publishes every few ms
        text = scrape()
        if value(text, "xpu_timer_nvtx_range_seconds_count", 'range="train_step"') == STEPS:
            break
        time.sleep(0.05)
    seen = {name: value(text, "xpu_timer_nvtx_range_seconds_count", f'range="{name}"')
            for name in ("train_step", "forward", "backward")}
    steps = value(text, "xpu_timer_step_seconds_count", 'source="optimizer"')
    step_sum = value(text, "xpu_timer_step_seconds_sum")
    result = {
        "torch": torch.__version__,
        "hook_registered": hooked,
        "loop_s": round(loop_s, 4),
        "ranges": seen,
        "ranges_ok": all(v == STEPS for v in seen.values()),
        "optimizer_steps": steps,
        "steps_ok": steps == STEPS - 1,
        "step_seconds_sum": step_sum,
        "dropped": value(text, "xpu_timer_nvtx_ranges_dropped_total"),
    }
    print("XPU_CHECK " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
