#!/usr/bin/env python3
"""Python twin of sim_trainer (same flags, plus those whose help says "Python
only", e.g. --gc-per-step, --loader-ms, --pipeline-1f1b): a training loop over
libsim_workload.so loaded with ctypes.CDLL(mode=RTLD_LOCAL), as Python loads
torch, so the Python frames of a stuck or crashing rank are real ones.
Steps are numbered from 0. Python 3.8+, standard library only."""

import argparse
import ctypes
import os
import random
import signal
import sys
import time

GEMM_APIS = ["gemmex", "stridedbatchedex", "sgemm", "hgemm", "sgemmstridedbatched",
             "hgemmstridedbatched", "ltmatmul"]
COLLECTIVES = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce"]


def parse_args(argv):
    # Every flag's help names its default (and --lib-dir its variable).
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, default=10, help="training steps to run")
    p.add_argument("--gemm", default="1024,1024,1024", help="M,N,K: shape of every GEMM")
    p.add_argument("--gemm2", default=None,
                   help="M,N,K: a second shape; each step also runs --gemms-per-step GEMMs of it")
    p.add_argument("--gemm-api", default="gemmex", choices=GEMM_APIS + ["all"],
                   help="cuBLAS/cuBLASLt entry point (all: rotate through them)")
    p.add_argument("--gemm-batch", type=int, default=2, help="batch of the strided-batched APIs")
    p.add_argument("--gemms-per-step", type=int, default=3,
                   help="GEMMs before each step's collective")
    p.add_argument("--collective", default="allreduce", choices=COLLECTIVES + ["mixed"],
                   help="the collective of each step (mixed: all five in turn)")
    p.add_argument("--bytes", type=int, default=1 << 20, help="bytes per collective")
    p.add_argument("--hang-rank", type=int, default=-1,
                   help="this rank stops in stuck_in_host_code at --hang-step (-1: none)")
    p.add_argument("--hang-step", type=int, default=-1, help="step at which --hang-rank hangs")
    p.add_argument("--hang-file", default="",
                   help="--hang-rank hangs at the first step that finds this path (a benchmark's trigger)")
    p.add_argument("--stall-step", type=int, default=-1,
                   help="every rank stops in stalled_in_host_code at this step (-1: none)")
    p.add_argument("--slow-rank", type=int, default=-1,
                   help="this rank sleeps --slow-ms before each collective (-1: none)")
    p.add_argument("--slow-ms", type=float, default=0.0,
                   help="extra milliseconds of --slow-rank per step")
    p.add_argument("--slow-gpu-rank", type=int, default=-1,
                   help="every kernel and GEMM of this rank takes --slow-gpu-factor times as "
                        "long (-1: none; environment XPU_TIMER_SIM_SLOW_GPU_RANK)")
    p.add_argument("--slow-gpu-factor", type=float, default=1.0,
                   help="slowdown of --slow-gpu-rank's GPU (> 0)")
    p.add_argument("--slow-link-rank", type=int, default=-1,
                   help="this rank's collectives and sends/receives take --slow-link-factor "
                        "times as long after the last arrival, its peers' do not (-1: none; "
                        "environment XPU_TIMER_SIM_SLOW_LINK_RANK)")
    p.add_argument("--slow-link-factor", type=float, default=1.0,
                   help="slowdown of --slow-link-rank's links (> 0)")
    p.add_argument("--jitter-ms", type=float, default=0.0,
                   help="random 0..J milliseconds added to every rank's step")
    p.add_argument("--step-ms", type=float, default=0.0,
                   help="host milliseconds per step besides the GPU work")
    p.add_argument("--crash-rank", type=int, default=-1,
                   help="this rank crashes at --crash-step (-1: none)")
    p.add_argument("--crash-step", type=int, default=-1,
                   help="step at which --crash-rank crashes")
    p.add_argument("--crash-kind", default="segv", choices=["segv", "abort", "abort-in-thread",
                                                    "sigkill-self", "exception"],
                   help="how --crash-rank crashes")
    p.add_argument("--mismatch-rank", type=int, default=-1,
                   help="this rank's collective disagrees with the others' at --mismatch-step")
    p.add_argument("--mismatch-step", type=int, default=-1,
                   help="step of the disagreeing collective")
    p.add_argument("--mismatch-kind", default="op", choices=["op", "count", "dtype", "root"],
                   help="op: another collective, count: twice the elements, dtype: float32, "
                        "root: root 1 (needs --collective broadcast|reduce)")
    p.add_argument("--mismatch-hold", default="",
                   help="right after its odd collective, --mismatch-rank waits in "
                        "held_after_odd_collective until PATH exists (at most 120 s)")
    p.add_argument("--second-comm-bytes", type=int, default=0,
                   help="each step also all-reduces B bytes on a second communicator of the "
                        "same ranks (0: none)")
    p.add_argument("--second-comm-groups", type=int, default=1,
                   help="the second communicator is split from the first into G groups "
                        "(rank mod G), as tensor or data parallel groups are")
    p.add_argument("--hang-before-second", action="store_true",
                   help="--hang-rank stops before the second communicator's collective of "
                        "--hang-step instead of before the first's")
    p.add_argument("--parallel", default="",
                   help="TP,PP,DP: each step also all-reduces --bytes on the tensor, pipeline and "
                        "data parallel groups Megatron builds (tensor ranks adjacent, then data, "
                        "then pipeline; communicators named tp, pp, dp, split from the world "
                        "one); TP*PP*DP must be the world size")
    p.add_argument("--hang-before-group", default="", choices=["", "tp", "pp", "dp"],
                   help="--hang-rank stops before that group's collective")
    p.add_argument("--swap-rank", type=int, default=-1,
                   help="at --swap-step, rank R issues its tp collective before the world one "
                        "(a deadlock by order with the rest of its tensor group); needs --parallel")
    p.add_argument("--swap-step", type=int, default=-1, help="the step of --swap-rank")
    p.add_argument("--comm-name", default="",
                   help="create the communicator with ncclCommInitRankConfig named NAME "
                        "(commName); the one of --second-comm-bytes is named NAME_split "
                        "(empty: ncclCommInitRank, no name)")
    p.add_argument("--gc-per-step", type=int, default=0,
                   help="Python only: turn automatic garbage collection off and run gc.collect() "
                        "N times per step (0: leave gc alone)")
    p.add_argument("--loader-ms", type=float, default=0.0,
                   help="Python only: each step takes one batch from SimLoaderIter, whose "
                        "__next__ sleeps MS ms (a slow DataLoader; time it with "
                        "XPU_TIMER_DATALOADER_ITER=__main__:SimLoaderIter; 0: no loader)")
    p.add_argument("--await-probes", action="store_true",
                   help="Python only: before the loop, wait (at most 30 s) until xpu-timer's "
                        "Python probes timed SimLoaderIter, so that a test can count every batch")
    p.add_argument("--traced-calls", action="store_true",
                   help="Python only: each step calls host_work(2) (a function of this script "
                        "that calls itself twice) and, from step 1 on, after importing sim_host "
                        "at the end of step 0: sim_host.synchronize() twice (the second raises), "
                        "sim_host.Stream().wait_event() and the generator sim_host.batches(2); "
                        "functions to trace with XPU_TIMER_HOST_TRACING_FUNC; --await-probes "
                        "then also waits for host_work to be traced")
    p.add_argument("--nvtx", action="store_true",
                   help="mark each step with NVTX ranges (real NVTX v3 calls): a start/end "
                        "'train_step' around push/pop 'forward' (the GEMMs) and 'backward' "
                        "holding 'allreduce' (the collective), plus one range in domain "
                        "'NCCL' (ignored unless XPU_TIMER_NVTX_DOMAINS lists it)")
    p.add_argument("--nvtx-names", type=int, default=0,
                   help="also push and pop this many distinct names ('layer_<i>') each step")
    p.add_argument("--optimizer-steps", action="store_true",
                   help="call the hooks registered with register_step_hook after each step, "
                        "as torch calls optimizer step post-hooks (run with "
                        "XPU_TIMER_OPTIMIZER_HOOK=__main__:register_step_hook)")
    p.add_argument("--named-threads", action="store_true",
                   help="Python only: before the first CUDA call start the threading.Threads "
                        "'data-prefetch' (blocked on an Event) and 'self-named' (which names "
                        "its OS thread 'pt_selfnamed' first, as PyTorch names its threads); "
                        "after --await-probes, 'data-prefetch' starts 'prefetch-worker-1' "
                        "(blocked): threads for xpu-timer's Python thread names")
    p.add_argument("--pipeline-1f1b", type=int, default=0, metavar="M",
                   help="Python only: each step is one 1F1B pipeline-parallel schedule over M "
                        "micro-batches instead (rank s is stage s of WORLD_SIZE stages; see "
                        "pipeline_step), after one such step in range 'pipeline_warmup'; "
                        "--gemm, --gemm-api, --bytes and --steps apply, the other step flags "
                        "do not (0: off)")
    p.add_argument("--pipeline-backward-gemms", type=int, default=2,
                   help="GEMMs of one micro-batch's backward in --pipeline-1f1b (a forward has "
                        "one)")
    p.add_argument("--pipeline-range", default="pipeline_step",
                   help="name of the NVTX push/pop range around each --pipeline-1f1b step")
    p.add_argument("--gpu-lead-ms", type=float, default=0.0,
                   help="start each step with this much GPU work no CUDA call shows "
                        "(sim_hold_gpu), so the step's GEMMs run back to back behind it however "
                        "late the host launches them, as on a GPU the host keeps ahead of")
    p.add_argument("--end-sleep-s", type=float, default=0.0,
                   help="seconds to sleep after the loop, before sim_finalize (0: none)")
    p.add_argument("--exit-code", type=int, default=0,
                   help="exit status of a run that ends normally (0-255)")
    p.add_argument("--verbose", action="store_true", help="print every step")
    p.add_argument("--lib-dir", default=None,
                   help="folder of libsim_workload.so; environment XPU_TIMER_SIM_LIB_DIR, "
                        "else the build's simgpu/lib")
    args = p.parse_args(argv)
    if (args.mismatch_rank >= 0 and args.mismatch_kind == "root"
            and args.collective not in ("broadcast", "reduce")):
        p.error("--mismatch-kind root needs --collective broadcast or reduce (a collective with a root)")
    try:
        args.m, args.n, args.k = (int(x) for x in args.gemm.split(","))
        args.shape2 = tuple(int(x) for x in args.gemm2.split(",")) if args.gemm2 else None
        if args.shape2 is not None and (len(args.shape2) != 3 or min(args.shape2) <= 0):
            raise ValueError
    except ValueError:
        p.error("--gemm and --gemm2 want M,N,K")
    if not all(0 < f < float("inf") for f in (args.slow_gpu_factor, args.slow_link_factor)):
        p.error("--slow-gpu-factor and --slow-link-factor want a finite factor > 0")
    if args.pipeline_1f1b < 0 or args.pipeline_backward_gemms < 1:
        p.error("--pipeline-1f1b wants M >= 0 and --pipeline-backward-gemms at least 1")
    args.tp = args.pp = args.dp = 0
    if args.parallel:
        try:
            args.tp, args.pp, args.dp = (int(x) for x in args.parallel.split(","))
        except ValueError:
            p.error("--parallel wants TP,PP,DP (three whole numbers >= 1)")
        if min(args.tp, args.pp, args.dp) < 1:
            p.error("--parallel wants TP,PP,DP (three whole numbers >= 1)")
    if (args.hang_before_group or args.swap_rank >= 0) and not args.parallel:
        p.error("--hang-before-group and --swap-rank need --parallel")
    return args


