#!/usr/bin/env python3
"""How well the supervisor names slow ranks: simulated jobs, real supervisor.

Slowdown runs: an 8-rank sim job (the C++ sim_trainer under the real
supervisor and injected library) whose rank --rank is slowed from its first
step by a share of the step (--shares, default 2,5,10,30 %) with a cause:
  host  the rank sleeps that long on the host before each collective
        (--slow-rank/--slow-ms) in a host-bound step (host 100 ms);
  gpu   every GEMM of the rank takes F times as long (--slow-gpu-rank/
        --slow-gpu-factor) in a GPU-bound step (3 GEMMs of ~33 ms);
  link  the rank's collectives take F times as long after everyone arrived
        (--slow-link-rank/--slow-link-factor), collective 5.4 ms.
  gpushare  a second process shares the rank's GPU (xpu_timer_sim_gpu_hog,
        tests/simgpu/real_gpu_traits.h) from --onset-s after the job's start:
        its kernels take 1 + L times as long, L = share x 100 ms / 66 ms, in
        the GPU-bound step of `gpu`, launches two steps ahead (--sync-lag 2)
        and the ranks' fixed arrival offsets on (XPU_TIMER_SIM_RANK_SKEW_US).
With --ahead, the host, gpu and link jobs too run their launches two steps
ahead of the GPU with the fixed offsets on, as real GPUs do.
Each run polls GET /slow every 0.25 s for --limit seconds and records the
time from the job's start (every rank registered; for gpushare from the
onset) to the first report that names the right rank with the right cause,
and any other rank or cause named at any time (wrong). Healthy runs, for
--healthy-s seconds each, nothing slow: every straggler reported is false.
  jitter J  the 100 ms step with --jitter-ms J (--healthy J1,J2,...);
  plain     sim_trainer with nothing but --steps (--healthy-plain);
  real      GPU-bound (the gpu step), launches two steps ahead, fixed
            arrival offsets of up to 300 us (--healthy-real).

Runs go --parallel at a time, each pinned (taskset) to its own CPUs.

Usage: bench/straggler_accuracy.py --build build [--runs 5] [--parallel 4]
         [--healthy 1,3,10 --healthy-s 600] [--json out.json]
Prints a Markdown table.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

STEP_MS = 100.0


def http_json(port, path, timeout=2.0):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return json.loads(r.read().decode())
    except Exception:
        return None


def proc_cpu_s(pid):
    """utime + stime of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


GEMM_MS = 3 * 2 * 8192 * 8192 * 16384 / 1e14 * 1e3  # the GPU-bound step's GEMMs
REAL_GPU = ["--sync-lag", "2"]  # with XPU_TIMER_SIM_RANK_SKEW_US, see run_one
SKEW_US = "300"


def trainer_args(cause, share, rank, jitter, ahead=False):
    """The sim trainer's flags for a slowdown of `share` (0..1) of a 100 ms step."""
    late_ms = share * STEP_MS
    if cause == "plain":
        return ["--steps", "100000000"]
    if cause in ("real", "gpushare"):
        return (["--gemm", "8192,8192,16384", "--gemms-per-step", "3", "--step-ms", "20",
                 "--jitter-ms", str(jitter), "--steps", "100000000"] + REAL_GPU)
    if cause == "gpu":
        # 3 GEMMs of 2*m*n*k / 100 TFLOP/s: 8192 x 8192 x 16384 -> 22 ms each,
        # so the GPU works ~66 ms of a step whose host part is 20 ms: the
        # GPU is the bottleneck and F x 66 ms = 66 ms + late.
        gemm_ms = 3 * 2 * 8192 * 8192 * 16384 / 1e14 * 1e3
        base = ["--gemm", "8192,8192,16384", "--gemms-per-step", "3", "--step-ms", "20"]
        knobs = ["--slow-gpu-rank", str(rank), "--slow-gpu-factor", "%.4f" % (1 + late_ms / gemm_ms)]
    elif cause == "link":
        # 256 MiB all-reduces: the sim's 20 us + bytes / 50 GB/s = 5.39 ms
        # (tests/simgpu/communicator.cc, collective_duration_ns).
        coll_ms = 0.020 + (256 << 20) / 50e9 * 1e3
        base = ["--bytes", str(256 << 20), "--step-ms", "%.1f" % (STEP_MS - coll_ms)]
        knobs = ["--slow-link-rank", str(rank), "--slow-link-factor", "%.4f" % (1 + late_ms / coll_ms)]
    elif cause == "host":
        base = ["--step-ms", "%.1f" % STEP_MS]
        knobs = ["--slow-rank", str(rank), "--slow-ms", "%.2f" % late_ms]
    else:  # healthy, or the CPU run
        base = ["--step-ms", "%.1f" % STEP_MS]
        knobs = []
    return base + ["--jitter-ms", str(jitter), "--steps", "100000000"] + knobs + (REAL_GPU if ahead else [])


