#!/usr/bin/env bash
# Real-GPU check of the stall verdict and of what one rank's own numbers say
# (issue 25.9), one GPU. Logs and dumps under OUT.
#   1. stall_gpt2.py: GPT-2 trains 20 steps, waits 30 s in a Python loop with
#      nothing on the GPU, trains 10 more. --hang-timeout 5 (stall factor 2):
#      GET /hang must say "stalled" about 10 s into the wait (polled every
#      0.5 s), stacks must name waiting_in_python_loop, the stall must clear,
#      and the job must exit 0 (nothing killed; --on-hang kill is set).
#   2. the same GPT-2, GPU-bound (batch 8 x 1024) and host-bound (batch 1 x
#      128), 60 steps each under the supervisor with every call timed
#      (XPU_TIMER_SAMPLE_PER_SEC=0: a sampled-out GEMM has no GPU time, so
#      with sampling the busy time is only a lower bound): the rank's measured
#      GPU busy and idle time within its steps (/metrics, xpu_timer_step_gpu_*),
#      and our own cost (xpu_timer_self_*).
# Usage: bash bench/gpu/checks/stall_check.sh DIST OUT   (ONLY=1 or ONLY=2: one part)
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sup=$dist/bin/xpu_timer_supervisor
# The checks read each rank's step and NVTX histograms (docs/metrics.md "Series budget").
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 XPU_TIMER_METRICS_HISTOGRAMS=rank
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }

port=18411
if [ "${ONLY:-1}" = 1 ]; then
echo "== 1 stall"
timeout 240 "$sup" --port $port --hang-timeout 5 --on-hang kill --dump-dir "$out/stall-dump" -- \
  torchrun --standalone --nproc_per_node 1 "$here/stall_gpt2.py" 2>&1 | stamp > "$out/stall.log" &
job=$!
: > "$out/stall_polls.log"
while kill -0 $job 2>/dev/null; do
  s=$(curl -s --max-time 1 "http://127.0.0.1:$port/hang" | python3 -c 'import json,sys
try:
  d=json.load(sys.stdin); print(d.get("stalled"), d.get("hung"), d.get("summary"))
except Exception: print("none")' 2>/dev/null)
  echo "$(date +%s.%N) $s" >> "$out/stall_polls.log"
  sleep 0.5
done
wait $job; echo "rc $?"
python3 - "$out" <<'PY'
import sys, re
out = sys.argv[1]
log = open(out + "/stall.log").read()
begin = float(re.search(r"STALL_BEGIN (\S+)", log).group(1))
end = float(re.search(r"STALL_END (\S+)", log).group(1))
first = None
cleared = None
for line in open(out + "/stall_polls.log"):
    t, rest = line.split(" ", 1)
    if rest.startswith("True") and first is None:
        first = (float(t), rest.strip())
    if first and not rest.startswith("True") and cleared is None and float(t) > end:
        cleared = float(t)
print("wait began %.1f, ended %.1f s later" % (begin, end - begin))
print("stalled reported %.1f s into the wait: %s" % (first[0] - begin, first[1]) if first else "stall NOT reported")
print("cleared %.1f s after the wait ended" % (cleared - end) if cleared else "not seen cleared")
print("supervisor log: " + " | ".join(l for l in log.splitlines() if "stall" in l and "supervisor" in l)[:600])
PY
grep -l waiting_in_python_loop "$out"/stall-dump/stacks-*/py_stack 2>/dev/null | head -1 | sed 's/^/stacks name it: /'
ls -d "$out"/stall-dump/timeline-*stall* 2>/dev/null | head -1 | sed 's/^/timeline dump: /'
fi
[ "${ONLY:-2}" = 2 ] || exit 0

echo "== 2 own numbers, GPU-bound and host-bound"
for cfg in "gpu 8 1024" "host 1 128"; do
  set -- $cfg
  port=$((port + 1))
  XPU_TIMER_SAMPLE_PER_SEC=0 timeout 240 "$sup" --port $port --metrics-linger 20 --dump-dir "$out/own-$1" -- \
    torchrun --standalone --nproc_per_node 1 "$here/stall_gpt2.py" --before 60 --wait-s 5 --after 0 \
    --batch $2 --seq $3 > "$out/own-$1.log" 2>&1 &
  job=$!
  until grep -q STALL_BEGIN "$out/own-$1.log" 2>/dev/null || ! kill -0 $job 2>/dev/null; do sleep 0.5; done
  curl -s "http://127.0.0.1:$port/metrics" > "$out/own-$1.metrics"
  wait $job; echo "$1-bound rc $?"
  grep -E '^xpu_timer_(step_gpu_(busy|idle)_seconds_total|step_latency_seconds_(sum|count)|self_[a-z_]+_seconds_total)\{' \
    "$out/own-$1.metrics" | sed 's/{[^}]*}/ /'
done
