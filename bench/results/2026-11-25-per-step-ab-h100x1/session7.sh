#!/usr/bin/env bash
# EXPERIMENT build (exp-attrib): host-bound GPT, every mode once per cycle in one process.
set -u
dist=$(ls -d dist/exp/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
cp .gpu/overhead_exp.py bench/gpu/overhead_exp.py
timeout ${T:-520} taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-exp -- torchrun --standalone --nproc_per_node=1 \
  bench/gpu/overhead_exp.py --workloads ddp --batch 1 --seq 128 --layers 12 --width 1024 \
  --modes ${MODES:-on,paused,exp8,exp32,exp16,exp1} --pairs ${CYCLES:-1500} --micro-calls 0 > "$OUT/modes.txt" 2>&1
echo "status $?"; date -u
grep -E '^MODE|Traceback|Error' "$OUT/modes.txt"
