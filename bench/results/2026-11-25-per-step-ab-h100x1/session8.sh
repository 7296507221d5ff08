#!/usr/bin/env bash
# Issue 29: the head-only record (b2b7c9d) against the code before it (the experiment build of
# a36267c with no switch set, plus its exp1 mode: no untimed record at all), same machine, one call.
set -u
new=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
old=$(ls -d dist/exp/xpu-timer-*-linux-x86_64 | head -1)
echo "new $new old $old"; nvidia-smi -L; date -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
cp .gpu/overhead_exp.py bench/gpu/overhead_exp.py
run() { local d=$1 tag=$2; shift 2
  timeout 260 taskset -c 0-7 "$d/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-$tag -- torchrun --standalone --nproc_per_node=1 "$@" > "$OUT/$tag.txt" 2>&1
  echo "$tag status $? $(date -u +%T)"; }
HB="--workloads ddp --batch 1 --seq 128 --layers 12 --width 1024 --micro-calls 0"
run "$new" new-hostbound bench/gpu/overhead.py $HB --pairs ${PAIRS:-2000}
run "$old" old-hostbound bench/gpu/overhead_exp.py $HB --modes on,paused,exp1 --pairs ${CYCLES:-1400}
run "$new" new-gpubound bench/gpu/overhead.py --workloads ddp --batch 8 --seq 1024 --layers 12 --width 1024 --micro-calls 0 --pairs ${GB_PAIRS:-500}
grep -hE '^ddp |^MODE' "$OUT"/new-hostbound.txt "$OUT"/old-hostbound.txt "$OUT"/new-gpubound.txt
grep -hE 'Traceback|Error' "$OUT"/*.txt | head
