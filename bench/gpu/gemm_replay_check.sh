#!/usr/bin/env bash
# GEMM replay on one real GPU (docs/usage.md "GEMM replay"), with the release
# tarball (make dist):
#  1. a 1-rank GPT-2 job (workloads/gpt2_ddp.py, bf16, NVTX train_step ranges)
#     under the supervisor with every GEMM timed (XPU_TIMER_SAMPLE_PER_SEC=0)
#     and a ring large enough for several steps; once 40 steps are counted on
#     /metrics, POST /dump/timeline, then the job is ended;
#  2. xpu_timer_gemm_replay replays the dump's GEMMs on the idle GPU, with the
#     cuBLAS the job used (torch's wheel libraries first on the loader path);
#  3. xpu_timer_gen_trace_timeline converts the dump and diffs it with itself
#     (every ratio must be 1.00: a sanity check of the diff on real data).
# Every step is bounded by `timeout`; everything goes under OUT.
# usage: bash bench/gpu/gemm_replay_check.sh DIST [OUT]   (OUT defaults to $OUT)
set -uo pipefail
dist=$(cd "$1" && pwd)
out=${2:-${OUT:?give OUT as the second argument or in the environment}}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
port=18471
get() { timeout 15 python3 -c "import sys,urllib.request as u; sys.stdout.write(u.urlopen('http://127.0.0.1:$port$1', timeout=10).read().decode())"; }
post() { timeout 15 python3 -c "import sys,urllib.request as u; sys.stdout.write(u.urlopen(u.Request('http://127.0.0.1:$port$1', method='POST'), timeout=10).read().decode())"; }

{
  echo "== machine"; nvidia-smi -L
  timeout 120 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} 2>&1 | tee "$out/machine.txt"

echo "== 1. GPT-2, 1 rank, every GEMM timed"
job="$out/job"; rm -rf "$job"; mkdir -p "$job"
XPU_TIMER_SAMPLE_PER_SEC=0 XPU_TIMER_RECORDER_SIZE=65536 XPU_TIMER_STEP_RANGE=train_step \
  timeout 900 "$dist/bin/xpu_timer_supervisor" --port $port --dump-dir "$job" -- \
  torchrun --nproc_per_node=1 "$here/workloads/gpt2_ddp.py" --nvtx --warmup 15 --steps 100000 \
  > "$job/console.log" 2>&1 &
sp=$!
steps=0
for _ in $(seq 1 600); do  # up to 10 minutes for torch to start and run 40 steps
  kill -0 $sp 2>/dev/null || break
  steps=$(get /metrics 2>/dev/null | awk '/^xpu_timer_step_seconds_count/ {s += $2} END {print s + 0}')
  [ "${steps%.*}" -ge 40 ] 2>/dev/null && break
  sleep 1
done
echo "steps counted before the dump: $steps"
# The scrape at the dump, kept for the traced Python functions (torch's
# built-in ones and any named in XPU_TIMER_HOST_TRACING_FUNC).
get /metrics > "$job/metrics.txt" 2>&1
grep -E "^xpu_timer_python_function_(calls_total|call_seconds_total)" "$job/metrics.txt"
post /dump/timeline > "$job/dump_reply.json" 2>&1
cat "$job/dump_reply.json"; echo
dir=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['dir'])" "$job/dump_reply.json" 2>/dev/null)
kill -TERM $sp 2>/dev/null; wait $sp; echo "supervisor exit status: $?"
if [ -z "$dir" ] || ! ls "$dir"/*.timeline >/dev/null 2>&1; then
  echo "no dump: see $job/console.log"; tail -30 "$job/console.log"; exit 1
fi

echo "== 2. replay on this GPU"
libs=$(timeout 120 python3 - <<'PY'
import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
dirs = sorted({os.path.dirname(p) for p in glob.glob(site + "/nvidia/**/libcublas*.so*", recursive=True)
               + glob.glob(site + "/nvidia/**/libcudart*.so*", recursive=True)})
print(":".join(dirs + [os.path.join(os.path.dirname(torch.__file__), "lib")]))
PY
)
echo "library path: $libs"
LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 600 \
  "$dist/bin/xpu_timer_gemm_replay" --path "$dir" --json "$out/replay.json" --warmup 20 --reps 100 \
  2>&1 | tee "$out/replay.txt"
echo "replay exit status: ${PIPESTATUS[0]}"

echo "== 3. the trace, and the dump diffed with itself"
timeout 300 "$dist/bin/xpu_timer_gen_trace_timeline" --path "$dir" --output "$out/timeline.json" \
  > "$out/convert.txt" 2>&1; echo "convert exit status: $?"
timeout 300 "$dist/bin/xpu_timer_gen_trace_timeline" --diff "$dir" "$dir" --output "$out/self_diff.json" \
  --trace "$out/self_diff_trace.json" > "$out/self_diff.txt" 2>&1; echo "diff exit status: $?"
head -12 "$out/self_diff.txt"
cp -r "$dir" "$out/dump"
