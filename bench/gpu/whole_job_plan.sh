#!/usr/bin/env bash
# Runs whole-job overhead plans (bench/gpu/whole_job.py) on a GPU machine and
# packs every job's log into one archive.
# usage: bench/gpu/whole_job_plan.sh DIST_DIR OUT_DIR PLAN
#   PLAN diag:  where the time goes (arms that switch parts of xpu-timer off)
#   PLAN diag1: the same attribution on a machine with one GPU (one rank)
#   PLAN percall: per-call costs (bench/gpu/workloads/percall.py) and host share, one GPU
#   PLAN percall2: per-call costs only, 3 rounds of bare / disable / notime / sup
#   PLAN final: the issue's figures (bare vs supervised defaults, 8 rounds, 3 workloads)
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; plan=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
{
  echo "release $(cat "$dist/VERSION")"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'transformers', transformers.__version__)"
} 2>&1 | tee "$out/machine.txt"
wj() { python3 "$here/whole_job.py" --dist "$dist" --out "$out/jobs" "$@" 2>&1 | tee -a "$out/summary.txt"; }
case $plan in
diag)
  wj --workload gpt2_ddp --rounds 3 --arm bare --arm sup --arm disable:XPU_TIMER_DISABLE=1 \
     --arm poll10:XPU_TIMER_POLL_INTERVAL_MS=10 --arm notime:XPU_TIMER_SAMPLE_PER_SEC=0.001 \
     -- --steps 60
  wj --workload launch_bound --rounds 2 --arm bare --arm sup --arm poll10:XPU_TIMER_POLL_INTERVAL_MS=10 \
     -- --steps 400
  ;;
diag1)
  arms="--arm bare --arm sup --arm disable:XPU_TIMER_DISABLE=1 --arm poll10:XPU_TIMER_POLL_INTERVAL_MS=10 --arm notime:XPU_TIMER_SAMPLE_PER_SEC=0.001"
  wj --workload gpt2_ddp --nproc 1 --rounds 2 $arms -- --steps 60
  wj --workload launch_bound --nproc 1 --rounds 2 $arms -- --steps 400
  ;;
percall)
  wj --workload percall --nproc 1 --rounds 2 --arm bare --arm disable:XPU_TIMER_DISABLE=1 \
     --arm notime:XPU_TIMER_SAMPLE_PER_SEC=0.001 --arm sup --arm alltimed:XPU_TIMER_SAMPLE_PER_SEC=0 \
     --arm poll10:XPU_TIMER_POLL_INTERVAL_MS=10 --arm norec:XPU_TIMER_RECORDER_SIZE=0
  wj --workload gpt2_ddp --nproc 1 --rounds 1 --arm bare --arm sup --arm notime:XPU_TIMER_SAMPLE_PER_SEC=0.001 \
     --arm alltimed:XPU_TIMER_SAMPLE_PER_SEC=0 -- --steps 50
  ;;
percall2)
  wj --workload percall --nproc 1 --rounds 3 --arm bare --arm disable:XPU_TIMER_DISABLE=1 \
     --arm notime:XPU_TIMER_SAMPLE_PER_SEC=0.001 --arm sup
  ;;
final)
  wj --workload gpt2_ddp --rounds 8 -- --steps 80
  wj --workload overlap_tp --rounds 8 -- --steps 100
  wj --workload launch_bound --rounds 8 -- --steps 400
  ;;
*) echo "unknown plan $plan"; exit 2 ;;
esac
tar -C "$out" -czf "$out/jobs.tar.gz" jobs && rm -rf "$out/jobs"