def lib_dir(args):
    if args.lib_dir:
        return args.lib_dir
    env = os.environ.get("XPU_TIMER_SIM_LIB_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "simgpu", "lib")


def export_slow_rank_knobs(args):
    """The simulated libraries read these once, so set them before loading
    them; only for the knobs given, so that the caller's stay in force otherwise
    (tests/simgpu/slow_rank.h)."""
    for what, rank, factor in (("GPU", args.slow_gpu_rank, args.slow_gpu_factor),
                               ("LINK", args.slow_link_rank, args.slow_link_factor)):
        if rank >= 0:
            os.environ["XPU_TIMER_SIM_SLOW_%s_RANK" % what] = str(rank)
            os.environ["XPU_TIMER_SIM_SLOW_%s_FACTOR" % what] = repr(factor)


def load_workload(directory):
    lib = ctypes.CDLL(os.path.join(directory, "libsim_workload.so"), mode=os.RTLD_LOCAL)
    lib.sim_init.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.sim_set_comm_name.argtypes = [ctypes.c_char_p]
    lib.sim_gemm.argtypes = [ctypes.c_int] * 5
    lib.sim_collective.argtypes = [ctypes.c_int, ctypes.c_long]
    lib.sim_collective_ex.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.c_int, ctypes.c_int]
    lib.sim_split_allreduce.argtypes = [ctypes.c_int, ctypes.c_long]
    lib.sim_subgroup_allreduce.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_long]
    lib.sim_send.argtypes = [ctypes.c_int, ctypes.c_long]
    lib.sim_recv.argtypes = [ctypes.c_int, ctypes.c_long]
    lib.sim_last_error.restype = ctypes.c_char_p
    lib.sim_nvtx_push.argtypes = [ctypes.c_char_p]
    lib.sim_nvtx_start.argtypes = [ctypes.c_char_p]
    lib.sim_nvtx_start.restype = ctypes.c_ulonglong
    lib.sim_nvtx_end.argtypes = [ctypes.c_ulonglong]
    lib.sim_hold_gpu.argtypes = [ctypes.c_double]
    lib.sim_nvtx_domain_push.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lib


