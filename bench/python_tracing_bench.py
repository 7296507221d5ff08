#!/usr/bin/env python3
"""CPU cost of xpu-timer's Python probes in a rank: per garbage collection and
per traced function call (docs/usage.md "Python function tracing").

Runs as a rank of a sim job under the supervisor, so that the injected library
is active and has installed its probes (its first CUDA call starts them):

  XPU_TIMER_HOST_TRACING_FUNC=traced_fn build/bin/xpu_timer_supervisor --port 0 \\
      --dump-dir /tmp/bench-dump -- build/bin/xpu_timer_sim_launch --nproc 1 -- \\
      python3.12 bench/python_tracing_bench.py

Method: interleaved rounds of the same loop with and without the probe, the
median per-call time of each; the difference is the probe's cost.
  - gc: gc.collect(0) with xpu-timer's gc.callbacks entry in place and with
    gc.callbacks emptied for the round (an empty generation 0: the fixed cost
    of a collection, where a probe weighs most); gc-dispatch-floor: the same
    with a C builtin that does nothing in its place, what the interpreter
    spends on any callback (two info dicts, two calls);
  - call: a function with an empty body, traced (XPU_TIMER_HOST_TRACING_FUNC
    names it) against an identical untraced one;
  - unwind (3.12+): an exception raised and caught through one untraced
    Python frame, with xpu-timer's global PY_UNWIND event on and switched off
    for the round (the cost every untraced frame pays when an exception
    leaves it).
Prints one line per measurement."""

import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "simgpu"))
import sim_trainer  # noqa: E402  (the sim's workload loader)

TOOL = 4  # XPU_TIMER_PYTHON_MONITORING_TOOL's default
ROUNDS = 15


def traced_fn():
    pass


def plain_fn():
    pass


def call_loop(n):
    f = globals()["traced_fn"]  # the wrapper before 3.12
    g = plain_fn
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f()
    t1 = time.perf_counter_ns()
    for _ in range(n):
        g()
    t2 = time.perf_counter_ns()
    return (t1 - t0) / n, (t2 - t1) / n


def raise_inner():
    raise ValueError


def unwind_loop(n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        try:
            raise_inner()
        except ValueError:
            pass
    return (time.perf_counter_ns() - t0) / n


def gc_loop(n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        gc.collect(0)
    return (time.perf_counter_ns() - t0) / n


def traced():
    if sys.version_info >= (3, 12):
        return sys.monitoring.get_local_events(TOOL, traced_fn.__code__) != 0
    return hasattr(globals()["traced_fn"], "__wrapped__")


def report(what, on, off):
    on_m, off_m = statistics.median(on), statistics.median(off)
    print("bench %s python=%d.%d with=%.1f ns without=%.1f ns cost=%.1f ns per %s" %
          (what, sys.version_info[0], sys.version_info[1], on_m, off_m, on_m - off_m,
           "collection" if what.startswith("gc") else "call"), flush=True)


def main():
    lib = sim_trainer.load_workload(sim_trainer.lib_dir(sim_trainer.parse_args([])))
    sim_trainer.check(lib, lib.sim_init(0, 1, 0), "sim_init")
    sim_trainer.check(lib, lib.sim_gemm(64, 64, 64, 1, 0), "sim_gemm")  # the probes start
    deadline = time.monotonic() + 30
    while not gc.callbacks and time.monotonic() < deadline:
        time.sleep(0.01)
    want_trace = bool(os.environ.get("XPU_TIMER_HOST_TRACING_FUNC"))
    while want_trace and not traced() and time.monotonic() < deadline:
        time.sleep(0.01)
    print("bench probes: gc.callbacks=%r traced=%s" % (gc.callbacks, traced()), flush=True)

    saved = list(gc.callbacks)
    on, off = [], []
    for _ in range(ROUNDS):
        on.append(gc_loop(20000))
        gc.callbacks[:] = []
        off.append(gc_loop(20000))
        gc.callbacks[:] = saved
    report("gc", on, off)
    # The interpreter's own share: the same callback protocol (an info dict
    # built and a call, at start and at stop) with a C builtin that does
    # nothing ({}.get(phase, info) returns None).
    floor = []
    for _ in range(ROUNDS):
        gc.callbacks[:] = [{}.get]
        floor.append(gc_loop(20000))
        gc.callbacks[:] = saved
    report("gc-dispatch-floor", floor, off)

    if traced():
        on, off = [], []
        for _ in range(ROUNDS):
            a, b = call_loop(200000)
            on.append(a)
            off.append(b)
        report("call", on, off)
    if traced() and sys.version_info >= (3, 12):
        mon = sys.monitoring
        events = mon.get_events(TOOL)
        on, off = [], []
        for _ in range(ROUNDS):
            on.append(unwind_loop(100000))
            mon.set_events(TOOL, events & ~mon.events.PY_UNWIND)
            off.append(unwind_loop(100000))
            mon.set_events(TOOL, events)
        report("unwind", on, off)
    sim_trainer.check(lib, lib.sim_finalize(), "sim_finalize")
    return 0


if __name__ == "__main__":
    sys.exit(main())
