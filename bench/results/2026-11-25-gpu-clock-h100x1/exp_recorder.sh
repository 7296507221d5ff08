#!/usr/bin/env bash
# Which recorder-only Poller path costs the GPU-bound step ~1%? In-process A/B
# (overhead.py ddp, hooks on vs paused) with the experiment build's knobs.
set -u
d=$(pwd)/build-expdist/stage
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu_state.txt"
run() {  # name, env...
  local name=$1; shift
  env "$@" timeout 120 taskset -c 0-7 "$d/bin/xpu_timer_supervisor" --dump-dir "$out/sup-$name" -- \
    torchrun --standalone --nproc_per_node=1 bench/gpu/overhead.py --workloads ddp --rounds ${ROUNDS:-14} --micro-calls 50 \
    > "$out/$name.txt" 2>&1
  echo "$name: $(grep -E '^ddp ' "$out/$name.txt")"
}
for v in $VARIANTS; do
  case $v in
    ring0) run ring0 XPU_TIMER_RECORDER_SIZE=0 ;;
    *) run exp$v XPU_TIMER_EXP=$v ;;
  esac
done
rm -rf "$out"/sup-*
