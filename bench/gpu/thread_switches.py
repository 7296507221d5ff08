"""This process's threads, for bench/gpu/overhead.py: their names (tasks(),
which also finds the Poller's thread) and their context switches per step
(--ctx-switches: do the training threads block more in watched (A) steps
than in paused or part-off (B) ones?)."""
import os
import statistics


def tasks():
    """(thread id, name) of this process's threads; one that ends meanwhile is left out."""
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                yield int(tid), f.read().strip()
        except OSError:
            continue


def thread_switches():
    """Context switches so far of this process's threads, by kind (python: the
    main thread; pt_autograd: the backward threads; xpu_timer: ours; other), as
    {kind: [voluntary, involuntary]}, from /proc/self/task/*/status."""
    out = {}
    main_tid = os.getpid()
    for tid, comm in tasks():
        try:
            with open("/proc/self/task/%d/status" % tid) as f:
                status = f.read()
        except OSError:
            continue  # ended meanwhile
        kind = ("python" if tid == main_tid else
                "pt_autograd" if comm.startswith("pt_autograd") else
                "xpu_timer" if comm.startswith("xpu_timer") else "other")
        v = [int(l.split()[1]) for l in status.splitlines()
             if l.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))]
        acc = out.setdefault(kind, [0, 0])
        acc[0] += v[0]
        acc[1] += v[1]
    return out


def switch_summary(per_step):
    """Mean context switches per A and per B step by thread kind, A - B and its
    standard error, from [(mode, {kind: [vol, invol]})]."""
    res = {}
    kinds = sorted({k for _, d in per_step for k in d})
    for kind in kinds:
        for j, what in enumerate(("voluntary", "involuntary")):
            vals = {"A": [], "B": []}
            for mode, d in per_step:
                vals[mode].append(d.get(kind, [0, 0])[j])
            if len(vals["A"]) < 2 or len(vals["B"]) < 2:
                continue
            ma, mb = statistics.mean(vals["A"]), statistics.mean(vals["B"])
            se = (statistics.variance(vals["A"]) / len(vals["A"]) +
                  statistics.variance(vals["B"]) / len(vals["B"])) ** 0.5
            res["%s_%s" % (kind, what)] = {"A": ma, "B": mb, "A_minus_B": ma - mb, "se": se}
    return res
