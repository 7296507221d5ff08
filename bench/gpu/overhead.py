"""Overhead of xpu-timer on real training steps, A/B interleaved in one job.

Run under the supervisor (so libxpu_timer_inject.so is preloaded and active):

    xpu_timer_supervisor -- torchrun --nproc_per_node=2 bench/gpu/overhead.py

Each workload runs warm-up rounds, then rounds in the order A B B A A B B A ...
(A = timing on, B = timing paused through xpu_timer_bench_set_paused, the
injected library's one exported control: paused hooks call straight through,
exactly like an unwatched process). A round is `--steps` steps between two
cuda synchronizations. Rank 0 prints, per workload, the median step time of A
and of B, the median and spread of the per-pair ratios A/B, and checks through
the status page counters that the A rounds were really timed and the B rounds
were not.

With --pairs N the modes alternate at every step instead (A B B A ... one
step each, each between two cuda synchronizations): drift of the machine
slower than a step (clocks, neighbours, other processes) then falls on both
arms of a pair alike, which rounds of many steps cannot give a host-bound
loop. The result adds the bootstrap 95% interval of the median of the N
per-pair ratios (resampling pairs). --arms names what a B step lacks, one
run of N pairs each: `paused` (the whole library), one part of it switched
off through xpu_timer_bench_set_part (inject/bench_parts.h), or `pin_poller`
(the background thread pinned to one core): see Arm.

--one-gpu runs every rank on GPU 0 and gives each its own NCCL_HOSTID, so
NCCL takes the ranks for separate hosts and connects them through its socket
transport on the loopback interface: a collective of world 2 that really
communicates (proxy thread, network transport, profiler-plugin callbacks),
on a machine with one GPU.

Workloads:
  ddp       GPT-style decoder (bf16) with DDP all-reduce
  tp        tensor-parallel style: all-reduces on a second stream overlapping matmuls
  launch    launch-bound: many small matmuls and small all-reduces
Micro-benchmark: added host time per hooked cublasGemmEx call (ctypes, hooked
symbol vs the real one from the loaded libcublas) and per torch all_reduce /
matmul launch (paused vs timed).
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

from overhead_arms import Arm, bench_function, kernel_ch_dump  # bench/gpu/, beside this script
from thread_switches import switch_summary, thread_switches
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def control():
    """xpu_timer_bench_set_paused(paused) of the injected library, or None."""
    return bench_function("xpu_timer_bench_set_paused", [ctypes.c_int])


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False, is_causal=True)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, layers, d, heads, vocab, seq):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, idx):
        x = self.emb(idx) + self.pos[:, : idx.shape[1]]
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(self.ln(x))


def make_ddp(args, dev):
    model = GPT(args.layers, args.width, args.width // 64, 32000, args.seq).to(dev, torch.bfloat16)
    model = DDP(model, device_ids=[dev.index])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, 32000, (args.batch, args.seq), device=dev)
    tgt = torch.randint(0, 32000, (args.batch, args.seq), device=dev)

    def step():
        logits = model(idx)
        loss = nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]).float(), tgt.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def make_tp(args, dev):
    # Megatron-style row/column parallel MLP: each layer's partial output is
    # all-reduced on a communication stream while the next matmul runs.
    d = args.width * 2
    ws = [torch.randn(d, d, device=dev, dtype=torch.bfloat16) / d ** 0.5 for _ in range(args.layers)]
    x0 = torch.randn(args.batch * 512, d, device=dev, dtype=torch.bfloat16)
    comm = torch.cuda.Stream(device=dev)

    def step():
        x = x0
        pending = None
        for w in ws:
            y = x @ w
            if pending is not None:
                torch.cuda.current_stream().wait_stream(comm)
            comm.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(comm):
                dist.all_reduce(y)
                pending = y
            x = torch.relu(x @ w)  # overlaps the all-reduce of y
        torch.cuda.current_stream().wait_stream(comm)

    return step


def make_launch(args, dev):
    a = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    g = torch.ones(1024, device=dev)

    def step():
        x = a
        for i in range(200):
            x = torch.mm(x, a)
            if i % 10 == 0:
                dist.all_reduce(g)

    return step


def make_gpt2(args, dev):
    # Hugging Face GPT-2 (random init, nothing downloaded), as
    # bench/gpu/workloads/gpt2_ddp.py: --layers 12 --width 1024 --batch 8.
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=args.width // 64,
                     n_positions=args.seq, vocab_size=50257, attn_implementation="sdpa")
    model = DDP(GPT2LMHeadModel(cfg).to(dev, dtype=torch.bfloat16), device_ids=[dev.index])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device=dev)

    def step():
        model(input_ids=idx, labels=idx).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


WORKLOADS = {"ddp": make_ddp, "tp": make_tp, "launch": make_launch, "gpt2": make_gpt2}


def timed_round(step, steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def set_mode(ctl, timed):
    # Every rank switches between the same two collectives.
    dist.barrier()
    torch.cuda.synchronize()
    if ctl(0 if timed else 1) != 0:
        raise SystemExit("xpu_timer_bench_set_paused refused: is the job running under the supervisor?")
    dist.barrier()


def supervisor_get(path):
    """The supervisor's answer to GET `path` (text), or None without XPU_TIMER_BENCH_PORT."""
    port = os.environ.get("XPU_TIMER_BENCH_PORT")
    if not port:
        return None
    import urllib.request
    time.sleep(0.05)  # the poller publishes within a few ms of completion
    with urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=10) as r:
        return r.read().decode()


