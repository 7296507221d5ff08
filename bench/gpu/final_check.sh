#!/usr/bin/env bash
# Issues 3-6 on a 2-GPU machine with the release tarball, one call:
#   overhead   bench/gpu/overhead.py A/B (issue 6)
#   metrics    bench/gpu/metrics_accuracy.py: TFLOPS and bus bandwidth vs CUDA events, NCCL labels (issue 5)
#   hang       rank 1 hangs: stacks of both ranks, flame graphs, stop times (issue 3)
#   crash      rank 1 segfaults / raises: reports, plugin output, exit status vs bare torchrun (issue 4)
# usage: bench/gpu/final_check.sh DIST_DIR OUT_DIR [parts...]
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2; shift 2
parts=${*:-overhead metrics hang crash}
here=$(cd "$(dirname "$0")" && pwd)
sup="$dist/bin/xpu_timer_supervisor"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
echo "release $(cat "$dist/VERSION"); yama ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo absent); uid $(id -u)"

for part in $parts; do
case $part in
overhead)
  echo "== overhead"
  XPU_TIMER_BENCH_PORT=18890 "$sup" --port 18890 --dump-dir "$out/overhead" -- \
    torchrun --nproc_per_node=2 "$here/overhead.py" > "$out/overhead.log" 2>&1
  echo "exit $?"; grep -A 20 "^workload" "$out/overhead.log"; grep '^{' "$out/overhead.log"
  ;;
metrics)
  echo "== metrics accuracy (every call timed: the accuracy of one timing)"
  XPU_TIMER_SAMPLE_PER_SEC=0 XPU_TIMER_PORT=18891 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV "$sup" --port 18891 \
    --dump-dir "$out/metrics" -- torchrun --nproc_per_node=2 "$here/metrics_accuracy.py" > "$out/metrics.log" 2>&1
  echo "exit $?"; grep -iE "profiler|xpu-timer|ratio|algo|proto|tflops|busbw|FAIL|OK" "$out/metrics.log" | grep -v "^W1" | head -30
  ;;
hang)
  echo "== hang with stacks"
  start=$(date +%s.%N)
  "$sup" --port 18892 --dump-dir "$out/hang" --hang-timeout 10 --on-hang kill -- \
    torchrun --nproc_per_node=2 "$here/torch_job.py" --steps 100000 --hang-rank 1 --hang-step 5 \
    > "$out/hang.log" 2>&1
  echo "exit $? after $(python3 -c "import time; print(round(time.time()-$start,1))") s"
  grep -E "hang:|stacks of|flame|ERROR|WARN" "$out/hang.log" | head
  python3 - "$out/hang/hang.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
print("summary:", h["summary"])
s = h.get("stacks") or {}
print("stacks dir:", s.get("dir"), "collect_s:", s.get("collect_s"), "render_s:", s.get("render_s"),
      "max_stopped_ms:", s.get("max_stopped_ms"))
for r in s.get("ranks", []):
    print("  rank", r["rank"], "stopped_ms", r.get("stopped_ms"), "threads", r.get("threads"), "errors", r.get("errors"))
d = s.get("dir")
if d:
    for view in ("py_stack", "cpp_stack"):
        lines = open(d + "/" + view).read().splitlines()
        print("--", view, len(lines), "lines; frames of interest:")
        seen = set()
        for l in lines:
            for f in l.rsplit(" ", 1)[0].split(";"):
                if any(k in f for k in ("user_code_stuck_here", "all_reduce", "synchronize", "nccl", "cuda", "Nccl")) and f not in seen:
                    seen.add(f); print("   ", f[:220])
                    if len(seen) > 14: break
PY
  d=$(ls -d "$out"/hang/stacks-* 2>/dev/null | head -1); [ -n "$d" ] && tar -C "$d" -czf "$out/hang_stacks.tar.gz" .
  ;;
crash)
  for kind in segv exception; do
    echo "== crash: rank 1 $kind at step 3"
    torchrun --nproc_per_node=2 "$here/torch_job.py" --steps 10 --crash-rank 1 --crash-step 3 --crash-kind $kind \
      > "$out/crash-$kind-bare.log" 2>&1
    bare=$?
    XPU_TIMER_EXIT_HOOK_PLUGIN="$dist/share/xpu_timer/examples/jsonl_plugin.py" \
    XPU_TIMER_PLUGIN_JSONL="$out/crash-$kind.jsonl" "$sup" --port 18893 --dump-dir "$out/crash-$kind" -- \
      torchrun --nproc_per_node=2 "$here/torch_job.py" --steps 10 --crash-rank 1 --crash-step 3 --crash-kind $kind \
      > "$out/crash-$kind.log" 2>&1
    watched=$?
    echo "exit status: bare torchrun $bare, under xpu_timer_supervisor $watched"
    grep -E "crash|plugin" "$out/crash-$kind.log" | grep -v "^W1" | head -8
    ls "$out/crash-$kind"; head -c 1500 "$out/crash-$kind".jsonl 2>/dev/null; echo
  done
  ;;
esac
done
