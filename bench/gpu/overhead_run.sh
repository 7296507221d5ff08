#!/usr/bin/env bash
# Issue 6 on a 2-GPU machine: bench/gpu/overhead.py under the release
# tarball's supervisor. usage: bench/gpu/overhead_run.sh DIST_DIR OUT_DIR [overhead.py args]
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export XPU_TIMER_BENCH_PORT=18890
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu_state.txt"
"$dist/bin/xpu_timer_supervisor" --port $XPU_TIMER_BENCH_PORT --dump-dir "$out/sup" -- \
  torchrun --nproc_per_node=2 "$here/overhead.py" "$@" 2>&1 | tee "$out/overhead.log"
echo "exit status ${PIPESTATUS[0]}"