def issued_total(rank):
    """Operations rank `rank` pushed so far, from the supervisor's /ranks (or None)."""
    text = supervisor_get("/ranks")
    for entry in json.loads(text) if text is not None else []:
        if entry["rank"] == rank:
            return entry["issued_total"]
    return None


def metric_sums(names):
    """Sum over labels of each named series of the supervisor's /metrics (or None)."""
    text = supervisor_get("/metrics")
    if text is None:
        return None
    sums = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return sums


# What one timed (A) step makes our hooks do, from the supervisor's counters.
PER_STEP_SERIES = ("xpu_timer_kernel_launches_total", "xpu_timer_operations_total",
                   "xpu_timer_operations_timed_total", "xpu_timer_python_gc_collections_total",
                   "xpu_timer_self_hook_seconds_total", "xpu_timer_self_poller_cpu_seconds_total",
                   "xpu_timer_python_function_calls_total")


def bootstrap_median_ci(ratios, n=4000, seed=1):
    """95% interval of the median of `ratios`, resampling them (numpy)."""
    import numpy as np
    x = np.asarray(ratios)
    rng = np.random.default_rng(seed)
    meds = np.median(x[rng.integers(0, len(x), size=(n, len(x)))], axis=1)
    return float(np.quantile(meds, 0.025)), float(np.quantile(meds, 0.975))


def switch(ctl, timed, world):
    """Timing on (timed) or paused in every rank, between two steps."""
    switch_arm(Arm("paused", ctl, None, 0), timed, world)


def switch_arm(arm, a, world):
    """Every rank into the A state (a) or B state of `arm`, between two steps."""
    if world > 1:
        dist.barrier()
    torch.cuda.synchronize()
    arm.set_b(not a)
    if world > 1:
        dist.barrier()


