"""Checks the CUDA runtime counters and copy metrics on a real GPU.

Run under the supervisor (one rank): reads the supervisor's /metrics between
phases and compares the deltas with what the phase did. Prints one line
`XPU_CHECK {json}` with, per phase, what was expected, what was seen, and
whether they agree. Phases:
  launches  1000 x.add_(1): 1000 kernels through cudaLaunchKernel, nothing else
  cublas    100 torch.mm: cuBLAS launches through its own static runtime, so
            0 launches are expected here (informative: says what we miss)
  copies    64 MiB each: pinned -> device, device -> pinned, device -> device
            (copy_ of contiguous same-dtype tensors is one cudaMemcpyAsync)
  alloc     a 1 GiB tensor after empty_cache: one cudaMalloc of 1 GiB, then
            empty_cache frees it: one cudaFree of 1 GiB
  python    20 batches from a DataLoader whose __getitem__ sleeps 5 ms: 20
            batches, at least 0.1 s of waiting; then 5 gc.collect(): at least
            5 generation-2 collections
Usage: XPU_CHECK_PORT=P xpu_timer_supervisor --port P -- torchrun --nproc_per_node 1 runtime_counts.py
"""
import json
import os
import time
import urllib.request

import torch
import torch.distributed as dist

PORT = int(os.environ["XPU_CHECK_PORT"])


def scrape():
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name_labels, value = line.rsplit(" ", 1)
        name = name_labels.split("{", 1)[0]
        key = name
        if 'op="' in name_labels:
            key += ":" + name_labels.split('op="', 1)[1].split('"', 1)[0]
        if 'generation="' in name_labels:
            key += ":g" + name_labels.split('generation="', 1)[1].split('"', 1)[0]
        try:
            out[key] = out.get(key, 0.0) + float(value)
        except ValueError:
            pass
    return out


def settled():
    """The metrics once the rank's background thread published everything:
    two scrapes 50 ms apart that agree (it refreshes the page every 1-5 ms)."""
    torch.cuda.synchronize()
    prev = scrape()
    for _ in range(100):
        time.sleep(0.05)
        cur = scrape()
        if cur == prev:
            return cur
        prev = cur
    return prev


def delta(a, b, key):
    return b.get(key, 0.0) - a.get(key, 0.0)


def main():
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    dev = torch.device("cuda", local)
    mib64 = 64 << 20
    x = torch.zeros(1 << 20, device=dev)
    a = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
    pinned = torch.empty(mib64, dtype=torch.uint8, pin_memory=True)
    d1 = torch.empty(mib64, dtype=torch.uint8, device=dev)
    d2 = torch.empty(mib64, dtype=torch.uint8, device=dev)
    # Warm-up: every kernel and cuBLAS handle exists before counting.
    x.add_(1.0)
    torch.mm(a, a)
    d2.copy_(d1)
    results = {}

    s0 = settled()
    for _ in range(1000):
        x.add_(1.0)
    s1 = settled()
    results["launches"] = {
        "expected": {"kernel_launches": 1000, "allocations": 0},
        "seen": {"kernel_launches": delta(s0, s1, "xpu_timer_kernel_launches_total"),
                 "allocations": delta(s0, s1, "xpu_timer_device_memory_allocations_total")}}

    for _ in range(100):
        torch.mm(a, a)
    s2 = settled()
    results["cublas"] = {
        "expected": {"kernel_launches": 0, "gemms": 100},
        "seen": {"kernel_launches": delta(s1, s2, "xpu_timer_kernel_launches_total"),
                 "gemms": sum(delta(s1, s2, k) for k in s2
                              if k.startswith("xpu_timer_operations_total:")
                              and ("Gemm" in k or k.endswith(":LtMatmul")))}}

    d1.copy_(pinned, non_blocking=True)
    pinned.copy_(d1, non_blocking=True)
    d2.copy_(d1)
    s3 = settled()
    results["copies"] = {
        "expected": {"MemcpyH2D": mib64, "MemcpyD2H": mib64, "MemcpyD2D": mib64},
        "seen": {op: delta(s2, s3, "xpu_timer_memcpy_bytes_total:" + op)
                 for op in ("MemcpyH2D", "MemcpyD2H", "MemcpyD2D")}}

    torch.cuda.empty_cache()
    s4 = settled()
    big = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    big.fill_(1)
    del big
    torch.cuda.empty_cache()
    s5 = settled()
    results["alloc"] = {
        "expected": {"allocations": 1, "allocated_bytes": 1 << 30, "frees": 1, "freed_bytes": 1 << 30},
        "seen": {"allocations": delta(s4, s5, "xpu_timer_device_memory_allocations_total"),
                 "allocated_bytes": delta(s4, s5, "xpu_timer_device_memory_allocated_bytes_total"),
                 "frees": delta(s4, s5, "xpu_timer_device_memory_frees_total"),
                 "freed_bytes": delta(s4, s5, "xpu_timer_device_memory_freed_bytes_total")}}
    import gc

    class SlowData(torch.utils.data.Dataset):
        def __len__(self):
            return 20

        def __getitem__(self, i):
            time.sleep(0.005)
            return i

    loader = torch.utils.data.DataLoader(SlowData(), batch_size=1, num_workers=0)
    s6 = settled()
    batches = sum(1 for _ in loader)
    for _ in range(5):
        gc.collect()
    s7 = settled()
    gen2 = delta(s6, s7, "xpu_timer_python_gc_collections_total:g2")
    results["python"] = {
        "expected": {"loader_batches": batches, "wait_at_least_0.1s": True, "gen2_at_least_5": True},
        "seen": {"loader_batches": delta(s6, s7, "xpu_timer_dataloader_batches_total"),
                 "loader_wait_s": delta(s6, s7, "xpu_timer_dataloader_wait_seconds_total"),
                 "gen2_collections": gen2,
                 "gen2_pause_s": delta(s6, s7, "xpu_timer_python_gc_pause_seconds_total:g2")}}
    seen = results["python"]["seen"]
    seen["wait_at_least_0.1s"] = seen["loader_wait_s"] >= 0.1
    seen["gen2_at_least_5"] = gen2 >= 5
    for r in results.values():
        r["agree"] = all(r["seen"].get(k) == v for k, v in r["expected"].items())
    print("XPU_CHECK " + json.dumps(results), flush=True)
    # Communicator names (NCCL's config.commName, or the profiler plugin's):
    # what PyTorch passes for the default group and for a described new group.
    try:
        grp = dist.new_group([0], group_desc="xpu_check_tp")
    except TypeError:  # an older torch without group_desc
        grp = dist.new_group([0])
    dist.all_reduce(x, group=grp)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    time.sleep(0.2)
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/ranks", timeout=10) as r:
        ranks = json.loads(r.read().decode())
    names = []
    for rank in ranks if isinstance(ranks, list) else ranks.get("ranks", []):
        for c in rank.get("comms", []):
            names.append({"comm": c.get("comm"), "name": c.get("name"), "nranks": c.get("nranks")})
    print("XPU_COMMS " + json.dumps(names), flush=True)
    # The copies are in the flight recorder too: dump it while the rank lives.
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}/dump/timeline", method="POST", data=b"")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            print("XPU_DUMP " + r.read().decode().strip(), flush=True)
    except Exception as e:  # reported, not fatal: the counts above are the check
        print(f"XPU_DUMP failed: {e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
