#!/usr/bin/env python3
"""Many real supervisors on one machine sharing one etcd: what the store serves.

Starts a real etcd and, for each job size N, N supervisors (--coordinator),
each over its own simulated launcher of --per-node ranks (--nnodes N
--node-rank i: one simulated job across the launchers). Measures, from
etcd's own counters (/metrics: bytes its gRPC server sent and received, and
the requests it handled; etcd's JSON gateway goes through it):
  - quiet: a healthy job, for --window seconds;
  - hang: the last rank stops before a collective; once every node
    declared the hang (the alarm stands), for --window seconds;
and each node's verdict: the stuck ranks' pending time at the verdict
(hang.json) against the hang timeout.

Usage: bench/multinode_scale.py --build build-me --nodes 2,4,8,16 [--per-node 1]
Prints a Markdown table; --json FILE writes the raw numbers.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(port, path, timeout=2.0):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return json.loads(r.read().decode())
    except Exception:
        return None


def wait_until(pred, timeout_s, what):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise RuntimeError("timed out waiting for " + what)


class Etcd:
    def __init__(self, work):
        self.client = free_port()
        peer = free_port()
        self.url = "http://127.0.0.1:%d" % self.client
        peer_url = "http://127.0.0.1:%d" % peer
        self.log = open(os.path.join(work, "etcd.log"), "w")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "xpu", "--data-dir", os.path.join(work, "etcd-data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
             "--initial-cluster", "xpu=" + peer_url],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: self.counters() is not None, 30, "etcd")

    def counters(self):
        try:
            with urllib.request.urlopen(self.url + "/metrics", timeout=2) as r:
                text = r.read().decode()
        except Exception:
            return None
        out = {"sent": 0.0, "received": 0.0, "requests": 0.0}
        for line in text.splitlines():
            m = re.match(r"etcd_network_client_grpc_(sent|received)_bytes_total (\S+)", line)
            if m:
                out[m.group(1)] = float(m.group(2))
            m = re.match(r'grpc_server_handled_total\{.*grpc_service="etcdserverpb\.(KV|Lease)".*\} (\S+)',
                         line)
            if m:
                out["requests"] += float(m.group(2))
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def rate(etcd, window_s):
    a = etcd.counters()
    t0 = time.monotonic()
    time.sleep(window_s)
    b = etcd.counters()
    dt = time.monotonic() - t0
    return {k: (b[k] - a[k]) / dt for k in a}


def run_job(args, etcd, n, work):
    job_id = "scale-%d-%d" % (n, os.getpid())
    world = n * args.per_node
    hang_rank = world - 1
    env = dict(os.environ)
    env.update({"XPU_TIMER_SIM_LIB_DIR": os.path.join(args.build, "simgpu", "lib"),
                "XPU_TIMER_HANG_TIMEOUT": "", "XPU_TIMER_HANG_KILL": "", "XPU_TIMER_BASEPORT": ""})
    nodes = []
    for i in range(n):
        d = os.path.join(work, "%s-node%d" % (job_id, i))
        os.makedirs(d)
        argv = [os.path.join(args.build, "bin", "xpu_timer_supervisor"), "--port", "0",
                "--dump-dir", d, "--coordinator", "etcd://" + etcd.url.split("//")[1],
                "--job-id", job_id, "--hang-timeout", str(args.timeout), "--metrics-linger", "0",
                "--", os.path.join(args.build, "bin", "xpu_timer_sim_launch"),
                "--nproc", str(args.per_node), "--nnodes", str(n), "--node-rank", str(i),
                "--job-id", job_id, "--", os.path.join(args.build, "bin", "sim_trainer"),
                "--steps", "1000000", "--step-ms", str(args.step_ms), "--collective", "allreduce",
                "--bytes", "4096", "--hang-rank", str(hang_rank), "--hang-file",
                os.path.join(work, job_id + ".hang")]
        log = open(os.path.join(d, "console.log"), "w")
        nodes.append({"dir": d, "proc": subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                         env=env, start_new_session=True)})
    try:
        for node in nodes:
            pf = os.path.join(node["dir"], "supervisor.port")
            wait_until(lambda: os.path.exists(pf) and open(pf).read().strip(), 60, "a port file")
            node["port"] = int(open(pf).read())

        def connected():
            for node in nodes:
                h = http_json(node["port"], "/hang")
                if not h or not h.get("coordinator") or not h["coordinator"].get("connected"):
                    return False
                if len(h["coordinator"].get("other_nodes", [])) != n - 1:
                    return False
            return True
        wait_until(connected, 120, "every node connected")
        quiet = rate(etcd, args.window)
        # The hang: the last rank stops before its next collective.
        open(os.path.join(work, job_id + ".hang"), "w").close()

        def all_hung():
            return all((http_json(node["port"], "/hang") or {}).get("hung") for node in nodes)
        wait_until(all_hung, 120 + 4 * args.timeout, "every node's verdict")
        alarm = rate(etcd, args.window)
        load = os.getloadavg()[0]
        late = []
        verdicts = []  # "hang:" lines per node: 1 unless the verdict changed while it stood
        for node in nodes:
            log = open(os.path.join(node["dir"], "console.log"), errors="replace").read()
            verdicts.append(log.count("WARN] hang: "))
            # The first verdict's sentence gives how long its ranks had waited.
            m = re.search(r"WARN\] hang: .*? for ([0-9.]+) s", log)
            late.append(float(m.group(1)) - args.timeout if m else float("nan"))
        return {"nodes": n, "ranks": world, "quiet": quiet, "alarm": alarm, "load1": load,
                "verdict_late_s_max": max(late), "verdict_late_s_min": min(late),
                "verdicts_per_node_max": max(verdicts)}
    finally:
        for node in nodes:
            try:
                os.killpg(node["proc"].pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for node in nodes:
            try:
                node["proc"].wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(node["proc"].pid, signal.SIGKILL)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True)
    p.add_argument("--nodes", default="2,4,8")
    p.add_argument("--per-node", type=int, default=1)
    p.add_argument("--timeout", type=float, default=6.0, help="--hang-timeout of the supervisors")
    p.add_argument("--step-ms", type=int, default=50)
    p.add_argument("--window", type=float, default=20.0, help="seconds each rate is measured over")
    p.add_argument("--json")
    p.add_argument("--keep", action="store_true", help="keep the work folder (logs, dumps)")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="xpu-scale-")
    etcd = Etcd(work)
    results = []
    try:
        for n in [int(x) for x in args.nodes.split(",")]:
            r = run_job(args, etcd, n, work)
            results.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    finally:
        etcd.stop()
    print("| nodes (ranks) | quiet: etcd sent B/s | requests/s | alarm (steady hang): etcd sent B/s | requests/s | per node B/s | first verdict after the timeout (s, min-max over nodes) | verdicts per node (max) | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print("| %d (%d) | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f-%.2f | %d | %.1f |" % (
            r["nodes"], r["ranks"], r["quiet"]["sent"], r["quiet"]["requests"], r["alarm"]["sent"],
            r["alarm"]["requests"], r["alarm"]["sent"] / r["nodes"], r["verdict_late_s_min"],
            r["verdict_late_s_max"], r["verdicts_per_node_max"], r["load1"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if args.keep:
        print("work folder kept: " + work, file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
