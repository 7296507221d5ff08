#!/usr/bin/env bash
# Issue 40: where the cost of watching a GPT-2 DDP job goes.
# One supervised job (bench/gpu/overhead.py --pairs): for each arm, steps
# alternated A (everything on) and B (the arm's part off: the whole library
# for `paused`), the ratio of each pair and its bootstrap interval.
# usage: [NPROC=2] [CPUS=0-7] bench/gpu/overhead_parts.sh DIST OUT PAIRS ARMS [overhead.py args]
# NPROC ranks (one per GPU; 2 by default); CPUS pins the job (taskset) when
# given. overhead.py's later flags win: `--workloads ddp --batch 1 --seq 128`
# is the host-bound job of one GPU.
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; pairs=$3; arms=$4; shift 4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export XPU_TIMER_BENCH_PORT=18890 XPU_TIMER_METRICS_LINGER_S=0
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  nvidia-smi topo -m; nproc; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
pin=(); [ -n "${CPUS:-}" ] && pin=(taskset -c "$CPUS")
"${pin[@]}" "$dist/bin/xpu_timer_supervisor" --port $XPU_TIMER_BENCH_PORT --dump-dir "$out/sup" -- \
  torchrun --standalone --nproc_per_node="${NPROC:-2}" "$here/overhead.py" --workloads gpt2 --layers 12 \
  --width 1024 --batch 8 --seq 1024 --warmup 3 --steps 10 --micro-calls 0 \
  --pairs "$pairs" --arms "$arms" "$@" > "$out/overhead.log" 2>&1
echo "exit status $?"
grep -E '^\{|^workload|^gpt2|^ddp' "$out/overhead.log"
