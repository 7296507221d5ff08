"""An all-reduce sweep under xpu_timer_supervisor (bench/gpu/link_bandwidth_check.sh).

Per size, torch times --iters back-to-back all-reduces with CUDA events, as
nccl-tests does (algbw = bytes / time per operation, busbw = algbw x 2(n-1)/n),
and rank 0 then reads the supervisor's /metrics for that size bucket: the bus
bandwidth of the transfer after the last member arrived
(xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second) and the bus bandwidth
of the GPU time (xpu_timer_nccl_bus_bandwidth_bytes_per_second, the wait
included). Sizes are powers of two, so each has a size bucket of its own.
--skew-us U: before each all-reduce rank 0's GPU sleeps U microseconds, so
that its peers wait for it at every one: the GPU-time series must fall, the
transfer series not.
Rank 0 writes one JSON object a line per size to --out.

--summarize DIR: no job; prints the table of DIR's plain.jsonl, skew.jsonl,
sampled.jsonl and nccl_tests.log side by side.
"""
import argparse
import json
import math
import os
import sys
import time
import urllib.request


def samples(text, family):
    """(labels dict, value) of every sample of `family` in Prometheus text."""
    out = []
    for line in text.splitlines():
        if not line.startswith(family + "{"):
            continue
        labels_text, value = line[len(family) + 1:].rsplit("} ", 1)
        labels = {}
        for part in labels_text.split('",'):
            if "=" in part:
                k, v = part.split("=", 1)
                labels[k] = v.strip('"')
        out.append((labels, float(value)))
    return out


def median(values):
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def scrape(port):
    """GET /metrics; "" (and one line on stderr) when the supervisor does not answer."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            return r.read().decode()
    except OSError as e:
        print("GET /metrics on port %d failed: %s" % (port, e), file=sys.stderr, flush=True)
        return ""


def measured(text):
    for labels, v in samples(text, "xpu_timer_nccl_transfer_collectives_total"):
        if labels.get("outcome") == "measured":
            return v
    return 0.0


def bucket_figures(text, bucket, nranks):
    """The two bus bandwidths of the AllReduce key of `bucket`, per rank."""
    def per_rank(family):
        by_rank = {}
        for labels, v in samples(text, family):
            if (labels.get("op") == "AllReduce" and labels.get("size_bucket") == str(bucket)
                    and labels.get("nranks") == str(nranks)):
                by_rank.setdefault(labels["rank"], []).append(v)
        return {r: median(v) for r, v in by_rank.items()}
    return {"transfer_busbw": per_rank("xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second"),
            "gpu_time_busbw": per_rank("xpu_timer_nccl_bus_bandwidth_bytes_per_second")}


def outcomes(text):
    return {labels["outcome"]: v
            for labels, v in samples(text, "xpu_timer_nccl_transfer_collectives_total")}


def run(a):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=dev)
    factor = 2.0 * (world - 1) / world
    # Connections up and kernels loaded, in a size bucket the sweep does not use.
    small = torch.ones(1024, device=dev)
    for _ in range(20):
        dist.all_reduce(small)
    torch.cuda.synchronize()
    cycles_per_us = 0.0
    if a.skew_us > 0:
        # torch.cuda._sleep spins for a number of GPU cycles: calibrate them.
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.cuda._sleep(10_000_000)
        e.record()
        torch.cuda.synchronize()
        cycles_per_us = 10_000_000 / (s.elapsed_time(e) * 1000)
    out = open(a.out, "w") if rank == 0 else None
    for mib in [int(x) for x in a.sizes_mib.split(",")]:
        size = mib << 20
        buf = torch.ones(size // 4, device=dev, dtype=torch.float32)
        for _ in range(a.warmup):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        dist.barrier()
        before = measured(scrape(a.port)) if rank == 0 else 0
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.iters):
            if rank == 0 and cycles_per_us > 0:
                torch.cuda._sleep(int(a.skew_us * cycles_per_us))
            dist.all_reduce(buf)
        end.record()
        torch.cuda.synchronize()
        per_op_s = start.elapsed_time(end) / 1000 / a.iters
        times = [None] * world
        dist.all_gather_object(times, per_op_s)
        if rank == 0:
            # The supervisor reads the rings on its poll and reports once a
            # second: wait until it measured this size's all-reduces.
            deadline = time.time() + a.metrics_wait_s
            text = scrape(a.port)
            while time.time() < deadline and measured(text) < before + a.iters:
                time.sleep(0.5)
                text = scrape(a.port)
            bucket = int(math.log2(size))
            row = {"size": size, "bucket": bucket, "ranks": world, "iters": a.iters,
                   "skew_us": a.skew_us, "torch_time_s": times,
                   "torch_busbw": size / max(times) * factor,
                   "measured_new": measured(text) - before, "outcomes": outcomes(text)}
            row.update(bucket_figures(text, bucket, world))
            out.write(json.dumps(row) + "\n")
            out.flush()
            print("LINK", json.dumps(row), flush=True)
        dist.barrier()
    dist.destroy_process_group()


def nccl_tests_busbw(path):
    """size -> out-of-place busbw (bytes/s) from an all_reduce_perf log."""
    figures = {}
    if not os.path.exists(path):
        return figures
    for line in open(path):
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[2] == "float":
            try:
                figures[int(f[0])] = float(f[7]) * 1e9
            except ValueError:
                pass
    return figures


def summarize(d):
    def load(name):
        path = os.path.join(d, name)
        if not os.path.exists(path):
            return {}
        return {r["size"]: r for r in (json.loads(l) for l in open(path) if l.strip())}

    def gb(v):
        return "%7.1f" % (v / 1e9) if v else "      -"

    def mid(by_rank):
        return median(list(by_rank.values())) if by_rank else None

    plain, skew, sampled = load("plain.jsonl"), load("skew.jsonl"), load("sampled.jsonl")
    nccl = nccl_tests_busbw(os.path.join(d, "nccl_tests.log"))
    print("bus bandwidth, GB/s (medians over ranks); skew: rank 0's GPU %s us late at each one"
          % (next(iter(skew.values()))["skew_us"] if skew else "-"))
    print("   size MiB | nccl-tests |  torch  transfer  GPU-time | skew: torch  transfer  GPU-time"
          " | sampled: transfer measured/skipped")
    for size in sorted(set(plain) | set(skew) | set(sampled)):
        p, s, q = plain.get(size, {}), skew.get(size, {}), sampled.get(size, {})
        o = q.get("outcomes", {})
        skipped = sum(v for k, v in o.items() if k != "measured")
        print("  %9d |    %s |%s  %s   %s |      %s  %s   %s |          %s  %s/%s" % (
            size >> 20, gb(nccl.get(size)), gb(p.get("torch_busbw")),
            gb(mid(p.get("transfer_busbw", {}))), gb(mid(p.get("gpu_time_busbw", {}))),
            gb(s.get("torch_busbw")), gb(mid(s.get("transfer_busbw", {}))),
            gb(mid(s.get("gpu_time_busbw", {}))), gb(mid(q.get("transfer_busbw", {}))),
            int(o.get("measured", 0)), int(skipped)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes-mib", default="1,2,4,8,16,32,64,128,256")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--skew-us", type=float, default=0)
    p.add_argument("--port", type=int, default=18895)
    p.add_argument("--metrics-wait-s", type=float, default=30)
    p.add_argument("--out", default="link_bandwidth.jsonl")
    p.add_argument("--summarize", metavar="DIR")
    a = p.parse_args()
    if a.summarize:
        summarize(a.summarize)
    else:
        run(a)


if __name__ == "__main__":
    sys.exit(main())
