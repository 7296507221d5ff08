#!/usr/bin/env bash
# Host-bound in-process A/B (pause switch) after the hot-path change, with the
# per-call micro section (mm, bias addmm = cuBLASLt, a plain launch, all_reduce).
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
timeout 480 taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-hb -- \
  torchrun --standalone --nproc_per_node=1 bench/gpu/overhead.py --workloads ddp,launch --batch 1 --seq 128 \
  --layers 12 --width 1024 --rounds 60 --steps 40 --micro-calls 2000 > "$OUT/hostbound.txt" 2>&1
echo "status $?"; date -u
grep -vE "xpu_timer (supervisor|inject)" "$OUT/hostbound.txt" | tail -30
