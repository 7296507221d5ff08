"""A GPT-2 job (DDP, one rank is enough) whose rank 0 dereferences NULL through
ctypes at step N: the native crash of issue 27, to be reported with the Python
stack beside the native one. Prints `CRASH_AT <unix s>` just before the fault;
the process then dies of SIGSEGV (exit status as without xpu-timer).
Other kinds: `abort-in-thread` (std::terminate in a native thread, as a NCCL
watchdog does; needs g++ to build a two-line helper), `sigkill` (the rank
kills itself with SIGKILL: no handler sees it).

usage: torchrun --nproc_per_node=1 crash_gpt2.py [--crash-step 10] [--kind segv]
                [--batch 8 --seq 1024]
"""
import argparse
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time

import torch

from gpt2_model import ddp_gpt2_step

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
import common  # noqa: E402

TERMINATE_IN_THREAD = r"""
#include <stdexcept>
#include <thread>
extern "C" void terminate_in_thread() {
  std::thread([] { throw std::runtime_error("watchdog timeout"); }).join();
}
"""


def crash(kind):
    print("CRASH_AT %.3f %s" % (time.time(), kind), flush=True)
    if kind == "segv":
        ctypes.string_at(0)  # reads address 0 in libc's memmove, called by ffi_call
    elif kind == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "abort-in-thread":
        d = tempfile.mkdtemp()
        with open(d + "/t.cc", "w") as f:
            f.write(TERMINATE_IN_THREAD)
        subprocess.check_call(["g++", "-shared", "-fPIC", "-O1", "-o", d + "/t.so", d + "/t.cc",
                               "-pthread"])
        ctypes.CDLL(d + "/t.so").terminate_in_thread()
    raise SystemExit("crash kind %s did not crash" % kind)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--crash-step", type=int, default=10)
    p.add_argument("--kind", default="segv", choices=["segv", "abort-in-thread", "sigkill"])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    a = p.parse_args()
    rank, dev = common.setup()
    step = ddp_gpt2_step(dev, a.batch, a.seq)
    for n in range(a.crash_step + 1):
        if rank == 0 and n == a.crash_step:
            torch.cuda.synchronize()
            crash(a.kind)
        step()
    print("no crash", flush=True)


if __name__ == "__main__":
    main()
