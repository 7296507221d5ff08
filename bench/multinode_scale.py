#!/usr/bin/env python3
"""Jobs of many nodes on one machine: real supervisors, one real etcd, simulated ranks.

For each job size N (--nodes) and scenario (--scenarios), a fresh etcd and a
fresh job: N supervisors (--coordinator), each over its own simulated
launcher of --per-node ranks (--nnodes N --node-rank i: one job across the
launchers). Once every node knows every other, etcd's traffic and every
supervisor's CPU and memory are measured over --window seconds (quiet), the
scenario is played, and each node's verdict and its time are recorded, then
the traffic again (after: a steady alarm where the scenario leaves one).

Scenarios (the culprit is the first rank of the last node that still has its
supervisor):
  hang         the culprit stops before its next collective (--hang-file);
  straggler    the culprit sleeps --slow-ms before each collective from the
               start: when every node names it (GET /slow);
  mismatch     the culprit issues a collective that disagrees with the
               others' once (--mismatch-file): when every node reports it;
  late         the last node starts --late-s after the others: when every
               node knows it, and that nothing was declared meanwhile;
  kill-node    node 1's supervisor is killed (SIGKILL; its ranks run on):
               when every other node says it has not heard from it, that
               nothing was declared, then a hang as above;
  kill-leader  the same for the node that leads the exchange: when another
               leads, then a hang as above;
  etcd-stop    etcd is killed for --etcd-stop-s seconds (30) and started
               again on its data: what every node says meanwhile (connected,
               the nodes it has not heard from, no verdict), when they are
               all back, then a hang as above.

etcd's own counters (/metrics: the bytes its gRPC server sent and received,
which its JSON gateway goes through, and the requests it handled) give its
traffic; /proc gives each supervisor's CPU (utime + stime) and RSS.

etcd: --etcd PATH, or --etcd-tarball FILE (an etcd release tarball,
etcd-vX.Y.Z-linux-amd64.tar.gz: its `etcd` is extracted into the work
folder), else `etcd` on PATH (Debian's etcd-server: /usr/bin/etcd). No
download: the machine may have no network.

Usage: bench/multinode_scale.py --build build --nodes 4 --per-node 2 \\
           --scenarios hang,kill-leader --json out.json
Prints a Markdown summary; --json writes every node's numbers. Each job is
written to the JSON as soon as it is done, so a run cut short keeps what it
measured; each stage a job reaches is said on stderr at once, and a job cut
short by SIGTERM or SIGINT (`timeout`) is written with the stage it was in
(a 128-node job once left an empty log when its call's time ran out).
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
import tarfile
import tempfile
import time
import urllib.request

SIM_MAX_RANKS = 1024
SCENARIOS = ["hang", "straggler", "mismatch", "late", "kill-node", "kill-leader", "etcd-stop"]
TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(port, path, timeout=10.0):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return json.loads(r.read().decode())
    except Exception:
        return None


# The job at hand: what it has measured so far and the stage it reached, so
# that a run cut short (a SIGTERM from `timeout`) still says where it was.
CURRENT = {}


def stage(result, what, since):
    """Says (stderr, at once) and records that the job reached `what`."""
    result["stage"] = what
    result["stage_after_s"] = round(time.time() - since, 1)
    print("[%s x %s %s] %.1f s: %s" % (result["nodes"], result["per_node"], result["scenario"],
                                      time.time() - since, what), file=sys.stderr, flush=True)


def wait_until(pred, timeout_s, what, period_s=0.5):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(period_s)
    raise RuntimeError("timed out after %.0f s waiting for %s" % (timeout_s, what))


def find_etcd(args, work):
    if args.etcd:
        return os.path.abspath(args.etcd)
    if args.etcd_tarball:
        with tarfile.open(args.etcd_tarball) as t:
            member = next((m for m in t.getmembers() if os.path.basename(m.name) == "etcd" and m.isfile()),
                          None)
            if member is None:
                raise RuntimeError("%s holds no etcd binary" % args.etcd_tarball)
            member.name = "etcd"
            t.extract(member, work)
        path = os.path.join(work, "etcd")
        os.chmod(path, 0o755)
        return path
    path = shutil.which("etcd") or ("/usr/bin/etcd" if os.path.exists("/usr/bin/etcd") else None)
    if not path:
        raise RuntimeError("no etcd: pass --etcd PATH or --etcd-tarball FILE")
    return path


class Etcd:
    """One etcd on loopback ports of its own, restartable on its data."""

    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        self.client, self.peer = free_port(), free_port()
        self.url = "http://127.0.0.1:%d" % self.client
        self.proc = None

    def start(self):
        peer = "http://127.0.0.1:%d" % self.peer
        log = open(os.path.join(self.work, "etcd.log"), "a")
        self.proc = subprocess.Popen(
            [self.binary, "--name", "xpu", "--data-dir", os.path.join(self.work, "etcd-data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", "xpu=" + peer],
            stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: self.counters() is not None, 60, "etcd to answer")

    def counters(self):
        try:
            with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
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
        out["cpu_s"] = proc_cpu_s(self.proc.pid) if self.proc else 0.0
        return out

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    except (OSError, IndexError, ValueError):
        return float("nan")


def proc_rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def log_time(hms, reference):
    """Unix time of a supervisor log stamp (HH:MM:SS.mmm, local time) near `reference`."""
    h, m, s = hms.split(":")
    day = time.localtime(reference)
    t = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, int(h), int(m), 0, 0, 0, -1)) + float(s)
    if t > reference + 43200:
        t -= 86400
    elif t < reference - 43200:
        t += 86400
    return t


class Node:
    def __init__(self, args, etcd, job_id, world_n, i, work, trainer_extra):
        self.i = i
        self.dir = os.path.join(work, "node%d" % i)
        os.makedirs(self.dir)
        self.hang_file = os.path.join(work, "hang-%d" % i)
        argv = [os.path.join(args.build, "bin", "xpu_timer_supervisor"), "--port", "0",
                "--dump-dir", self.dir, "--coordinator", "etcd://127.0.0.1:%d" % etcd.client,
                "--job-id", job_id, "--hang-timeout", str(args.timeout), "--metrics-linger", "0",
                "--", os.path.join(args.build, "bin", "xpu_timer_sim_launch"),
                "--nproc", str(args.per_node), "--nnodes", str(world_n), "--node-rank", str(i),
                "--job-id", job_id, "--", os.path.join(args.build, "bin", "sim_trainer"),
                "--steps", "100000000", "--step-ms", str(args.step_ms), "--collective", "allreduce",
                "--bytes", "4096", "--hang-rank", str(i * args.per_node),
                "--hang-file", self.hang_file] + trainer_extra
        env = dict(os.environ)
        env.update({"XPU_TIMER_SIM_LIB_DIR": os.path.join(args.build, "simgpu", "lib"),
                    "XPU_TIMER_METRICS_LINGER_S": "0"})
        for k in ("XPU_TIMER_HANG_TIMEOUT", "XPU_TIMER_HANG_KILL", "XPU_TIMER_BASEPORT"):
            env.pop(k, None)
        self.log_path = os.path.join(self.dir, "console.log")
        self.proc = subprocess.Popen(argv, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
        self.started = time.time()
        self.port = None
        self.job_pgid = None

    def wait_port(self):
        pf = os.path.join(self.dir, "supervisor.port")

        def port_or_exit():
            # A supervisor that could not start (a library missing on this
            # machine, say) is said at once with its own words, not after
            # the 120 s wait.
            if self.proc.poll() is not None:
                tail = self.log().strip().splitlines()[-3:]
                raise RuntimeError("node %d's supervisor exited with status %s before it served: %s"
                                   % (self.i, self.proc.returncode, " | ".join(tail) or "no output"))
            return os.path.exists(pf) and open(pf).read().strip()
        wait_until(port_or_exit, 120, "node %d's port" % self.i)
        self.port = int(open(pf).read())

    def hang(self):
        return http_json(self.port, "/hang", timeout=30)

    def log(self):
        return open(self.log_path, errors="replace").read()

    def log_events(self, kind, since):
        """(unix time, text) of the log's "WARN] <kind>: ..." lines at or after `since`."""
        out = []
        for m in re.finditer(r"\[(\d\d:\d\d:\d\d\.\d+) xpu_timer [^\]\n]*WARN\] %s: ([^\n]*)" % re.escape(kind),
                             self.log()):
            t = log_time(m.group(1), since)
            if t >= since - 1:
                out.append((t, m.group(2)))
        return out

    def kill_supervisor(self):
        """SIGKILL to the supervisor alone: its job runs on (ended at cleanup)."""
        ranks = http_json(self.port, "/ranks") or []
        if ranks:
            self.job_pgid = os.getpgid(ranks[0]["pid"])
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self):
        for pgid in (self.proc.pid, self.job_pgid):
            if pgid is None:
                continue
            try:
                os.killpg(pgid, signal.SIGTERM if pgid == self.proc.pid else signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


# The exchange's own counters on GET /hang's "coordinator": what each node
# read from the store, to tell which reads make etcd's traffic.
COORD_COUNTERS = ("rounds", "failed_rounds", "documents_read", "full_reads", "stamp_reads",
                  "digest_reads")


def coordinator_counters(nodes):
    out = {}
    for n in nodes:
        c = (n.hang() or {}).get("coordinator") or {}
        out[n.i] = {k: c.get(k, 0) for k in COORD_COUNTERS}
    return out


def measure(etcd, nodes, window_s):
    """etcd's rates, each live supervisor's CPU share and RSS over `window_s`, and
    the sum over the nodes of their exchange's reads a second (read from every
    node before and after the window, so over a little more than it)."""
    live = [n for n in nodes if n.proc.poll() is None]
    c0 = coordinator_counters(live)
    t_c0 = time.monotonic()
    a = etcd.counters()
    cpu0 = {n.i: proc_cpu_s(n.proc.pid) for n in live}
    t0 = time.monotonic()
    time.sleep(window_s)
    b = etcd.counters()
    dt = time.monotonic() - t0
    cpu = {n.i: (proc_cpu_s(n.proc.pid) - cpu0[n.i]) / dt for n in live}
    rss = {n.i: proc_rss_mb(n.proc.pid) for n in live}
    c1 = coordinator_counters(live)
    dc = time.monotonic() - t_c0
    out = {k: (b[k] - a[k]) / dt for k in a} if a and b else {}
    out.update({"supervisor_cpu": cpu, "supervisor_rss_mb": rss, "seconds": dt})
    out["exchange_per_s"] = {k: sum(c1[i][k] - c0[i][k] for i in c1 if i in c0) / dc
                             for k in COORD_COUNTERS}
    return out


def connected(nodes, want_others):
    for n in nodes:
        h = n.hang()
        if not h or not h.get("coordinator") or not h["coordinator"].get("connected"):
            return False
        if len(h["coordinator"].get("other_nodes", [])) != want_others:
            return False
    return True


def verdicts(nodes, culprit_rank, trigger):
    """Every live node's hang verdict once all have one: its time, summary and culprit."""
    wait_until(lambda: all(n.log_events("hang", trigger) for n in nodes), 120, "every node's verdict",
               period_s=1.0)
    out = {}
    for n in nodes:
        h = n.hang() or {}
        roots = [r["ranks"] for r in h.get("roots", [])]
        culprit = [r for r in h.get("ranks", []) if r.get("rank") == culprit_rank]
        events = n.log_events("hang", trigger)  # its log read once
        first = events[0]
        m = re.search(r" for ([0-9.]+) s", first[1])
        out[n.i] = {"verdict_after_trigger_s": first[0] - trigger,
                    "waited_at_verdict_s": float(m.group(1)) if m else None,
                    "detected_at": h.get("detected_at"), "summary": h.get("summary"), "roots": roots,
                    "culprit_state": culprit[0].get("state") if culprit else None,
                    "culprit_node": culprit[0].get("node") if culprit else None,
                    "silent_nodes": (h.get("coordinator") or {}).get("silent_nodes"),
                    "verdict_lines": len(events)}
    return out


def leader_of(nodes):
    """[the node that leads] when exactly one does (a list: node 0 is no failure), else None."""
    leaders = [n.i for n in nodes if ((n.hang() or {}).get("coordinator") or {}).get("leading")]
    return leaders if len(leaders) == 1 else None


def declared(nodes, since):
    return {n.i: [e[1] for e in n.log_events("hang", since)] for n in nodes if n.log_events("hang", since)}


def run_job(args, etcd_binary, n, scenario, work_root):
    work = tempfile.mkdtemp(prefix="%s-%d-" % (scenario, n), dir=work_root)
    etcd = Etcd(etcd_binary, work)
    etcd.start()
    job_id = "scale-%s-%d-%d" % (scenario, n, os.getpid())
    last = n - 1
    culprit_rank = last * args.per_node
    extra = []
    if scenario == "straggler":
        extra = ["--slow-rank", str(culprit_rank), "--slow-ms", str(args.slow_ms)]
    if scenario == "mismatch":
        extra = ["--mismatch-rank", str(culprit_rank), "--mismatch-file", os.path.join(work, "mismatch")]
    result = {"nodes": n, "per_node": args.per_node, "ranks": n * args.per_node, "scenario": scenario,
              "timeout_s": args.timeout}
    CURRENT.clear()
    CURRENT["result"] = result
    nodes = []
    try:
        started = time.time()
        stage(result, "etcd up; starting %d supervisors" % n, started)
        for i in range(n):
            if scenario == "late" and i == last:
                continue
            nodes.append(Node(args, etcd, job_id, n, i, work, extra))
        stage(result, "%d supervisors started" % len(nodes), started)
        if scenario == "late":
            time.sleep(args.late_s)
            nodes.append(Node(args, etcd, job_id, n, last, work, extra))
        for node in nodes:
            node.wait_port()
        stage(result, "every supervisor listens; waiting for every node to know every other", started)
        wait_until(lambda: connected(nodes, n - 1), 120 + 2 * n, "every node to know every other", 2.0)
        result["all_connected_after_s"] = time.time() - started
        stage(result, "connected; measuring the quiet traffic", started)
        if scenario == "late":
            result["late_node_known_after_its_start_s"] = time.time() - nodes[-1].started
            result["declared_meanwhile"] = declared(nodes, started)
        result["quiet"] = measure(etcd, nodes, args.window)
        stage(result, "quiet measured; playing the scenario", started)
        trigger = time.time()
        live = nodes
        if scenario in ("kill-node", "kill-leader"):
            victim = 1 if scenario == "kill-node" else wait_until(lambda: leader_of(nodes), 60, "a leader")[0]
            nodes[victim].kill_supervisor()
            live = [x for x in nodes if x.i != victim]
            result["killed_node"] = victim
            if scenario == "kill-leader":
                new = wait_until(lambda: leader_of(live), 120, "another leader", 1.0)
                result["new_leader"] = new[0]
                result["new_leader_after_s"] = time.time() - trigger

            def all_silent():
                for x in live:
                    s = ((x.hang() or {}).get("coordinator") or {}).get("silent_nodes") or []
                    if not any(e.get("node") == victim and e.get("keys_gone") for e in s):
                        return False
                return True
            wait_until(all_silent, 120, "every node to say it has not heard from node %d" % victim, 1.0)
            result["all_say_not_heard_after_s"] = time.time() - trigger
            result["declared_meanwhile"] = declared(live, trigger)
            trigger = time.time()
        if scenario == "etcd-stop":
            etcd.stop()
            seen = {}
            end = time.time() + args.etcd_stop_s
            while time.time() < end:
                for x in nodes:
                    c = (x.hang() or {}).get("coordinator") or {}
                    if c.get("connected") is False:
                        seen[x.i] = {"connected": False, "silent_nodes": len(c.get("silent_nodes") or [])}
                time.sleep(2.0)
            result["during_stop"] = seen
            result["declared_during_stop"] = declared(nodes, trigger)
            etcd.start()
            back = time.time()

            def all_back():
                for x in nodes:
                    c = (x.hang() or {}).get("coordinator") or {}
                    if not c.get("connected") or c.get("silent_nodes") or len(c.get("other_nodes", [])) != n - 1:
                        return False
                return True
            wait_until(all_back, 180, "every node back", 2.0)
            result["all_back_after_restart_s"] = time.time() - back
            trigger = time.time()
        if scenario == "straggler":
            def named():
                for x in live:
                    s = http_json(x.port, "/slow", timeout=30) or {}
                    if culprit_rank not in [st.get("rank") for st in s.get("stragglers", [])]:
                        return False
                return True
            wait_until(named, 180, "every node to name the straggler", 2.0)
            result["all_named_straggler_after_start_s"] = time.time() - started
            result["straggler_lines"] = {x.i: [e[1] for e in x.log_events("straggler", started)][:2]
                                         for x in live}
        elif scenario == "mismatch":
            open(os.path.join(work, "mismatch"), "w").close()
            wait_until(lambda: all(x.log_events("collective mismatch", trigger) for x in live), 120,
                       "every node to report the mismatch", 1.0)
            result["mismatch"] = {x.i: {"after_trigger_s": x.log_events("collective mismatch", trigger)[0][0]
                                        - trigger,
                                        "line": x.log_events("collective mismatch", trigger)[0][1]}
                                  for x in live}
        elif scenario != "late":
            # The culprit on the last node that still has its supervisor.
            culprit = max(live, key=lambda x: x.i)
            result["culprit_rank"] = culprit.i * args.per_node
            open(culprit.hang_file, "w").close()
            result["verdicts"] = verdicts(live, culprit.i * args.per_node, trigger)
        stage(result, "scenario played; measuring the traffic after", started)
        result["after"] = measure(etcd, live, args.window)
        result["load1"] = os.getloadavg()[0]
        stage(result, "done", started)
        return result
    finally:
        for node in nodes:
            node.stop()
        etcd.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def summary_rows(r):
    q, a = r.get("quiet", {}), r.get("after", {})
    v = r.get("verdicts") or {}
    late = [x["verdict_after_trigger_s"] for x in v.values()]
    same = len({(tuple(map(tuple, x["roots"])), x["culprit_node"]) for x in v.values()}) if v else 0
    cpu = list((a.get("supervisor_cpu") or q.get("supervisor_cpu") or {}).values())
    rss = list((a.get("supervisor_rss_mb") or q.get("supervisor_rss_mb") or {}).values())
    event = {"hang": "", "straggler": "named after %.0f s" % r.get("all_named_straggler_after_start_s", 0),
             "mismatch": "reported %.1f-%.1f s" % (
                 min([m["after_trigger_s"] for m in r.get("mismatch", {}).values()] or [0]),
                 max([m["after_trigger_s"] for m in r.get("mismatch", {}).values()] or [0])),
             "late": "known %.1f s after its start" % r.get("late_node_known_after_its_start_s", 0),
             "kill-node": "all say not heard after %.0f s" % r.get("all_say_not_heard_after_s", 0),
             "kill-leader": "new leader after %.1f s" % r.get("new_leader_after_s", 0),
             "etcd-stop": "all back %.1f s after restart" % r.get("all_back_after_restart_s", 0)}
    return "| %d x %d | %s | %.0f / %.0f | %.0f / %.0f | %s | %s | %s | %.1f%% / %.0f MB | %.1f |" % (
        r["nodes"], r["per_node"], r["scenario"], q.get("sent", 0), q.get("requests", 0), a.get("sent", 0),
        a.get("requests", 0), ("%.1f-%.1f" % (min(late), max(late))) if late else "-",
        ("yes" if same == 1 else "NO") if v else "-", event[r["scenario"]],
        100 * max(cpu or [0]), max(rss or [0]), r.get("load1", 0))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True)
    p.add_argument("--nodes", default="4", help="job sizes, e.g. 16,64,128")
    p.add_argument("--per-node", type=int, default=8)
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--timeout", type=float, default=6.0, help="--hang-timeout of the supervisors")
    p.add_argument("--step-ms", type=int, default=50)
    p.add_argument("--slow-ms", type=int, default=40, help="the straggler's extra time per step")
    p.add_argument("--late-s", type=float, default=20.0)
    p.add_argument("--etcd-stop-s", type=float, default=30.0)
    p.add_argument("--window", type=float, default=20.0, help="seconds each rate is measured over")
    p.add_argument("--etcd", help="the etcd binary")
    p.add_argument("--etcd-tarball", help="an etcd release tarball holding the binary")
    p.add_argument("--json", help="every job's numbers (rewritten after each job)")
    p.add_argument("--keep", action="store_true", help="keep the work folders (logs, dumps)")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    scenarios = args.scenarios.split(",")
    for s in scenarios:
        if s not in SCENARIOS:
            p.error("unknown scenario %s (one of %s)" % (s, ", ".join(SCENARIOS)))
    # The simulated NCCL's shared segment has room for SIM_MAX_RANKS ranks
    # (tests/simgpu/rendezvous.h, kMaxRanks): a larger job's launchers exit
    # at once, and the supervisors would wait for each other in vain.
    for n in [int(x) for x in args.nodes.split(",")]:
        if n * args.per_node > SIM_MAX_RANKS:
            p.error("%d nodes x %d ranks = %d ranks: the simulated NCCL holds at most %d"
                    % (n, args.per_node, n * args.per_node, SIM_MAX_RANKS))
    # SIGTERM and SIGINT (ignored in a background job otherwise) end the run
    # through the cleanup of the job at hand.
    def interrupted(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    work_root = tempfile.mkdtemp(prefix="xpu-scale-")
    etcd_binary = find_etcd(args, work_root)
    results = []
    try:
        for n in [int(x) for x in args.nodes.split(",")]:
            for s in scenarios:
                try:
                    r = run_job(args, etcd_binary, n, s, work_root)
                except Exception as e:  # one scenario's failure is a result too
                    r = dict(CURRENT.get("result") or {"nodes": n, "per_node": args.per_node, "scenario": s})
                    r["error"] = str(e)
                except KeyboardInterrupt as e:  # cut short: keep what the job reached
                    r = dict(CURRENT.get("result") or {"nodes": n, "per_node": args.per_node, "scenario": s})
                    r["error"] = "interrupted (%s) at: %s" % (e, r.get("stage", "the start"))
                    results.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
                    if args.json:
                        with open(args.json, "w") as f:
                            json.dump(results, f, indent=1)
                    raise
                results.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
                if args.json:
                    with open(args.json, "w") as f:
                        json.dump(results, f, indent=1)
    finally:
        if not args.keep:
            shutil.rmtree(work_root, ignore_errors=True)
    print("| nodes x ranks | scenario | quiet: etcd sent B/s / requests/s | after: etcd sent B/s / requests/s "
          "| verdicts after the trigger (s, min-max) | same culprit on every node | event | supervisor CPU "
          "(max) / RSS (max) | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print("| %d x %d | %s | failed: %s |||||||" % (r["nodes"], r["per_node"], r["scenario"], r["error"])
              if "error" in r else summary_rows(r))


if __name__ == "__main__":
    main()
