"""How late NCCL reports a collective kernel's start and stop to a profiler
plugin, from the samples of the KernelCh probe (inject/nccl_kernel_ch_probe.h)
that bench/gpu/overhead.py --kernel-ch-dump PATH writes (PATH.rankN).

Each sample holds NCCL's timestamp (the GPU's globaltimer, ns) and the host's
CLOCK_REALTIME read in the callback on NCCL's proxy thread. realtime - gpu is
the report's delay plus the offset between the two clocks. The script prints,
per rank and kind (start, stop), that difference's minimum (the offset plus
the shortest delay: near zero when the driver keeps globaltimer on the host's
wall clock) and the quantiles of the delay above that minimum, and how the
difference drifts over the run (a line fitted through the minima of ten
slices: the clocks' relative rate).

usage: kernel_ch_latency.py PATH.rank0 [PATH.rank1 ...]
"""
import statistics
import sys


def read(path):
    """{"start": [(gpu, real)], "stop": [...], "spans": [stop - start of one channel, ns]}."""
    out = {"start": [], "stop": [], "spans": []}
    open_at = {}
    with open(path) as f:
        for line in f:
            kind, channel, gpu, real, _mono = line.split()
            out[kind].append((int(gpu), int(real)))
            if kind == "start":
                open_at[channel] = int(gpu)
            elif channel in open_at:
                out["spans"].append(int(gpu) - open_at.pop(channel))
    return out


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def drift_ppm(samples):
    """Slope of the lower envelope of realtime - gpu over gpu time, in ppm."""
    if len(samples) < 100:
        return float("nan")
    samples = sorted(samples)
    n = len(samples) // 10
    pts = []
    for i in range(10):
        part = samples[i * n:(i + 1) * n]
        g, r = min(part, key=lambda s: s[1] - s[0])
        pts.append((g, r - g))
    gx = [p[0] for p in pts]
    dy = [p[1] for p in pts]
    mx, my = statistics.fmean(gx), statistics.fmean(dy)
    den = sum((x - mx) ** 2 for x in gx)
    return sum((x - mx) * (y - my) for x, y in zip(gx, dy)) / den * 1e6 if den else float("nan")


def main(paths):
    print("%-28s %-5s %8s %14s %9s %9s %9s %9s %9s %10s" % (
        "file", "kind", "samples", "min real-gpu", "p50 us", "p90 us", "p99 us", "p99.9 us",
        "max us", "drift ppm"))
    for path in paths:
        data = read(path)
        for kind in ("start", "stop"):
            s = data[kind]
            if not s:
                print("%-28s %-5s %8d" % (path[-28:], kind, 0))
                continue
            d = [r - g for g, r in s]
            base = min(d)
            lat = [(x - base) / 1e3 for x in d]
            print("%-28s %-5s %8d %11.1f us %9.1f %9.1f %9.1f %9.1f %9.1f %10.2f" % (
                path[-28:], kind, len(s), base / 1e3, quantile(lat, 0.5), quantile(lat, 0.9),
                quantile(lat, 0.99), quantile(lat, 0.999), max(lat), drift_ppm(s)))
        spans = [x / 1e3 for x in data["spans"]]
        if spans:
            print("%-28s a channel's span: %d, p10 %.1f us, p50 %.1f us, p90 %.1f us" % (
                path[-28:], len(spans), quantile(spans, 0.1), quantile(spans, 0.5),
                quantile(spans, 0.9)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
