#!/usr/bin/env bash
# Issue 29 after the GPU-clock change: in-process A/B and GPU-bound whole jobs.
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu_state.txt"
if [ "${PART:-1}" = 1 ]; then
  for arm in default ring0; do
    extra=""; [ $arm = ring0 ] && extra="XPU_TIMER_RECORDER_SIZE=0"
    env $extra timeout 150 taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-$arm -- \
      torchrun --standalone --nproc_per_node=1 bench/gpu/overhead.py --workloads ddp,launch --rounds 14 --micro-calls 200 \
      > "$out/inprocess-$arm.txt" 2>&1
    echo "$arm:"; grep -E "^(ddp|launch) |added_us" "$out/inprocess-$arm.txt"
  done
fi
timeout ${WJ_TIMEOUT:-420} python3 bench/gpu/whole_job.py --dist "$dist" --workload gpt2_ddp --nproc 1 --rounds ${ROUNDS:-6} \
  --cpus 0-7 --out /tmp/wj -- --steps 60 > "$out/wholejob-part${PART:-1}.txt" 2>&1
cp /tmp/wj/summary.json "$out/wholejob-part${PART:-1}-summary.json" 2>/dev/null
tail -15 "$out/wholejob-part${PART:-1}.txt"