def check(lib, rc, what):
    if rc != 0:
        sys.stderr.write("sim_trainer.py: %s failed: %s\n" % (what, lib.sim_last_error().decode()))
        sys.exit(1)


def stuck_in_host_code(rank, step):
    """The hung rank sits here, outside any GPU work, for ever."""
    print("rank %d stuck_in_host_code at step %d" % (rank, step), flush=True)
    while True:
        time.sleep(3600)


def stalled_in_host_code(rank, step):
    """--stall-step: every rank sits here with nothing in flight, for ever,
    while xpu-timer's thread keeps its heartbeat."""
    print("rank %d stalled_in_host_code at step %d" % (rank, step), flush=True)
    while True:
        time.sleep(60)


def held_after_odd_collective(rank, path):
    """--mismatch-hold: the odd rank waits here right after its odd collective
    until the test creates PATH (once the mismatch's stacks named this place),
    so that the stacks find it inside the mismatch's code. Bounded; the wait
    is one line of C calls only, so the stacks name one line."""
    print("rank %d held_after_odd_collective until %s exists" % (rank, path), flush=True)
    deadline = time.monotonic() + 120
    while not os.access(path, os.F_OK) and time.monotonic() < deadline: time.sleep(0.01)


def crash(lib, kind, step):
    if kind == "segv":
        lib.sim_crash_segv()
        ctypes.string_at(0)  # not reached
    elif kind == "abort":
        lib.sim_crash_abort()
    elif kind == "abort-in-thread":
        lib.sim_crash_abort_in_thread()
    elif kind == "sigkill-self":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("simulated training failure at step %d" % step)


