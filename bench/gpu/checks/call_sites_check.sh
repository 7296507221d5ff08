#!/usr/bin/env bash
# Real-GPU check of issue 38 item 4 (the line that issued each collective).
#   mismatch  call_sites.py --mismatch under the supervisor: the last rank
#       all-gathers (odd_sync) where the others all-reduce (sync). mismatch.json
#       must place the odd rank at odd_sync's all_gather line and give every
#       rank's issued_at; the mismatch dump's trace: the collectives by
#       operation and the line that issued them (DDP's own all-reduces come
#       from autograd's C++ thread: no Python line there).
#   cost  bench/call_site_cost.py with the job's Python, the library preloaded.
# Usage: bash bench/gpu/checks/call_sites_check.sh DIST OUT [NPROC]
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; nproc=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sup=$dist/bin/xpu_timer_supervisor
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0

echo "== mismatch ($nproc ranks)"
timeout 240 "$sup" --port 18460 --hang-timeout 20 --on-hang kill --dump-dir "$out/mismatch-dump" -- \
  torchrun --standalone --nproc_per_node "$nproc" "$here/call_sites.py" --mismatch --at 10 \
  > "$out/mismatch.log" 2>&1
echo "supervised rc $?"
grep -E "collective mismatch" "$out/mismatch.log" | head -4
python3 - "$out/mismatch-dump" <<'PY'
import collections, glob, json, os, sys
dump = sys.argv[1]
try:
    doc = json.load(open(os.path.join(dump, "mismatch.json")))
except Exception as e:
    print("no mismatch.json:", e); sys.exit(0)
for m in doc["mismatches"]:
    print("summary:", m["summary"])
    print("odd_ranks:", m["odd_ranks"])
    print("where:", json.dumps(m["where"]))
    print("issued_at:", json.dumps(m["issued_at"]))
    tl = (m.get("timeline") or {}).get("dir")
    if not tl:
        continue
    trace = json.load(open(os.path.join(tl, "timeline.json")))
    by = collections.Counter()
    for e in trace["traceEvents"]:
        a = e.get("args") or {}
        if e.get("ph") == "X" and "comm" in a:
            by[(a.get("op"), a.get("issued_at", "(none)"))] += 1
    print("trace collectives by op and issuing line:")
    for (op, at), n in sorted(by.items()):
        print("  %-12s %-40s %d" % (op, at, n))
PY

echo "== cost of reading the call site ($(python3 --version))"
LD_PRELOAD=$dist/lib/libxpu_timer_inject.so timeout 120 taskset -c 2 \
  python3 "$here/../../call_site_cost.py" 2>&1 | tee "$out/cost.txt"
