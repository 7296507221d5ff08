"""Host cost per call of cudaEventRecord with a timing event vs a cudaEventDisableTiming one,
cudaStreamIsCapturing and cudaEventQuery, on torch's libcudart (chunks alternated)."""
import ctypes, os, statistics, time, torch
torch.zeros(1, device="cuda")
path = next(l.split()[-1] for l in open("/proc/self/maps") if "libcudart.so" in l)
rt = ctypes.CDLL(path)
s = torch.cuda.Stream()
h = ctypes.c_void_p(s.cuda_stream)
def ev(flags):
    e = ctypes.c_void_p()
    assert rt.cudaEventCreateWithFlags(ctypes.byref(e), flags) == 0
    return e
timing, notiming = ev(0), ev(2)
st = ctypes.c_int()
a = torch.ones(64, 64, device="cuda")
calls = {
    "record_timing": lambda: rt.cudaEventRecord(timing, h),
    "record_disable_timing": lambda: rt.cudaEventRecord(notiming, h),
    "stream_is_capturing": lambda: rt.cudaStreamIsCapturing(h, ctypes.byref(st)),
    "query_done": lambda: rt.cudaEventQuery(timing),
    "python_ctypes_baseline": lambda: rt.cudaGetLastError(),
}
per = {k: [] for k in calls}
names = list(calls)
for i in range(60):
    for k in (names if i % 2 == 0 else names[::-1]):
        f = calls[k]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(500):
            f()
        per[k].append((time.perf_counter() - t0) / 500 * 1e6)
torch.cuda.synchronize()
print("path", path)
for k, v in per.items():
    print("%-24s %.3f us (p25 %.3f p75 %.3f)" % (k, statistics.median(v), *statistics.quantiles(v, n=4)[::2]))