def ab_steps(name, step, args, ctl, rank, world, arm):
    """--pairs: A and B alternate at every step (A B B A ...); B lacks `arm`."""
    for _ in range(args.warmup * args.steps):
        step()
    a_times, b_times = [], []
    m0 = metric_sums(PER_STEP_SERIES) if rank == 0 else None
    # --step-log: each step's mode and CLOCK_MONOTONIC bounds, so that a
    # sampling profile of the same run (perf record -k CLOCK_MONOTONIC) can be
    # split into A and B steps (bench/gpu/perf_split.py).
    log = open("%s.rank%d" % (args.step_log, rank), "a") if args.step_log else None
    switches = []  # --ctx-switches: (mode, per-kind deltas) of each step
    for i in range(args.pairs):
        for mode in ("A", "B") if i % 2 == 0 else ("B", "A"):
            switch_arm(arm, mode == "A", world)
            torch.cuda.synchronize()
            s0 = thread_switches() if args.ctx_switches else None
            t0 = time.perf_counter()
            m0_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            step()
            torch.cuda.synchronize()
            (a_times if mode == "A" else b_times).append(time.perf_counter() - t0)
            if s0 is not None:
                s1 = thread_switches()
                switches.append((mode, {k: [s1[k][0] - s0.get(k, [0, 0])[0],
                                            s1[k][1] - s0.get(k, [0, 0])[1]] for k in s1}))
            if log:
                log.write("%s %s %d %d\n" % (arm.name, mode, m0_ns,
                                              time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
    if log:
        log.close()
    m1 = metric_sums(PER_STEP_SERIES) if m0 is not None else None
    # Were the A steps timed and the B steps not: xpu-timer's count of recorded
    # operations over a few steps of each.
    counted = {}
    for mode in ("A", "B"):
        switch_arm(arm, mode == "A", world)
        before = issued_total(rank) if rank == 0 else None
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        after = issued_total(rank) if rank == 0 else None
        counted[mode] = after - before if before is not None and after is not None else None
    switch_arm(arm, True, world)
    arm.finish()
    ratios = [a / b for a, b in zip(a_times, b_times)]
    med = statistics.median(ratios)
    q = statistics.quantiles(ratios, n=4)
    lo, hi = bootstrap_median_ci(ratios)
    diffs = [a - b for a, b in zip(a_times, b_times)]
    res = {
        "workload": name,
        "b_lacks": arm.name,
        "interleave": "step",
        "pairs": len(ratios),
        "world": world,
        "median_step_ms_with": statistics.median(a_times) * 1e3,
        "median_step_ms_without": statistics.median(b_times) * 1e3,
        "median_ratio": med,
        "ci95": [lo, hi],
        "ratio_p25": q[0],
        "ratio_p75": q[-1],
        "median_diff_us": statistics.median(diffs) * 1e6,
        "recorded_ops_3_steps_with": counted["A"],
        "recorded_ops_3_steps_without": counted["B"],
        # Paused steps count nothing: per A step (the supervisor's counters lag by a poll).
        "per_timed_step": {k[len("xpu_timer_"):]: (m1[k] - m0[k]) / args.pairs for k in m0} if m1 else None,
    }
    if switches:
        res["context_switches_per_step"] = switch_summary(switches)
    if rank == 0:
        print(json.dumps(res), flush=True)
    return res


def ab_rounds(name, step, args, ctl, rank):
    for _ in range(args.warmup):
        timed_round(step, args.steps)
    a_times, b_times = [], []
    order = []
    for i in range(args.rounds):
        order += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    counted = {"A": [], "B": []}
    for mode in order:
        set_mode(ctl, mode == "A")
        before = issued_total(rank) if rank == 0 else None
        t = timed_round(step, args.steps)
        after = issued_total(rank) if rank == 0 else None
        if before is not None and after is not None:
            counted[mode].append(after - before)
        (a_times if mode == "A" else b_times).append(t)
    set_mode(ctl, True)
    ratios = [a / b for a, b in zip(a_times, b_times)]
    med = statistics.median(ratios)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), med, max(ratios)]
    res = {
        "workload": name,
        "rounds_each": len(a_times),
        "steps_per_round": args.steps,
        "median_step_ms_with": statistics.median(a_times) * 1e3,
        "median_step_ms_without": statistics.median(b_times) * 1e3,
        "median_ratio": med,
        "ratio_p25": q[0],
        "ratio_p75": q[-1],
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        # Operations xpu-timer recorded per round: > 0 with timing on, 0 paused.
        "recorded_ops_per_round_with": statistics.median(counted["A"]) if counted["A"] else None,
        "recorded_ops_per_round_without": max(counted["B"]) if counted["B"] else None,
    }
    if rank == 0:
        print(json.dumps(res), flush=True)
    return res


