#!/usr/bin/env bash
# One device call: NVTX + optimizer steps, idle per step and host events, then
# whole-job overhead of an NVTX-annotated GPT-2 (bare vs supervised, alternated).
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
dist=$(pwd)/.gpu/dist
sup=$dist/bin/xpu_timer_supervisor
export PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'
  cat .gpu/dist/COMMIT 2>/dev/null; ldd "$sup" | grep -E "unwind|dw" ; } > "$out/env.txt" 2>&1
cat "$out/env.txt"
echo "== nvtx_steps"
s=$(date +%s.%N)
XPU_CHECK_PORT=18411 timeout 150 "$sup" --port 18411 --dump-dir "$out/nvtx-dump" -- \
  torchrun --standalone --nproc_per_node 1 bench/gpu/checks/nvtx_steps.py > "$out/nvtx_steps.log" 2>&1
echo "rc $? wall $(python3 -c "import time;print(round(time.time()-$s,1))")"
grep -E "^XPU_CHECK" "$out/nvtx_steps.log" || tail -30 "$out/nvtx_steps.log"
echo "== idle_steps"
s=$(date +%s.%N)
XPU_CHECK_PORT=18412 XPU_TIMER_SAMPLE_PER_SEC=0 XPU_TIMER_STEP_RANGE=train_step timeout 200 \
  "$sup" --port 18412 --dump-dir "$out/idle-dump" -- \
  torchrun --standalone --nproc_per_node 1 bench/gpu/checks/idle_steps.py > "$out/idle_steps.log" 2>&1
echo "rc $? wall $(python3 -c "import time;print(round(time.time()-$s,1))")"
grep -E "^XPU_CHECK" "$out/idle_steps.log" || tail -30 "$out/idle_steps.log"
echo "== whole job, gpt2_ddp --nvtx"
s=$(date +%s.%N)
timeout 330 python3 bench/gpu/whole_job.py --dist .gpu/dist --out "$out/whole" --workload gpt2_ddp \
  --nproc 1 --rounds ${ROUNDS:-4} --arm bare --arm sup -- --steps 60 --nvtx > "$out/whole.txt" 2>&1
echo "rc $? wall $(python3 -c "import time;print(round(time.time()-$s,1))")"
tail -20 "$out/whole.txt"
