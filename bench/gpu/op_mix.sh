#!/usr/bin/env bash
# What a training step is made of, as the injected library sees it: one
# supervised job of bench/gpu/overhead.py (its flags after OUT), the
# supervisor's /metrics read every 2 s while it runs; the last reading is
# kept. Divide an operation's count by xpu_timer_kernel_launches_total's and
# multiply by the launches of a step (overhead.py prints them) for its count
# per step.
# usage: [NPROC=1] [CPUS=0-7] bench/gpu/op_mix.sh DIST OUT [overhead.py args]
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
port=18891
pin=(); [ -n "${CPUS:-}" ] && pin=(taskset -c "$CPUS")
XPU_TIMER_METRICS_LINGER_S=0 XPU_TIMER_BENCH_PORT=$port "${pin[@]}" \
  "$dist/bin/xpu_timer_supervisor" --port $port --dump-dir "$out/sup" -- \
  torchrun --standalone --nproc_per_node="${NPROC:-1}" "$here/overhead.py" "$@" > "$out/overhead.log" 2>&1 &
job=$!
while kill -0 $job 2>/dev/null; do
  curl -sf "http://127.0.0.1:$port/metrics" -o "$out/metrics.next" && mv "$out/metrics.next" "$out/metrics.txt"
  sleep 2
done
wait $job; echo "exit status $?"
grep -E '^xpu_timer_(operations_total|operations_timed_total|kernel_launches_total)' "$out/metrics.txt" |
  sort -t' ' -k2 -rn | head -40
