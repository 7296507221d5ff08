#!/usr/bin/env bash
# Re-check of the final release on the GPU: NVTX + steps, idle per step, host events.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
dist=$(pwd)/.gpu/dist
sup=$dist/bin/xpu_timer_supervisor
export PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 NCCL_NVLS_ENABLE=0
cat .gpu/dist/COMMIT; nvidia-smi -L
for i in 1 2; do
XPU_CHECK_PORT=1842$i XPU_TIMER_SAMPLE_PER_SEC=0 XPU_TIMER_STEP_RANGE=train_step timeout 200 \
  "$sup" --port 1842$i --dump-dir "$out/idle-dump$i" -- \
  torchrun --standalone --nproc_per_node 1 bench/gpu/checks/idle_steps.py > "$out/idle_steps$i.log" 2>&1
echo "idle run $i rc $?"; grep -E "^XPU_CHECK" "$out/idle_steps$i.log" || tail -20 "$out/idle_steps$i.log"
done
XPU_CHECK_PORT=18431 timeout 150 "$sup" --port 18431 --dump-dir "$out/nvtx-dump" -- \
  torchrun --standalone --nproc_per_node 1 bench/gpu/checks/nvtx_steps.py > "$out/nvtx_steps.log" 2>&1
echo "nvtx rc $?"; grep -E "^XPU_CHECK" "$out/nvtx_steps.log" || tail -20 "$out/nvtx_steps.log"
rm -rf "$out"/*/timeline-*/timeline.json
