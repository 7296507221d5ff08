#!/usr/bin/env python3
"""The connection-flood probe of issue 24, repeatable: a 4-rank simulated job
under the real supervisor started with a low descriptor limit, flooded with
idle loopback connections, while GET /healthz is timed. Prints the figures
and exits 1 when the supervisor lied (a crash it did not see, a crash file)
or /healthz stopped answering.

usage: bench/connection_flood.py BUILD_DIR [--nofile 256] [--connections 400]
Loopback only; bounded in count and time; cleans up its job.
"""
import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def healthz(port, timeout=5.0):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=timeout) as r:
            ok = r.status == 200
    except Exception:
        ok = False
    return ok, time.monotonic() - t0


def wait_for(pred, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--nofile", type=int, default=256)
    ap.add_argument("--connections", type=int, default=400)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(a.build)
    out = tempfile.mkdtemp(prefix="xpu_flood_")
    env = dict(os.environ, XPU_TIMER_SIM_LIB_DIR=build + "/simgpu/lib")
    job = [build + "/bin/xpu_timer_sim_launch", "--nproc", "4", "--", sys.executable,
           root + "/tests/simgpu/sim_trainer.py", "--steps", "100000", "--step-ms", "50"]

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (a.nofile, a.nofile))
        os.setsid()

    sup = subprocess.Popen([build + "/bin/xpu_timer_supervisor", "--port", "0", "--dump-dir", out,
                            "--hang-timeout", "300", "--"] + job, env=env,
                           stdout=open(out + "/console.log", "w"), stderr=subprocess.STDOUT,
                           preexec_fn=low_limit)
    flood = []
    try:
        port_file = out + "/supervisor.port"
        if not wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), 60):
            print("no supervisor.port", file=sys.stderr)
            return 1
        port = int(open(port_file).read())
        def ranks():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/ranks" % port, timeout=5) as r:
                    return len(json.load(r))
            except Exception:
                return 0
        if not wait_for(lambda: ranks() == 4, 60):
            print("the ranks did not register", file=sys.stderr)
            return 1
        during, refused = [], 0
        for i in range(a.connections):
            s = socket.socket()
            s.settimeout(2)
            try:
                s.connect(("127.0.0.1", port))
                flood.append(s)
            except OSError:
                refused += 1
                s.close()
            if i % 20 == 19:
                during.append(healthz(port))
        after = []
        for _ in range(20):
            after.append(healthz(port))
            time.sleep(0.1)
        time.sleep(2)  # two poll periods (500 ms) and more: a false death would be reported by now
        log = open(out + "/console.log").read()
        crash_files = [f for f in os.listdir(out) if f.startswith("crash-")]
        false_deaths = log.count("died without a report")
        def fig(samples):
            lat = [t for ok, t in samples]
            return {"answered": sum(ok for ok, t in samples), "of": len(samples),
                    "p50_ms": round(1000 * statistics.median(lat), 1),
                    "max_ms": round(1000 * max(lat), 1)}
        result = {"nofile": a.nofile, "connections": a.connections, "connect_refused": refused,
                  "healthz_during": fig(during), "healthz_after": fig(after),
                  "false_deaths_logged": false_deaths, "crash_files": len(crash_files),
                  "ranks_still_registered": ranks()}
        print(json.dumps(result, indent=2))
        bad = (false_deaths or crash_files or
               result["healthz_during"]["answered"] < len(during) or
               result["healthz_after"]["answered"] < len(after) or
               result["healthz_after"]["max_ms"] > 500)
        return 1 if bad else 0
    finally:
        for s in flood:
            s.close()
        sup.send_signal(signal.SIGTERM)
        try:
            sup.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(sup.pid, signal.SIGKILL)
        print("logs in", out, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
