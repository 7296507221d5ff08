#!/usr/bin/env bash
# nvidia-h200-x2: pipeline bubble of real torch.distributed.pipelining schedules; a 2-rank DDP hang with its timeline.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
dist=$(pwd)/.gpu/dist; sup=$dist/bin/xpu_timer_supervisor
export PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .gpu/dist/COMMIT; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
i=0
for cfg in "1f1b 4" "1f1b 8" "gpipe 8"; do
  set -- $cfg; i=$((i+1))
  XPU_CHECK_PORT=1850$i XPU_TIMER_SAMPLE_PER_SEC=0 XPU_TIMER_STEP_RANGE=train_step timeout 150 \
    "$sup" --port 1850$i --dump-dir "$out/pp$i" -- torchrun --standalone --nproc_per_node 2 \
    bench/gpu/checks/pipeline_bubble.py --schedule $1 --microbatches $2 > "$out/pipeline_$1_$2.log" 2>&1
  echo "pipeline $1 M=$2 rc $?"; grep -E "^XPU_CHECK" "$out/pipeline_$1_$2.log" || grep -v "^W1\|^  " "$out/pipeline_$1_$2.log" | tail -15
done
echo "== hang"
start=$(date +%s.%N)
timeout 200 "$sup" --port 18510 --dump-dir "$out/hang" --hang-timeout 10 --on-hang kill -- \
  torchrun --standalone --nproc_per_node=2 bench/gpu/torch_job.py --steps 100000 --hang-rank 1 --hang-step 5 > "$out/hang.log" 2>&1
echo "exit $? after $(python3 -c "import time; print(round(time.time()-$start,1))") s"
grep -E "hang:|stacks of|timeline|ERROR" "$out/hang.log" | head -8
python3 - "$out/hang/hang.json" <<'PY'
import json, sys, collections
h = json.load(open(sys.argv[1]))
print("summary:", h["summary"])
t = h.get("timeline") or {}
print("timeline:", json.dumps(t)[:300])
d = t.get("dir") if isinstance(t, dict) else None
if d:
    tr = json.load(open(d + "/timeline.json"))
    ev = tr["traceEvents"]
    names = {(e["pid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    per = collections.Counter(e["pid"] for e in ev if e.get("ph") == "X")
    stuck = [(names.get(e["pid"]), e["name"]) for e in ev if e.get("ph") == "X" and str(e["name"]).startswith("STUCK")]
    flows = sum(1 for e in ev if e.get("ph") in ("s", "f"))
    marks = [e["name"] for e in ev if e.get("ph") == "i"]
    print("processes:", names)
    print("slices per pid:", dict(per))
    print("stuck slices:", stuck[:6])
    print("flow events:", flows, "instant marks:", marks[:6])
PY
