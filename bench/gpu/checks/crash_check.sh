#!/usr/bin/env bash
# Real-GPU check of crash forensics in depth (issue 27), one GPU. Logs and
# dumps under OUT. For each kind (segv, abort-in-thread, sigkill), a GPT-2
# DDP job under the supervisor whose rank 0 dies at step 10, then the same
# job bare; what to look at:
#   segv             the log line names ffi_call and the Python frame
#                    ("..., from crash (crash_gpt2.py:NN)"); crash-rank0-*.json
#                    has python.threads (the crashed one first, GIL holder
#                    marked) and no frame "??" without module and offset
#                    (frames named MODULE+0xOFFSET carry build_id); the plugin
#                    line (plugin.jsonl) has stack_infos.python_stacks.
#   abort-in-thread  SIGABRT in a native thread: python.threads[0] is that
#                    thread (no Python frames), the main thread's Python stack beside.
#   sigkill          died_without_report; under torchrun the exit status is
#                    usually unknown to the supervisor (torchrun reaps the rank),
#                    so death_cause is set only when an OOM counter grew.
# Each part prints the supervised and the bare exit status: they must agree.
# Usage: bash bench/gpu/checks/crash_check.sh DIST OUT   (KINDS="segv" for one)
set -uo pipefail
dist=$(cd "$1" && pwd); out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sup=$dist/bin/xpu_timer_supervisor
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 XPU_TIMER_METRICS_LINGER_S=0
export XPU_TIMER_EXIT_HOOK_PLUGIN=$dist/share/xpu_timer/examples/jsonl_plugin.py
port=18421
for kind in ${KINDS:-segv abort-in-thread sigkill}; do
  echo "== $kind"
  XPU_TIMER_PLUGIN_JSONL=$out/$kind-plugin.jsonl timeout 300 "$sup" --port $port \
    --dump-dir "$out/$kind-dump" -- torchrun --standalone --nproc_per_node 1 \
    "$here/crash_gpt2.py" --kind "$kind" > "$out/$kind.log" 2>&1
  echo "supervised exit $?"
  timeout 300 torchrun --standalone --nproc_per_node 1 "$here/crash_gpt2.py" --kind "$kind" \
    > "$out/$kind-bare.log" 2>&1
  echo "bare exit $?"
  grep -E "crash:|terminated:" "$out/$kind.log"
  python3 - "$out/$kind-dump" <<'PY'
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/crash-rank*.json"):
    c = json.load(open(path))
    print(path, "kind", c["kind"], "death_cause", c.get("death_cause"))
    frames = c.get("frames") or []
    bare = [f for f in frames if f["function"] == "??" and f.get("module")]
    print("  native frames", len(frames), "bare ?? with a module:", len(bare))
    for f in frames[:20]:
        print("   ", f["function"], f.get("named_from"), f.get("module"), f["module_offset"],
              f.get("build_id"))
    py = c.get("python") or {}
    print("  python read", py.get("read"), "errors", py.get("errors"), "stopped_ms",
          py.get("stopped_ms"))
    for t in py.get("threads", []):
        print("   thread", t["tid"], t["name"], "crashed" if t["crashed"] else "",
              "gil" if t["holds_gil"] else "")
        for f in t["frames"][:8]:
            print("     ", f["func"], "%s:%s" % (f["file"], f["line"]))
PY
done
