#!/usr/bin/env bash
# Issue 2 on a real GPU machine (2 GPUs): the release tarball's supervisor and
# injected library over a 2-rank torchrun job.
#  1. healthy run: /metrics must show GEMM and AllReduce counts for both ranks;
#  2. hang run: rank 1 stops before its all-reduce at step 5; /hang must say
#     rank 0 stuck in AllReduce and rank 1 missing.
# usage: bench/gpu/pipeline_check.sh DIST_DIR OUT_DIR
set -uo pipefail
dist=$(cd "$1" && pwd)
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
sup="$dist/bin/xpu_timer_supervisor"
get() { python3 -c "import sys,urllib.request as u; sys.stdout.write(u.urlopen('http://127.0.0.1:$1$2', timeout=10).read().decode())"; }

{
  echo "== machine"; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
  echo "== dynamic dependencies of the release binaries"; ldd "$sup" "$dist/lib/libxpu_timer_inject.so"
} 2>&1 | tee "$out/machine.txt"

echo "== 1. healthy run: 20 steps, then /metrics while the ranks wait"
d1="$out/healthy"; rm -rf "$d1"; mkdir -p "$d1"
"$sup" --port 18888 --dump-dir "$d1" --hang-timeout 120 -- \
  torchrun --nproc_per_node=2 "$here/torch_job.py" --steps 20 --ready-file "$d1/ready" --wait-file "$d1/go" \
  > "$d1/console.log" 2>&1 &
sp=$!
for _ in $(seq 1 1200); do [ -f "$d1/ready" ] && break; kill -0 $sp 2>/dev/null || break; sleep 0.1; done
sleep 1  # the pollers publish completions within milliseconds; leave them a margin
get 18888 /metrics > "$d1/metrics.txt"
get 18888 /ranks > "$d1/ranks.json"
touch "$d1/go"
wait $sp; echo "supervisor exit status: $?" | tee -a "$d1/console.log"
grep -E '^xpu_timer_operations_total' "$d1/metrics.txt"

echo "== 2. hang run: rank 1 hangs at step 5, timeout 10 s, --on-hang kill"
d2="$out/hang"; rm -rf "$d2"; mkdir -p "$d2"
start=$(date +%s.%N)
"$sup" --port 18889 --dump-dir "$d2" --hang-timeout 10 --on-hang kill -- \
  torchrun --nproc_per_node=2 "$here/torch_job.py" --steps 100000 --hang-rank 1 --hang-step 5 \
  > "$d2/console.log" 2>&1
echo "supervisor exit status: $? after $(python3 -c "import time; print(round(time.time()-$start,1))") s" | tee -a "$d2/console.log"
python3 "$dist/share/xpu_timer/describe_hang.py" "$d2/hang.json" || echo "no hang.json"
grep -E "hang:|registered|stuck|ERROR|WARN" "$d2/console.log" | head -20
