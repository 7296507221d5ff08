#!/usr/bin/env bash
# Issue 29: whole jobs bare vs supervised (b2b7c9d), GPT-2 DDP world 1 at batch 8 x 1024 (GPU-bound),
# then the launch-bound loop in one process (steps alternated).
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
timeout ${TW:-420} python3 bench/gpu/whole_job.py --dist "$dist" --workload gpt2_ddp --nproc 1 --rounds ${ROUNDS:-7} \
  --cpus 0-7 --out /tmp/wj -- --steps 60 > "$OUT/wholejob-gpubound.txt" 2>&1
echo "wholejob status $? $(date -u +%T)"
tar -C /tmp/wj -czf "$OUT/wholejob-logs.tar.gz" logs 2>/dev/null; cp /tmp/wj/summary-*.json "$OUT/" 2>/dev/null
timeout 120 taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-launch -- torchrun --standalone --nproc_per_node=1 \
  bench/gpu/overhead.py --workloads launch --pairs ${LP:-2000} --micro-calls 0 > "$OUT/pairs-launch.txt" 2>&1
echo "launch status $? $(date -u +%T)"
grep -E '^\| (bare|sup)|^round' "$OUT/wholejob-gpubound.txt"; grep -E '^launch ' "$OUT/pairs-launch.txt"