def find_libcublas():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if os.path.basename(path).startswith("libcublas.so"):
                return path
    return None


def micro_gemm(dev, calls, chunks):
    """Added host time per cublasGemmEx: the hooked symbol vs the real one."""
    torch.mm(torch.ones(8, 8, device=dev), torch.ones(8, 8, device=dev))  # load cuBLAS
    handle = ctypes.c_void_p(torch.cuda.current_blas_handle())
    real = ctypes.CDLL(find_libcublas()).cublasGemmEx
    hooked = ctypes.CDLL(None).cublasGemmEx  # LD_PRELOAD comes first in the global scope
    n = 64
    a = torch.ones(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    CUDA_R_16BF, COMPUTE_32F, GEMM_DEFAULT = 14, 68, -1
    args = (handle, 0, 0, n, n, n, ctypes.byref(alpha), ctypes.c_void_p(a.data_ptr()), CUDA_R_16BF, n,
            ctypes.c_void_p(a.data_ptr()), CUDA_R_16BF, n, ctypes.byref(beta),
            ctypes.c_void_p(c.data_ptr()), CUDA_R_16BF, n, COMPUTE_32F, GEMM_DEFAULT)
    for f in (real, hooked):
        f.restype = ctypes.c_int
        assert f(*args) == 0, "cublasGemmEx failed"
    per = {"real": [], "hooked": []}
    for i in range(chunks):
        for name, f in (("real", real), ("hooked", hooked)) if i % 2 == 0 else (("hooked", hooked), ("real", real)):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                f(*args)
            per[name].append((time.perf_counter() - t0) / calls)
            torch.cuda.synchronize()
    diffs = [h - r for h, r in zip(per["hooked"], per["real"])]
    return {"cublasGemmEx_real_us": statistics.median(per["real"]) * 1e6,
            "cublasGemmEx_hooked_us": statistics.median(per["hooked"]) * 1e6,
            "cublasGemmEx_added_us": statistics.median(diffs) * 1e6}


def micro_torch(ctl, dev, calls, chunks, world):
    """Added host time per torch launch of a small matmul and all_reduce:
    chunks of `calls` calls alternated timed / paused (A B B A ...), the
    median of the per-chunk-pair differences with its bootstrap interval."""
    a = torch.ones(64, 64, device=dev, dtype=torch.bfloat16)
    bias = torch.zeros(64, device=dev, dtype=torch.bfloat16)
    x = torch.zeros(64, 64, device=dev, dtype=torch.bfloat16)
    g = torch.ones(256, device=dev)
    out = {}
    # torch_addmm: a bias addmm, which PyTorch runs through cublasLtMatmul;
    # torch_add: a plain kernel launch (the runtime's launch hook only).
    for name, fn in (("torch_mm", lambda: torch.mm(a, a)), ("torch_addmm", lambda: torch.addmm(bias, a, a)),
                     ("torch_add", lambda: x.add_(1)), ("torch_all_reduce", lambda: dist.all_reduce(g))):
        per = {True: [], False: []}
        for i in range(chunks):
            for timed in ((True, False) if i % 2 == 0 else (False, True)):
                switch(ctl, timed, world)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                per[timed].append((time.perf_counter() - t0) / calls)
                torch.cuda.synchronize()
        switch(ctl, True, world)
        diffs = [t - u for t, u in zip(per[True], per[False])]
        out[name + "_untimed_us"] = statistics.median(per[False]) * 1e6
        out[name + "_timed_us"] = statistics.median(per[True]) * 1e6
        out[name + "_added_us"] = statistics.median(diffs) * 1e6
        if len(diffs) >= 20:
            lo, hi = bootstrap_median_ci(diffs)
            out[name + "_added_us_ci95"] = [lo * 1e6, hi * 1e6]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workloads", default="ddp,tp,launch")
    p.add_argument("--rounds", type=int, default=20, help="A/B pairs per workload")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--micro-calls", type=int, default=2000)
    p.add_argument("--ctx-switches", action="store_true",
                   help="with --pairs: count each step's context switches of the rank's threads "
                        "(/proc, read between steps) and report A - B per thread kind")
    p.add_argument("--step-log", default="",
                   help="with --pairs: append each step's arm, mode and CLOCK_MONOTONIC "
                        "start and end (ns) to PATH.rankN")
    p.add_argument("--kernel-ch-dump", default="",
                   help="after the run, each rank writes the samples of NCCL's kernel-channel "
                        "events (the kernel_ch arm) to PATH.rankN")
    p.add_argument("--micro-chunks", type=int, default=10)
    p.add_argument("--pairs", type=int, default=0,
                   help="alternate A and B at every step, this many pairs (instead of --rounds)")
    p.add_argument("--arms", default="paused",
                   help="with --pairs: what B steps lack, one run of pairs each (see Arm)")
    p.add_argument("--pin-cpu", type=int, default=-1,
                   help="pin_poller: the core of rank 0's background thread (rank r: this + r)")
    p.add_argument("--one-gpu", action="store_true",
                   help="every rank on GPU 0, connected by NCCL's socket transport (see above)")
    args = p.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = 0 if args.one_gpu else int(os.environ["LOCAL_RANK"])
    if args.one_gpu:
        os.environ.update({"NCCL_HOSTID": "xpu-bench-host%d" % rank, "NCCL_SOCKET_IFNAME": "lo",
                           "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"})
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=dev)
    ctl = control()
    if ctl is None:
        raise SystemExit("libxpu_timer_inject.so is not preloaded: run under xpu_timer_supervisor")
    results = []
    for name in args.workloads.split(","):
        step = WORKLOADS[name](args, dev)
        step()  # first hooked calls start the injected runtime
        torch.cuda.synchronize()
        if args.pairs:
            for arm in args.arms.split(","):
                results.append(ab_steps(name, step, args, ctl, rank, world,
                                        Arm(arm, ctl, args, int(os.environ.get("LOCAL_RANK", 0)))))
        else:
            results.append(ab_rounds(name, step, args, ctl, rank))
        del step
        torch.cuda.empty_cache()
    micro = {}
    if args.micro_calls:
        micro = micro_gemm(dev, args.micro_calls, args.micro_chunks)
        micro.update(micro_torch(ctl, dev, args.micro_calls // 4, args.micro_chunks, world))
    if args.kernel_ch_dump:
        path = "%s.rank%d" % (args.kernel_ch_dump, rank)
        print("rank %d: %d kernel-channel samples to %s" % (rank, kernel_ch_dump(path), path), flush=True)
    if rank == 0:
        print(json.dumps({"micro": micro}), flush=True)
        print("\n%-8s %-18s %12s %12s %10s %18s %18s" % (
            "workload", "B lacks", "with ms", "without ms", "ratio", "ratio p25..p75", "95% interval"))
        for r in results:
            ci = r.get("ci95")
            print("%-8s %-18s %12.3f %12.3f %10.4f %8.4f..%-8.4f %s" % (
                r["workload"], r.get("b_lacks", "paused"), r["median_step_ms_with"], r["median_step_ms_without"], r["median_ratio"],
                r["ratio_p25"], r["ratio_p75"], "%.4f..%.4f" % tuple(ci) if ci else "-"))
        for k, v in micro.items():
            print("%-28s %s us" % (k, "%.3f..%.3f" % tuple(v) if isinstance(v, list) else "%8.3f" % v))
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