def train_step(lib, args, rank, step, apis, rng):
    if rank == args.crash_rank and step == args.crash_step:
        print("rank %d crashing (%s) at step %d" % (rank, args.crash_kind, step), flush=True)
        crash(lib, args.crash_kind, step)
    if args.gpu_lead_ms > 0:
        check(lib, lib.sim_hold_gpu(args.gpu_lead_ms), "sim_hold_gpu")
    if args.nvtx:
        lib.sim_nvtx_push(b"forward")
    for g in range(args.gemms_per_step):
        api = apis[(step * args.gemms_per_step + g) % len(apis)]
        check(lib, lib.sim_gemm(args.m, args.n, args.k, args.gemm_batch, api), "sim_gemm")
    for g in range(args.gemms_per_step if args.shape2 else 0):
        api = apis[(step * args.gemms_per_step + g) % len(apis)]
        check(lib, lib.sim_gemm(*args.shape2, args.gemm_batch, api), "sim_gemm")
    if args.nvtx:
        lib.sim_nvtx_pop()
        lib.sim_nvtx_push(b"backward")
        lib.sim_nvtx_push(b"allreduce")
    host_ms = args.step_ms
    if args.jitter_ms > 0:
        host_ms += rng.uniform(0.0, args.jitter_ms)
    if rank == args.slow_rank:
        host_ms += args.slow_ms
    if host_ms > 0:
        time.sleep(host_ms / 1000.0)
    hang_here = rank == args.hang_rank and (step == args.hang_step or
                                            (args.hang_file and os.path.exists(args.hang_file)))
    if hang_here and not args.hang_before_second and not args.hang_before_group:
        stuck_in_host_code(rank, step)

    def group_allreduce(group):
        if hang_here and args.hang_before_group == group:
            stuck_in_host_code(rank, step)
        check(lib, lib.sim_subgroup_allreduce(group.encode(), group_color(args, rank, group),
                                              args.bytes), "sim_subgroup_allreduce")

    swap_here = rank == args.swap_rank and step == args.swap_step
    if swap_here:
        print("rank %d issues its tp collective before the world one at step %d" % (rank, step),
              flush=True)
        group_allreduce("tp")
    kind = step % 5 if args.collective == "mixed" else COLLECTIVES.index(args.collective)
    if rank == args.mismatch_rank and step == args.mismatch_step:
        print("rank %d issues a mismatching collective (%s) at step %d"
              % (rank, args.mismatch_kind, step), flush=True)
        k = args.mismatch_kind
        world = int(os.environ.get("WORLD_SIZE", "1"))
        other = COLLECTIVES.index("allreduce" if kind == COLLECTIVES.index("allgather") else "allgather")
        odd = (other if k == "op" else kind, args.bytes * 2 if k == "count" else args.bytes,
               1 if k == "dtype" else 0, 1 % world if k == "root" else 0)
        check(lib, lib.sim_collective_ex(*odd), "sim_collective")  # the odd collective
        if args.mismatch_hold:
            held_after_odd_collective(rank, args.mismatch_hold)
    else:
        check(lib, lib.sim_collective(kind, args.bytes), "sim_collective")
    if args.nvtx:
        lib.sim_nvtx_pop()
        lib.sim_nvtx_pop()
        lib.sim_nvtx_domain_push(b"NCCL", b"ncclAllReduce")
    for i in range(args.nvtx_names):
        lib.sim_nvtx_push(b"layer_%d" % i)
        lib.sim_nvtx_pop()
    if args.second_comm_bytes > 0:
        if hang_here and args.hang_before_second:
            stuck_in_host_code(rank, step)
        check(lib, lib.sim_split_allreduce(args.second_comm_groups, args.second_comm_bytes),
              "sim_split_allreduce")
    for group in ("tp", "pp", "dp") if args.tp else ():
        if not (swap_here and group == "tp"):
            group_allreduce(group)
    check(lib, lib.sim_sync(), "sim_sync")


