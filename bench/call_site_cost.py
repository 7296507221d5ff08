"""What reading a collective's call site (inject/call_sites.h) costs a hook,
per call, in this interpreter: the capture runs n times in a C loop, called
through ctypes.CDLL (the GIL released, as around a collective) from a user
function under `depth` frames of library code (file names in torch's
package, passed over as PyTorch's own frames are). The loop's own time is
measured inside the library (monotonic clock around it), so the ctypes call
is not counted.

Usage: LD_PRELOAD=libxpu_timer_inject.so python bench/call_site_cost.py [--calls N] [--repeats R]
Prints one line per depth: the median ns per call over R repeats, and the site found.
"""
import argparse
import ctypes
import statistics
import sys



def exported(name, restype, *argtypes):
    """A function the preloaded library exports, typed."""
    fn = getattr(ctypes.CDLL(None), name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


CAPTURE = exported("xpu_timer_bench_call_site", ctypes.c_int, ctypes.c_long,
                   ctypes.POINTER(ctypes.c_ulonglong))
TEXT = exported("xpu_timer_bench_call_site_text", ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                ctypes.c_ulong)

# A chain of library frames: level k calls level k-1, level 0 the capture.
LIBRARY = "/opt/venv/lib/python3/site-packages/torch/distributed/distributed_c10d.py"
SOURCE = """
def level0(n, spent):
    return CAPTURE(n, spent)

def chain(depth, n, spent):
    if depth <= 1:
        return level0(n, spent)
    return chain(depth - 1, n, spent)
"""
NS = {"CAPTURE": CAPTURE}
exec(compile(SOURCE, LIBRARY, "exec"), NS)


def user_step(depth, n, spent):
    if depth == 0:
        return CAPTURE(n, spent)
    return NS["chain"](depth, n, spent)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=200000)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    print("python %s" % sys.version.split()[0])
    for depth in (0, 2, 8, 32):
        spent = ctypes.c_ulonglong()
        user_step(depth, 1000, ctypes.byref(spent))  # warm the caches
        runs = []
        for _ in range(args.repeats):
            site = user_step(depth, args.calls, ctypes.byref(spent))
            runs.append(spent.value / args.calls)
        buf = ctypes.create_string_buffer(512)
        TEXT(site, buf, len(buf))
        print("library frames %2d: %6.1f ns/call (min %.1f, max %.1f)  site %s"
              % (depth, statistics.median(runs), min(runs), max(runs),
                 buf.value.decode().replace("\t", " ")))


if __name__ == "__main__":
    main()