def run_one(args, cause, share, jitter, duration_s, cpus, work, tag):
    d = os.path.join(work, tag)
    os.makedirs(d)
    env = dict(os.environ)
    env.update({"XPU_TIMER_SIM_LIB_DIR": os.path.join(args.build, "simgpu", "lib"),
                "XPU_TIMER_HANG_TIMEOUT": "", "XPU_TIMER_HANG_KILL": "", "XPU_TIMER_BASEPORT": ""})
    env.setdefault("XPU_TIMER_SIM_BUS_GBPS", "50")
    share_dir = os.path.join(d, "gpu-share")
    if cause in ("real", "gpushare") or args.ahead:
        env["XPU_TIMER_SIM_RANK_SKEW_US"] = SKEW_US
    if cause == "gpushare":
        os.makedirs(share_dir)
        env["XPU_TIMER_SIM_GPU_SHARE_DIR"] = share_dir
    pin = ["taskset", "-c", cpus] if cpus else []
    nproc = args.cpu_ranks if cause == "cpu" else 8
    healthy = cause in ("healthy", "cpu", "plain", "real")
    expected = "gpu" if cause == "gpushare" else cause
    hog = None
    argv = pin + [
            os.path.join(args.build, "bin", "xpu_timer_supervisor"), "--port", "0", "--dump-dir", d,
            "--hang-timeout", "600", "--metrics-linger", "0", "--slow-window", str(args.window),
            "--", os.path.join(args.build, "bin", "xpu_timer_sim_launch"), "--nproc", str(nproc), "--",
            os.path.join(args.build, "bin", "sim_trainer")] + trainer_args(cause, share, args.rank, jitter,
                                                                            args.ahead)
    log = open(os.path.join(d, "console.log"), "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    result = {"cause": cause, "share": share, "jitter_ms": jitter, "tag": tag, "named_after_s": None,
              "wrong": [], "error": None}
    try:
        pf = os.path.join(d, "supervisor.port")
        end = time.monotonic() + 60
        while time.monotonic() < end and not (os.path.exists(pf) and open(pf).read().strip()):
            time.sleep(0.1)
        port = int(open(pf).read())
        end = time.monotonic() + 60
        while time.monotonic() < end:  # the job's start: every rank registered
            ranks = http_json(port, "/ranks")
            if ranks is not None and len(ranks) == nproc:
                break
            time.sleep(0.1)
        t0 = time.monotonic()
        if cause == "gpushare":  # healthy until the onset, then shared
            onset = t0 + args.onset_s
            while time.monotonic() < onset:
                for s in (http_json(port, "/slow") or {}).get("stragglers", []):
                    result["wrong"].append({"at_s": round(time.monotonic() - t0, 2), "rank": s["rank"],
                                            "cause": s["cause"], "summary": s["summary"],
                                            "before_onset": True})
                time.sleep(0.25)
            hog = subprocess.Popen(pin + [os.path.join(args.build, "bin", "xpu_timer_sim_gpu_hog"),
                                          "--dir", share_dir, "--device", str(args.rank % nproc),
                                          "--load", "%.4f" % (share * STEP_MS / GEMM_MS)],
                                   stdout=subprocess.DEVNULL)
            t0 = time.monotonic()
        cpu0 = proc_cpu_s(proc.pid)
        slow0 = (http_json(port, "/slow") or {}).get("analysis_cpu_s", 0)
        seen_wrong = set()
        while time.monotonic() - t0 < duration_s:
            slow = http_json(port, "/slow")
            for s in (slow or {}).get("stragglers", []):
                right = not healthy and s["rank"] == args.rank and s["cause"] == expected
                if right and result["named_after_s"] is None:
                    result["named_after_s"] = round(time.monotonic() - t0, 2)
                    result["summary"] = s["summary"]
                elif not right and (s["rank"], s["cause"]) not in seen_wrong:
                    seen_wrong.add((s["rank"], s["cause"]))
                    result["wrong"].append({"at_s": round(time.monotonic() - t0, 2), "rank": s["rank"],
                                            "cause": s["cause"], "summary": s["summary"]})
            if result["named_after_s"] is not None:
                break
            if proc.poll() is not None:
                result["error"] = "the job ended with %s" % proc.returncode
                break
            time.sleep(0.25)
        slow = http_json(port, "/slow")
        result["collectives_judged"] = (slow or {}).get("collectives_judged")
        elapsed = time.monotonic() - t0
        result["seconds"] = round(elapsed, 1)
        result["supervisor_cpu_share"] = round((proc_cpu_s(proc.pid) - cpu0) / elapsed, 4)
        result["analysis_cpu_share"] = round(((slow or {}).get("analysis_cpu_s", 0) - slow0) / elapsed, 4)
    except Exception as e:  # one run's failure is a row, not the end of the bench
        result["error"] = str(e)
    finally:
        if hog is not None:
            hog.terminate()
            hog.wait()
        try:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)
        except Exception:
            os.killpg(proc.pid, 9)
        log.close()
    print(json.dumps(result), flush=True)
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True, help="build folder (bin/, lib/, simgpu/lib)")
    p.add_argument("--causes", default="host,gpu,link")
    p.add_argument("--shares", default="2,5,10,30", help="slowdowns in %% of the step")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rank", type=int, default=5, help="the slowed rank")
    p.add_argument("--jitter-ms", type=float, default=1.0, help="jitter of the slowdown runs")
    p.add_argument("--limit", type=float, default=90, help="seconds a slowdown run waits for its verdict")
    p.add_argument("--healthy", default="1,3,10", help="jitters (ms) of the healthy runs; '' none")
    p.add_argument("--healthy-s", type=float, default=600)
    p.add_argument("--healthy-plain", type=int, default=0, help="healthy runs of the plain sim_trainer")
    p.add_argument("--healthy-real", type=int, default=0,
                   help="healthy runs of the GPU-bound job with launches ahead and fixed offsets")
    p.add_argument("--ahead", action="store_true",
                   help="host, gpu and link jobs with launches ahead and fixed offsets too")
    p.add_argument("--onset-s", type=float, default=15, help="gpushare: seconds of healthy job first")
    p.add_argument("--window", type=float, default=30)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--cpus-per-run", type=int, default=2, help="0: no pinning")
    p.add_argument("--first-cpu", type=int, default=0, help="the runs' CPUs begin here")
    p.add_argument("--cpu-ranks", type=int, default=0,
                   help="also a healthy job of this many ranks, for the supervisor's CPU")
    p.add_argument("--cpu-s", type=float, default=60)
    p.add_argument("--json", default="")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="straggler-accuracy-")
    plan = []
    if args.cpu_ranks:
        plan.append(("cpu", 0.0, 1.0, args.cpu_s, "cpu-%d" % args.cpu_ranks))
    for j in [float(x) for x in args.healthy.split(",") if x]:
        plan.append(("healthy", 0.0, j, args.healthy_s, "healthy-%gms" % j))
    for i in range(args.healthy_plain):
        plan.append(("plain", 0.0, 0.0, args.healthy_s, "plain-%d" % i))
    for i in range(args.healthy_real):
        plan.append(("real", 0.0, args.jitter_ms, args.healthy_s, "real-%d" % i))
    for cause in args.causes.split(","):
        for share in [float(x) / 100 for x in args.shares.split(",")]:
            for r in range(args.runs):
                plan.append((cause, share, args.jitter_ms, args.limit, "%s-%g-%d" % (cause, share * 100, r)))
    results = []
    lock = threading.Lock()
    slots = list(range(args.parallel))

    def worker(slot):
        first = args.first_cpu + slot * args.cpus_per_run
        cpus = "%d-%d" % (first, first + args.cpus_per_run - 1) if args.cpus_per_run else ""
        while True:
            with lock:
                if not plan:
                    return
                item = plan.pop(0)
            r = run_one(args, item[0], item[1], item[2], item[3], cpus, work, item[4])
            with lock:
                results.append(r)
    threads = [threading.Thread(target=worker, args=(s,)) for s in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("\n| cause | slowdown | runs | named right | median s to verdict | max s | wrong verdicts |")
    print("|---|---|---|---|---|---|---|")
    healthy_kinds = ("healthy", "cpu", "plain", "real")
    keys = sorted({(r["cause"], r["share"]) for r in results if r["cause"] not in healthy_kinds})
    for cause, share in keys:
        rs = [r for r in results if r["cause"] == cause and r["share"] == share]
        t = [r["named_after_s"] for r in rs if r["named_after_s"] is not None]
        print("| %s | %g%% | %d | %d | %s | %s | %d |" % (
            cause, share * 100, len(rs), len(t), "%.1f" % statistics.median(t) if t else "-",
            "%.1f" % max(t) if t else "-", sum(len(r["wrong"]) for r in rs)))
    print("\n| healthy job | seconds | collectives judged | stragglers reported | supervisor CPU | of it, the analysis |")
    print("|---|---|---|---|---|---|")
    for r in results:
        if r["cause"] in healthy_kinds:
            what = {"cpu": "%d ranks, jitter %g ms" % (args.cpu_ranks, r["jitter_ms"]),
                    "healthy": "jitter %g ms" % r["jitter_ms"], "plain": "plain sim_trainer",
                    "real": "GPU-bound, launches ahead, offsets to %s us" % SKEW_US}[r["cause"]]
            print("| %s | %s | %s | %d | %s | %s |" % (
                what, r.get("seconds"), r.get("collectives_judged"), len(r["wrong"]),
                r.get("supervisor_cpu_share"), r.get("analysis_cpu_share")))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