def group_color(args, rank, group):
    """The color of `rank` in the tensor ("tp"), pipeline ("pp") or data ("dp")
    parallel group of --parallel, as Megatron orders ranks: tensor ranks
    adjacent, then data, then pipeline."""
    tp_idx = rank % args.tp
    dp_idx = (rank // args.tp) % args.dp
    pp_idx = rank // (args.tp * args.dp)
    if group == "tp":
        return rank // args.tp
    if group == "dp":
        return pp_idx * args.tp + tp_idx
    return dp_idx * args.tp + tp_idx


def pipeline_schedule(stages, micro_batches, stage):
    """The classic 1F1B order of one stage: ("F", i) / ("B", i) per micro-batch.
    min(P-s-1, M) warm-up forwards, then one forward and one backward in turn,
    then the cool-down backwards."""
    warmup = min(stages - stage - 1, micro_batches)
    order = [("F", i) for i in range(warmup)]
    for j in range(micro_batches - warmup):
        order += [("F", warmup + j), ("B", j)]
    order += [("B", j) for j in range(micro_batches - warmup, micro_batches)]
    return order


def pipeline_step(lib, args, rank, world, range_name):
    """One training step of pipeline parallelism, rank = stage s of P = world.

    A forward: receive the activation from s-1 (s > 0), one GEMM of time f,
    send it to s+1 (s < P-1). A backward: receive the gradient from s+1
    (s < P-1), --pipeline-backward-gemms GEMMs (time b), send to s-1 (s > 0).
    The step ends with an all-reduce over all stages (time a) and a stream
    synchronize, inside the NVTX range, so every stage's step ends together.

    Closed form, transfers of time c: with c = 0 stage 0 starts at 0 and the
    last stage, once its first forward arrives at (P-1)f, never waits: it
    runs M(f+b), and the last backward then takes (P-1)b to reach stage 0,
    so every stage arrives at the all-reduce by (M+P-1)(f+b) (stage 0 last)
    and the step lasts W = (M+P-1)(f+b) + a + h, h the host's share (the
    range's push to stage 0's first GEMM, the all-reduce's end to the pop).
    Each stage computes M(f+b) of it, so its GPU is idle
        (P-1)(f+b) + a + h  out of  W,  i.e. (P-1)/(M+P-1) as a + h -> 0,
    for every stage and any f, b (checked on a model of this schedule's
    dependencies for P <= 8, M <= 12, b/f from 0.5 to 3). Each transfer on
    the critical path adds c, the communication stream being ordered with the
    compute stream: 2(P-1) + 2(M-1) + 2 max(0, M-3) of them for P >= 3, by
    the same model; XPU_TIMER_SIM_LAT_US=0 and small --bytes make c and a
    nanoseconds."""
    lib.sim_nvtx_push(range_name)
    for kind, _ in pipeline_schedule(world, args.pipeline_1f1b, rank):
        forward = kind == "F"
        source = rank - 1 if forward else rank + 1
        target = rank + 1 if forward else rank - 1
        if 0 <= source < world:
            check(lib, lib.sim_recv(source, args.bytes), "sim_recv")
        for _ in range(1 if forward else args.pipeline_backward_gemms):
            check(lib, lib.sim_gemm(args.m, args.n, args.k, args.gemm_batch, args.api), "sim_gemm")
        if 0 <= target < world:
            check(lib, lib.sim_send(target, args.bytes), "sim_send")
    check(lib, lib.sim_collective(COLLECTIVES.index("allreduce"), args.bytes), "sim_collective")
    check(lib, lib.sim_sync(), "sim_sync")
    lib.sim_nvtx_pop()


# register_step_hook: the stand-in for torch.optim.optimizer's
# register_optimizer_step_post_hook (same contract: hook(optimizer, args, kwargs)
# after every optimizer step).
STEP_HOOKS = []


class NamedThreads:
    """--named-threads: threads that block until the process exits."""

    def __init__(self):
        import threading
        self.threading = threading
        self.stop, self.spawn, self.spawned = (threading.Event() for _ in range(3))
        self_named = threading.Event()
        threading.Thread(target=self.prefetch, name="data-prefetch", daemon=True).start()
        threading.Thread(target=self.own_name, args=(self_named,), name="self-named",
                         daemon=True).start()
        self_named.wait()

    def prefetch(self):
        self.spawn.wait()
        # Started by a thread xpu-timer may have renamed: it inherits that name.
        self.threading.Thread(target=self.prefetch_worker, name="prefetch-worker-1",
                              daemon=True).start()
        self.spawned.set()
        self.stop.wait()

    def prefetch_worker(self):
        self.stop.wait()

    def own_name(self, named):
        ctypes.CDLL(None).prctl(15, b"pt_selfnamed", 0, 0, 0)  # PR_SET_NAME
        named.set()
        self.stop.wait()

    def start_worker(self):
        self.spawn.set()
        self.spawned.wait()


def register_step_hook(hook):
    STEP_HOOKS.append(hook)


def host_work(depth):
    """--traced-calls: a function of the entry script (traced as
    XPU_TIMER_HOST_TRACING_FUNC=host_work) that calls itself `depth` times."""
    if depth > 0:
        host_work(depth - 1)


def traced_calls(sim_host):
    """One step's calls of --traced-calls (the module's from step 1 on)."""
    host_work(2)
    if sim_host is None:
        return
    sim_host.synchronize()
    try:
        sim_host.synchronize(fail=True)
    except RuntimeError:
        pass
    sim_host.Stream().wait_event(None)
    for _ in sim_host.batches(2):
        pass


def traced(function):
    """Whether xpu-timer traces this function of the script: sys.monitoring
    events on its code (3.12+), else a wrapper in its place."""
    if sys.version_info >= (3, 12):
        return any(sys.monitoring.get_local_events(t, function.__code__) for t in range(6))
    return hasattr(function, "__wrapped__")


def probes_installed(args):
    """Whether xpu-timer's probes asked for are in: the optimizer hook, the
    DataLoader probe on SimLoaderIter and the tracing of host_work."""
    if args.optimizer_steps and not STEP_HOOKS:
        return False
    if args.traced_calls and not traced(globals()["host_work"]):
        return False
    return args.loader_ms <= 0 or traced(SimLoaderIter.__dict__["__next__"])


class SimLoaderIter:
    """Stands in for torch's _BaseDataLoaderIter: __next__ waits for a batch."""

    def __init__(self, wait_s):
        self.wait_s = wait_s
        self.n = 0

    def __iter__(self):
        return self

    def __next__(self):
        time.sleep(self.wait_s)
        self.n += 1
        return self.n


def main(argv):
    args = parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    export_slow_rank_knobs(args)
    lib = load_workload(lib_dir(args))
    apis = list(range(len(GEMM_APIS))) if args.gemm_api == "all" else [
        GEMM_APIS.index(args.gemm_api)]
    if args.comm_name:
        check(lib, lib.sim_set_comm_name(args.comm_name.encode()), "sim_set_comm_name")
    named_threads = NamedThreads() if args.named_threads else None
    if args.tp and args.tp * args.pp * args.dp != world:
        sys.exit("sim_trainer: --parallel %d,%d,%d does not make the world size %d"
                 % (args.tp, args.pp, args.dp, world))
    check(lib, lib.sim_init(rank, world, local_rank), "sim_init")
    rng = random.Random(rank * 7919 + 17)
    if args.gc_per_step > 0:
        import gc
        gc.disable()
    loader = SimLoaderIter(args.loader_ms / 1000.0) if args.loader_ms > 0 else None
    sim_host = None
    if args.await_probes:
        deadline = time.monotonic() + 30
        while not probes_installed(args) and time.monotonic() < deadline:
            time.sleep(0.01)
        print("rank %d probes %s" % (rank, "installed" if probes_installed(args) else "absent"),
              flush=True)
    if named_threads is not None:
        named_threads.start_worker()  # after the probes started: named at a step
    if args.pipeline_1f1b > 0:
        args.api = apis[0]
        # One step in a range of another name first, as training jobs warm
        # up: NVTX loads its injection, every call is made once, and the
        # stages leave it together.
        pipeline_step(lib, args, rank, world, b"pipeline_warmup")
    for step in range(args.steps):
        if args.pipeline_1f1b > 0:
            pipeline_step(lib, args, rank, world, args.pipeline_range.encode())
            if args.verbose:
                print("rank %d step %d done" % (rank, step), flush=True)
            continue
        if step == args.stall_step:
            stalled_in_host_code(rank, step)
        if loader is not None:
            next(loader)
        for _ in range(args.gc_per_step):
            gc.collect()
        step_range = lib.sim_nvtx_start(b"train_step") if args.nvtx else 0
        train_step(lib, args, rank, step, apis, rng)
        if args.nvtx:
            lib.sim_nvtx_end(step_range)
        if args.traced_calls:
            traced_calls(sim_host)
            if sim_host is None:
                import sim_host  # a module imported late: traced from the next step on
        if args.optimizer_steps:
            for hook in STEP_HOOKS:
                hook(None, (), {})
        if args.verbose:
            print("rank %d step %d done" % (rank, step), flush=True)
    if args.end_sleep_s > 0:
        print("rank %d loop done" % rank, flush=True)
        time.sleep(args.end_sleep_s)
    check(lib, lib.sim_finalize(), "sim_finalize")
    print("rank %d done" % rank, flush=True)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
