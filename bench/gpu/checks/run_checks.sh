#!/usr/bin/env bash
# Real-GPU checks of one release (one GPU is enough), logs under OUT:
#   1. runtime_counts.py: kernel launches, allocations and copies counted
#      exactly under the supervisor; the copies in a timeline dump;
#   2. queued_hang.py, healthy: every step's all-reduce waits ~3.6 s behind
#      GEMMs with --hang-timeout 2: no hang may be reported;
#   3. queued_hang.py --stop-at-step 3: an endless kernel before the
#      all-reduce: the hang must be reported (nothing started on the GPU),
#      3 x the timeout after the all-reduce's launch, + at most 2 s.
# Usage: bash bench/gpu/checks/run_checks.sh DIST OUT
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sup=$dist/bin/xpu_timer_supervisor
# The checks read each rank's step and NVTX histograms (docs/metrics.md "Series budget").
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 XPU_TIMER_METRICS_HISTOGRAMS=rank
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }


echo "== 1 runtime counts"
XPU_CHECK_PORT=18401 timeout 300 "$sup" --port 18401 --dump-dir "$out/rt-dump" -- \
  torchrun --standalone --nproc_per_node 1 "$here/runtime_counts.py" > "$out/runtime_counts.log" 2>&1
echo "rc $?"
grep -E "^XPU_(CHECK|DUMP)" "$out/runtime_counts.log" || tail -30 "$out/runtime_counts.log"
for d in "$out"/rt-dump/timeline-*; do
  [ -f "$d/timeline.json" ] || continue
  echo "timeline $d: copies $(grep -o 'Memcpy[A-Za-z0-9]* [0-9.]* [KMG]*i*B' "$d/timeline.json" | sort | uniq -c | tr -s ' \n' ' ')"
done

echo "== 2 queued work, healthy"
timeout 300 "$sup" --port 18402 --hang-timeout 2 --dump-dir "$out/queued-dump" -- \
  torchrun --standalone --nproc_per_node 1 "$here/queued_hang.py" --steps 8 2>&1 | stamp > "$out/queued_healthy.log"
echo "rc ${PIPESTATUS[0]}"
grep -E "QUEUED step" "$out/queued_healthy.log" | tail -3
echo "hang reports: $(grep -c 'stuck' "$out/queued_healthy.log")"

echo "== 3 queued work, GPU stopped before the all-reduce of step 3"
timeout 300 "$sup" --port 18403 --hang-timeout 2 --on-hang kill --dump-dir "$out/stopped-dump" -- \
  torchrun --standalone --nproc_per_node 1 "$here/queued_hang.py" --steps 8 --stop-at-step 3 2>&1 | stamp > "$out/queued_stopped.log"
echo "rc ${PIPESTATUS[0]}"
grep -E "QUEUED stopping|stuck|missing|hang" "$out/queued_stopped.log" | head -8
find "$out/stopped-dump" -name hang.json | head -1 | xargs -r cat | head -c 3000; echo
