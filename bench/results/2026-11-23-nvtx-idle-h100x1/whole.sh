#!/usr/bin/env bash
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 NCCL_NVLS_ENABLE=0
timeout 60 torchrun --standalone --nproc_per_node 1 bench/gpu/workloads/gpt2_ddp.py --steps 5 --warmup 2 --nvtx > "$out/smoke.log" 2>&1
echo "smoke rc $?"; grep XPU_BENCH "$out/smoke.log" | cut -c1-200 || tail -5 "$out/smoke.log"
s=$(date +%s)
timeout 480 python3 bench/gpu/whole_job.py --dist .gpu/dist --out "$out/whole" --workload gpt2_ddp \
  --nproc 1 --rounds ${ROUNDS:-5} --arm bare --arm sup -- --steps 60 --nvtx > "$out/whole.txt" 2>&1
echo "rc $? wall $(( $(date +%s) - s ))"
tail -25 "$out/whole.txt"
rm -rf "$out/whole/dumps"
