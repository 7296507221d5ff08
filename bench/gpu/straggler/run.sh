#!/usr/bin/env bash
# The real-GPU straggler checks (issue "Slow ranks that hold on real GPUs"):
# a 4-rank GPT-2 DDP job (straggle.py) under the release's supervisor, GET
# /slow polled every second, flight-recorder dumps on request.
#   run.sh DIST_TARBALL OUT SCENARIO...
# SCENARIO: healthy:SECONDS | gpuhog:SECONDS:ONSET:HOG_SECONDS | host:SECONDS:ONSET:SHARE
# Each writes OUT/<scenario>/: console.log (job), supervisor.log, slow.jsonl,
# poll.log, hog.log, timeline-*/ dumps. The job runs on CPUs 0-15.
# NPROC ranks (4 by default); STRAGGLE_ARGS are added to straggle.py's
# (`--batch 1 --seq 128`: host-bound); XPU_TIMER_RECORDER_SIZE may be set.
# SUP_CPUS pins the supervisor apart from the job (the job stays on 0-15).
set -uo pipefail
tarball=$1 out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/xt && tar xzf "$tarball" -C /tmp/xt
bin=$(echo /tmp/xt/*/bin)
export XPU_TIMER_RECORDER_SIZE=${XPU_TIMER_RECORDER_SIZE:-65536} PYTHONUNBUFFERED=1
for sc in "$@"; do
  IFS=: read -r kind secs onset extra <<<"$sc"
  d=$out/$kind; mkdir -p "$d"
  args=(--seconds "$secs" ${STRAGGLE_ARGS:-}); dumps=""
  case $kind in
    healthy) dumps="120,300,$((secs - 60))"
             [ "$secs" -lt 400 ] && dumps="$((secs / 2)),$((secs - 20))" ;;
    gpuhog) dumps="$((onset - 10)),$((onset + 30)),$((onset + extra + 30))" ;;
    host) args+=(--host-delay-rank 1 --host-delay-share "$extra" --delay-after "$onset")
          dumps="$((onset - 10)),$((onset + 45)),$((secs - 10))" ;;
  esac
  echo "== $sc $(date +%s.%N)" | tee -a "$out/run.log"
  taskset -c "${SUP_CPUS:-0-15}" timeout $((secs + 120)) "$bin/xpu_timer_supervisor" --port 0 --dump-dir "$d" -- \
    taskset -c 0-15 torchrun --nproc_per_node="${NPROC:-4}" "$here/straggle.py" "${args[@]}" > "$d/console.log" 2>&1 &
  sup=$!
  python3 "$here/poll.py" "$d" "$d/slow.jsonl" --dumps "$dumps" > "$d/poll.log" 2>&1 &
  poll=$!
  if [ "$kind" = gpuhog ]; then
    taskset -c 15 timeout $((onset + extra + 60)) python3 "$here/gpu_hog.py" --device 2 \
      --after "$onset" --seconds "$extra" > "$d/hog.log" 2>&1 &
  fi
  wait $sup; echo "supervisor exit $?" >> "$d/poll.log"
  wait $poll
  wait
done
