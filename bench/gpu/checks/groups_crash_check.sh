#!/usr/bin/env bash
# Real-GPU check of issue 38's names, roots and crash truth, 2 GPUs (works on
# more). Logs and dumps under OUT; a summary on stdout.
#   hang-lazy, hang-eager  groups_crash.py --mode hang (with --eager: device_id,
#       communicators split from the default group): the last rank waits in
#       wait_for_shard_from_storage() before a "tp" all-reduce; --hang-timeout
#       10 --on-hang kill. GET /hang once hung: roots (the last rank, its
#       Python line), the waiters' waits_for, and every communicator's
#       comm_name ("default_pg", "tp", "dp"); /metrics labels with comm_name.
#   crash  groups_crash.py --mode crash: the last rank dereferences NULL;
#       torchrun ends the others. The log must have one "crash:" line (the last
#       rank) and the others "terminated:"; each report's siginfo ("kernel", or
#       who called our handler); one timeline dump whose hang.json names the
#       crashed rank crashed, and the trace's process names. Then the same job
#       bare: the exit statuses must agree.
# Usage: bash bench/gpu/checks/groups_crash_check.sh DIST OUT [NPROC]
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; nproc=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sup=$dist/bin/xpu_timer_supervisor
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0
port=18440

hang_case() {  # name, extra args
  local name=$1; shift
  port=$((port + 1))
  echo "== $name"
  timeout 200 "$sup" --port $port --hang-timeout 10 --on-hang kill --dump-dir "$out/$name-dump" -- \
    torchrun --standalone --nproc_per_node "$nproc" "$here/groups_crash.py" --mode hang "$@" \
    > "$out/$name.log" 2>&1 &
  local job=$!
  local got=0
  while kill -0 $job 2>/dev/null; do
    if curl -s --max-time 2 "http://127.0.0.1:$port/hang" -o "$out/$name-hang.json" &&
       python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d.get("hung") and any(r.get("where") for r in d.get("ranks",[])) else 1)' \
         "$out/$name-hang.json" 2>/dev/null; then
      curl -s --max-time 5 "http://127.0.0.1:$port/ranks" -o "$out/$name-ranks.json"
      curl -s --max-time 5 "http://127.0.0.1:$port/metrics" -o "$out/$name.metrics"
      got=1
      break
    fi
    sleep 0.5
  done
  wait $job; echo "supervised rc $?  (verdict with places seen: $got)"
  grep -E "WARN|hang|stuck|missing" "$out/$name.log" | grep -v "^\[W" | head -6
  python3 - "$out/$name-hang.json" "$out/$name.metrics" <<'PY'
import json, re, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no /hang document:", e); sys.exit(0)
print("summary:", d.get("summary"))
print("roots:", json.dumps(d.get("roots"))[:600])
for r in d.get("ranks", []):
    print(" rank", r.get("rank"), r.get("state"), "comm_name", r.get("comm_name"),
          "waits_for", json.dumps(r.get("waits_for"))[:200],
          "where", [(f.get("function"), f.get("line")) for f in r.get("where", [])][:2])
names = set()
for g in d.get("groups", []):
    names.add(g.get("comm_name"))
print("group comm_names:", sorted(str(n) for n in names))
try:
    labels = set(re.findall(r'comm_name="([^"]*)"', open(sys.argv[2]).read()))
    print("metrics comm_name labels:", sorted(labels))
except Exception as e:
    print("no metrics:", e)
PY
}

hang_case hang-lazy
hang_case hang-eager --eager

echo "== crash"
timeout 200 "$sup" --port $((port + 1)) --dump-dir "$out/crash-dump" -- \
  torchrun --standalone --nproc_per_node "$nproc" "$here/groups_crash.py" --mode crash \
  > "$out/crash.log" 2>&1
echo "supervised rc $?"
timeout 200 torchrun --standalone --nproc_per_node "$nproc" "$here/groups_crash.py" --mode crash \
  > "$out/crash-bare.log" 2>&1
echo "bare rc $?"
grep -E "crash:|terminated:|xpu_timer.*(WARN|INFO).*(rank|dump)" "$out/crash.log" | head -12
python3 - "$out/crash-dump" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
for path in sorted(glob.glob(d + "/crash-rank*.json")):
    c = json.load(open(path))
    print(os.path.basename(path), c.get("outcome"), c.get("signal_name"), "si_code", c.get("si_code"),
          "sender", c.get("sender"), "siginfo", c.get("siginfo"), "cause", c.get("cause"))
dumps = sorted(glob.glob(d + "/timeline-*-crash"))
print("crash timeline dumps:", len(dumps), [os.path.basename(x) for x in dumps])
for t in dumps:
    try:
        h = json.load(open(t + "/hang.json"))
        print(" hang.json hung", h.get("hung"), "summary", h.get("summary"))
        for r in h.get("ranks", []):
            print("  rank", r.get("rank"), r.get("state"), r.get("reason", ""))
    except Exception as e:
        print(" no hang.json:", e)
    try:
        tr = json.load(open(t + "/timeline.json"))
        ev = tr["traceEvents"] if isinstance(tr, dict) else tr
        print(" trace processes:", [e["args"]["name"] for e in ev
                                    if e.get("ph") == "M" and e.get("name") == "process_name"])
        print(" STUCK slices:", sum(1 for e in ev if e.get("ph") == "X"
                                     and str(e.get("name", "")).startswith("STUCK")))
    except Exception as e:
        print(" no trace:", e)
PY
