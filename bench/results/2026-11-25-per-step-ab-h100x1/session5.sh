#!/usr/bin/env bash
# Issue 29.4: two ranks on the one GPU (overhead.py --one-gpu: NCCL's socket transport on lo),
# in-process A/B alternated at every step, and the per-call micro section at world 2.
set -u
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
{ cat /sys/devices/system/clocksource/clocksource0/current_clocksource /sys/devices/system/clocksource/clocksource0/available_clocksource
  lscpu | grep -E "^(Model name|Socket|Core|Thread|NUMA node|CPU\(s\))"; which perf py-spy; uname -r
  taskset -c 3 .gpu/bin/clk; taskset -c 3 .gpu/bin/hp 0; taskset -c 3 .gpu/bin/hp 256; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
timeout ${T2:-450} taskset -c 0-7 "$dist/bin/xpu_timer_supervisor" --dump-dir /tmp/sup-w2 -- torchrun --standalone --nproc_per_node=2 \
  bench/gpu/overhead.py --one-gpu --workloads launch,ddp --batch 1 --seq 128 --layers 8 --width 256 \
  --pairs ${W2_PAIRS:-1000} --micro-calls 200 --micro-chunks 100 > "$OUT/pairs-world2.txt" 2>&1
echo "world2 status $?"; date -u
grep -hE '^\{|^ddp |^launch |_us ' "$OUT"/pairs-world2.txt
grep -iE 'NCCL (WARN|INFO) (NET|Using)|error|Traceback' "$OUT"/pairs-world2.txt | head -20
