"""What a B step of bench/gpu/overhead.py --pairs lacks (Arm), switched in a
running process through the injected library's bench controls
(inject/bench_control.cc, inject/bench_parts.h, inject/nccl_kernel_ch_probe.h)."""
import ctypes
import os

from thread_switches import tasks


def bench_function(name, argtypes, restype=ctypes.c_int):
    """The injected library's exported bench control `name`, or None."""
    try:
        f = getattr(ctypes.CDLL(None), name)
    except AttributeError:
        return None
    f.argtypes = argtypes
    f.restype = restype
    return f


def part_control():
    """xpu_timer_bench_set_part(name, on) of the injected library, or None."""
    return bench_function("xpu_timer_bench_set_part", [ctypes.c_char_p, ctypes.c_int])


def kernel_ch_dump(path):
    """Writes the KernelCh probe's samples to `path`: their count, or -1."""
    f = bench_function("xpu_timer_bench_kernel_ch_dump", [ctypes.c_char_p], ctypes.c_long)
    return -1 if f is None else f(path.encode())


def poller_tid():
    """The thread id of the injected library's background thread, or None."""
    return next((tid for tid, comm in tasks() if comm == "xpu_timer_poll"), None)


class Arm:
    """What a B step lacks that an A step has (A: everything on).

    paused        the whole library (xpu_timer_bench_set_paused): B = unwatched
    pin_poller    B: the background thread pinned to one core of the rank's
                  own set (its last, or one given by --pin-cpu), away from the
                  cores the scheduler gives the main and NCCL threads
    <part>        one part of the library switched off (inject/bench_parts.h):
                  poller, queries, collective_events, gpu_clock, call_sites,
                  profiler_plugin (our callbacks), profiler_in_nccl (NCCL's
                  profiler path: its activation mask 0), timed_ops, op_records,
                  launch_count, end_query_first (B: the Poller's earlier query
                  order, start before end)
    <a>+<b>+...   several parts off together in B (e.g. the hooks' whole work:
                  collective_events+op_records+launch_count+timed_ops)
    kernel_ch     the reverse of a part: A asks NCCL for its kernel-channel
                  events besides everything else, B does not (the probe of
                  inject/nccl_kernel_ch_probe.h); off again after the arm
    """

    def __init__(self, name, paused_ctl, args, local_rank):
        self.name = name
        self.paused_ctl = paused_ctl
        self.part_ctl = part_control()
        self.tid = None
        if name == "pin_poller":
            self.tid = poller_tid()
            if self.tid is None:
                raise SystemExit("no xpu_timer_poll thread in this process")
            self.free_mask = os.sched_getaffinity(self.tid)
            cpus = sorted(os.sched_getaffinity(0))
            self.pinned = {args.pin_cpu + local_rank} if args.pin_cpu >= 0 else {cpus[-1 - local_rank]}
        elif name == "kernel_ch":
            self.kernel_ch_ctl = bench_function("xpu_timer_bench_set_kernel_ch", [ctypes.c_int])
            if self.kernel_ch_ctl is None:
                raise SystemExit("xpu_timer_bench_set_kernel_ch missing: an older libxpu_timer_inject.so?")
        elif name != "paused" and self.part_ctl is None:
            raise SystemExit("xpu_timer_bench_set_part missing: an older libxpu_timer_inject.so?")

    def set_b(self, b):
        """Puts this process in the state of a B step (b) or an A step."""
        if self.name == "paused":
            rc = self.paused_ctl(1 if b else 0)
        elif self.name == "pin_poller":
            os.sched_setaffinity(self.tid, self.pinned if b else self.free_mask)
            rc = 0
        elif self.name == "kernel_ch":
            rc = self.kernel_ch_ctl(0 if b else 1)
        else:
            rc = 0
            for part in self.name.split("+"):
                rc = rc or self.part_ctl(part.encode(), 0 if b else 1)
        if rc != 0:
            raise SystemExit("switching %s refused: is the job running under the supervisor?" % self.name)

    def finish(self):
        """After the arm's last step (left in the A state): the probe off again."""
        if self.name == "kernel_ch":
            self.kernel_ch_ctl(0)
