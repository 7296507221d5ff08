#!/usr/bin/env bash
# Issue 29: in-process A/B alternated at every step (overhead.py --pairs), one rank:
# host-bound GPT (batch 1 x 128), the launch-bound loop, GPU-bound GPT (batch 8 x 1024).
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
sup() { taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-$1 -- torchrun --standalone --nproc_per_node=1 bench/gpu/overhead.py "${@:2}"; }
timeout 330 bash -c "$(declare -f sup); dist=$dist; sup hb --workloads ddp,launch --batch 1 --seq 128 --layers 12 --width 1024 --pairs ${HB_PAIRS:-2500} --micro-calls 0" > "$OUT/pairs-hostbound.txt" 2>&1
echo "hostbound status $?"; date -u
timeout 200 bash -c "$(declare -f sup); dist=$dist; sup gb --workloads ddp --batch 8 --seq 1024 --layers 12 --width 1024 --pairs ${GB_PAIRS:-500} --micro-calls 0" > "$OUT/pairs-gpubound.txt" 2>&1
echo "gpubound status $?"; date -u
grep -hE '^\{|^ddp |^launch ' "$OUT"/pairs-*.txt
