#!/usr/bin/env bash
# The main story: a multi-rank job in which one rank hangs, watched by
# xpu_timer_supervisor. Without a GPU the job is the simulated one
# (tests/simgpu); with a GPU and PyTorch it is a torchrun job.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out="$root/demo-output"
rm -rf "$out"
mkdir -p "$out"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)' 2>/dev/null; then
  echo "demo: GPUs and PyTorch found: 2-rank torchrun job, rank 1 hangs at step 5"
  timeout=20
  job=(torchrun --nproc_per_node=2 "$root/bench/gpu/torch_job.py" --steps 100000 --hang-rank 1 --hang-step 5)
else
  echo "demo: no GPU: 4-rank simulated job (tests/simgpu), rank 2 hangs at step 5"
  timeout=5
  export XPU_TIMER_SIM_LIB_DIR="$build/simgpu/lib"
  job=("$build/bin/xpu_timer_sim_launch" --nproc 4 -- python3 "$root/tests/simgpu/sim_trainer.py"
       --steps 100000 --step-ms 50 --hang-rank 2 --hang-step 5)
fi

"$build/bin/xpu_timer_supervisor" --port 0 --hang-timeout "$timeout" --dump-dir "$out" \
  -- "${job[@]}" >"$out/console.log" 2>&1 &
sup=$!
trap 'kill -TERM $sup 2>/dev/null || true' EXIT

echo "demo: supervisor pid $sup, hang timeout ${timeout}s; waiting for the hang to be reported..."
for _ in $(seq 1 $(( (timeout + 60) * 10 ))); do
  [ -f "$out/hang.json" ] && break
  kill -0 $sup 2>/dev/null || break
  sleep 0.1
done
if [ ! -f "$out/hang.json" ]; then
  echo "demo: FAILED: no hang reported; see $out/console.log" >&2
  tail -20 "$out/console.log" >&2
  exit 1
fi
port=$(cat "$out/supervisor.port")
echo "demo: the job at a glance, until the demo stops it: http://127.0.0.1:$port/"
echo "demo: GET http://127.0.0.1:$port/hang says:"
python3 "$root/scripts/describe_hang.py" "http://127.0.0.1:$port/hang" --save "$out/hang_live.json"

# The stacks and the flight recorders are written in the background after
# the verdict: wait for both (bounded) before stopping the job.
for _ in $(seq 1 300); do
  python3 - "$out/hang.json" <<'PY' && break
import json, sys
h = json.load(open(sys.argv[1]))
s = h.get("stacks") or {}
sys.exit(0 if s.get("dir") and s.get("in_progress") is False and h.get("timeline") else 1)
PY
  sleep 0.1
done
echo "demo: stopping the job (SIGTERM to the supervisor, which forwards it to every rank)"
kill -TERM $sup
set +e
wait $sup
status=$?
set -e
trap - EXIT
if [ $status -eq 143 ] || [ $status -eq 0 ]; then
  echo "demo: the job ended as asked (exit status $status: the job's own status, SIGTERM forwarded)"
else
  echo "demo: the job ended with exit status $status"
fi
stacks=$(ls -d "$out"/stacks-* 2>/dev/null | head -1)
timeline=$(ls -d "$out"/timeline-*-hang 2>/dev/null | head -1)
echo "demo: outputs in $out: hang.json (as detected), hang_live.json (GET /hang), supervisor.log, console.log"
if [ -n "$stacks" ]; then
  echo "demo: every rank's stacks and flame graphs (py_stack.svg, cpp_stack.svg, mixed_stack.svg): $stacks"
  echo "demo: where the missing rank stands (frames func@source@stuck_ranks|leak_ranks):"
  grep -h "stuck_in_host_code" "$stacks/py_stack" | sed 's/^/demo:   /'
fi
if [ -n "$timeline" ]; then
  echo "demo: every rank's flight recorder (RRRRR-WWWWW.timeline) and the trace for Perfetto / chrome://tracing: $timeline/timeline.json"
fi
if [ -n "$stacks" ] && [ -n "$timeline" ]; then
  echo "demo: OK: hang reported, stacks, flame graphs and timeline written. Open $out"
else
  echo "demo: FAILED: the hang was reported but its stacks or timeline are missing; see $out/console.log" >&2
  exit 1
fi
