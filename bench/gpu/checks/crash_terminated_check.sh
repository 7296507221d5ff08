#!/usr/bin/env bash
# Real-GPU check of crash truth (issue 38.5), 2 GPUs: GPT-2 DDP (crash_gpt2.py)
# under torchrun, rank 0 dereferences NULL at step 10; torchrun then ends rank 1:
# the log must name rank 0 crashed and rank 1 terminated, and GET /ranks says
# where each report's siginfo came from.
# Usage: bash bench/gpu/checks/crash_terminated_check.sh DIST OUT
set -uo pipefail
D=$1; out=$2; mkdir -p $out
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
here=bench/gpu/checks
timeout 200 $D/bin/xpu_timer_supervisor --port 18450 --metrics-linger 8 --dump-dir $out/dump -- \
  torchrun --standalone --nproc_per_node 2 $here/crash_gpt2.py --kind segv > $out/crash.log 2>&1 &
job=$!
while kill -0 $job 2>/dev/null; do
  curl -s --max-time 1 http://127.0.0.1:18450/ranks -o $out/ranks.tmp && [ -s $out/ranks.tmp ] && cp $out/ranks.tmp $out/ranks.json
  sleep 0.3
done
wait $job; echo "supervised rc $?"
grep -E "crash:|terminated:|flight recorder" $out/crash.log
python3 - $out/ranks.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    c = r.get("crash") or {}
    print("rank", r.get("rank"), r.get("state"), c.get("outcome"), c.get("signal_name"), "si_code", c.get("si_code"),
          "sender", c.get("sender"), "siginfo", c.get("siginfo"), "cause", c.get("cause"))
PY
ls $out/dump
