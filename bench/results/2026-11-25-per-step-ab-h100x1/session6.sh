#!/usr/bin/env bash
# Issue 29: where the host-bound step's cost goes. In-process step pairs of the
# host-bound GPT (batch 1 x 128) under arms that switch parts off, the per-step
# counts from /metrics, and the per-call micro section in fine chunks.
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
port=19300
for arm in ${ARMS:-default notime poll10 ring0}; do
  extra=""; micro=0
  case $arm in
    default) micro=${MICRO:-160} ;;
    notime) extra="XPU_TIMER_SAMPLE_PER_SEC=0.001" ;;
    poll10) extra="XPU_TIMER_POLL_INTERVAL_MS=10" ;;
    ring0) extra="XPU_TIMER_RECORDER_SIZE=0" ;;
  esac
  port=$((port + 1))
  env $extra XPU_TIMER_BENCH_PORT=$port timeout ${TARM:-200} taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --port $port \
    --dump-dir /tmp/sup-$arm -- torchrun --standalone --nproc_per_node=1 bench/gpu/overhead.py --workloads ddp \
    --batch 1 --seq 128 --layers 12 --width 1024 --pairs ${PAIRS:-1000} --micro-calls $micro --micro-chunks 300 \
    > "$OUT/attr-$arm.txt" 2>&1
  echo "$arm ($extra) status $? $(date -u +%T)"
  grep -hE '^\{"workload' "$OUT/attr-$arm.txt"
done
grep -hE '_us ' "$OUT/attr-default.txt"
