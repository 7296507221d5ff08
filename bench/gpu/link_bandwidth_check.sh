#!/usr/bin/env bash
# Issue 42 item 3 on a machine with >= 2 GPUs: the bus bandwidth of the
# transfer after a collective's last member arrived
# (xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second) against what torch
# measures for the same all-reduces, and NCCL's own all_reduce_perf when it is
# installed. A plain torch.distributed all-reduce sweep, 1-256 MiB, NCCL, under
# the release's supervisor (bench/gpu/link_bandwidth_sweep.py), three times:
#   plain:   every call timed (XPU_TIMER_SAMPLE_PER_SEC=0), ranks in step:
#            transfer and GPU-time series should both be near torch's busbw;
#   skew:    rank 0's GPU 2 ms late before every all-reduce: the GPU-time
#            series falls with the wait, the transfer series should stay;
#   sampled: default sampling: how many collectives all members timed.
# usage: OUT=DIR bench/gpu/link_bandwidth_check.sh DIST_TARBALL [NGPUS]
#   DIST_TARBALL: `make dist`'s tarball (e.g. .carry/dist.tar.gz); NGPUS: all by default.
# Logs, JSON lines and /metrics texts under $OUT (default ./link-bandwidth-check);
# the table at the end, also in $OUT/summary.txt. Every step is bounded by timeout.
set -uo pipefail
tarball=$1
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/link-bandwidth-check}
mkdir -p "$out"
ngpus=${2:-$(timeout 30 nvidia-smi -L | grep -c '^GPU')}
if [ "$ngpus" -lt 2 ]; then echo "needs 2 or more GPUs (found $ngpus)"; exit 1; fi
xt=$(mktemp -d /tmp/xt-link.XXXXXX)
timeout 120 tar xzf "$tarball" -C "$xt" || { echo "cannot unpack $tarball"; exit 1; }
bin=$(echo "$xt"/*/bin)
[ -x "$bin/xpu_timer_supervisor" ] || { echo "no xpu_timer_supervisor in $tarball"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export XPU_TIMER_METRICS_LINGER_S=0 XPU_TIMER_METRICS_WINDOW_S=10
port=18895

{ timeout 60 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  timeout 60 nvidia-smi topo -m
  timeout 120 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  echo "gpus used: $ngpus"; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

# NCCL's own figures, same sizes and environment, when nccl-tests is on PATH.
if command -v all_reduce_perf > /dev/null; then
  timeout 300 all_reduce_perf -b 1M -e 256M -f 2 -g "$ngpus" -d float > "$out/nccl_tests.log" 2>&1
  echo "nccl-tests: exit status $?"
else
  echo "nccl-tests: all_reduce_perf not on PATH, skipped" | tee "$out/nccl_tests.log"
fi

arm() {  # arm NAME ENV... -- SWEEP_ARGS...
  local name=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done; shift
  rm -rf "$out/$name-sup"
  env "${env[@]}" timeout 900 "$bin/xpu_timer_supervisor" --port $port --dump-dir "$out/$name-sup" -- \
    timeout 850 torchrun --standalone --nproc_per_node="$ngpus" "$here/link_bandwidth_sweep.py" \
    --port $port --out "$out/$name.jsonl" "$@" > "$out/$name.log" 2>&1
  echo "$name: exit status $?"
  grep -E "^LINK|Error|error" "$out/$name.log" | head -20
}
arm plain XPU_TIMER_SAMPLE_PER_SEC=0 --
arm skew XPU_TIMER_SAMPLE_PER_SEC=0 -- --skew-us 2000 --sizes-mib 16,64,256
arm sampled XPU_TIMER_SAMPLE_PER_SEC=10 -- --sizes-mib 16,64 --iters 400 --metrics-wait-s 5

timeout 60 python3 "$here/link_bandwidth_sweep.py" --summarize "$out" | tee "$out/summary.txt"
rm -rf "$xt"
