#!/usr/bin/env bash
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 NCCL_NVLS_ENABLE=0
s=$(date +%s)
timeout 540 python3 bench/gpu/whole_job.py --dist .gpu/dist --out "$out/whole" --workload gpt2_ddp \
  --nproc 2 --rounds ${ROUNDS:-5} --arm bare --arm sup -- --steps 60 > "$out/whole.txt" 2>&1
echo "rc $? wall $(( $(date +%s) - s ))"
tail -22 "$out/whole.txt"
rm -rf "$out/whole/dumps"
