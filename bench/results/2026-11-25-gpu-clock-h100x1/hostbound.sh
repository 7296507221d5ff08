#!/usr/bin/env bash
# Host-bound in-process A/B: overhead.py's GPT-style DDP model at batch 1 x 128.
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
for arm in ${ARMS:-default}; do
  extra=""
  case $arm in ring0) extra="XPU_TIMER_RECORDER_SIZE=0";; nosample) extra="XPU_TIMER_SAMPLE_PER_SEC=0.001";; esac
  env $extra timeout 200 taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-$arm -- \
    torchrun --standalone --nproc_per_node=1 bench/gpu/overhead.py --workloads ddp --batch 1 --seq 128 --layers 12 --width 1024 \
    --rounds ${ROUNDS:-30} --steps 20 --micro-calls 100 > "$out/hostbound-$arm.txt" 2>&1
  echo "$arm: $(grep -E '^ddp ' "$out/hostbound-$arm.txt")"
done
