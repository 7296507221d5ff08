#!/usr/bin/env bash
# The whole real-GPU straggler check on a 4-GPU machine, in three device
# calls (each is limited to 10 minutes; the healthy job runs 10 minutes
# across the first two; each call must follow the last within the machine's
# 30 s of idle warmth):
#   device_run.sh start DIST_TARBALL SIMBUILD   # call 1
#   device_run.sh finish DIST_TARBALL           # call 2, right after
#   device_run.sh host DIST_TARBALL             # call 3, right after
# `start` launches the 10-minute healthy GPT-2 job in a session of its own
# (it outlives the call) on CPUs 0-15, then runs the simulated-GPU accuracy
# bench (bench/straggler_accuracy.py) on CPUs 16-63 while it trains.
# `finish` waits for the healthy job, then runs the shared-GPU job; `host`
# the host-delay job; every result is tarred into $OUT (one archive per
# job: the device returns files of at most 16 MiB).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=/tmp/straggler-check
case $1 in
  start)
    mkdir -p "$work"
    nvidia-smi -L > "$work/gpus.txt"; nproc >> "$work/gpus.txt"
    setsid bash "$here/run.sh" "$2" "$work/gpu" healthy:600 > "$work/healthy-run.log" 2>&1 < /dev/null &
    sleep 75  # the job trains by then: show that it does
    cat "$work/gpus.txt"; tail -5 "$work/gpu/healthy/console.log"; tail -c 600 "$work/gpu/healthy/slow.jsonl"; echo
    timeout 460 python3 "$root/bench/straggler_accuracy.py" --build "$3" \
      --causes host,gpu,link,gpushare --shares 5,10 --runs 2 --ahead --onset-s 15 --limit 60 \
      --healthy 1 --healthy-plain 2 --healthy-real 2 --healthy-s 240 \
      --cpu-ranks 64 --cpu-s 60 --parallel 12 --cpus-per-run 4 --first-cpu 16 \
      --json "$work/sim-accuracy.json" > "$work/sim-accuracy.md" 2> "$work/sim-accuracy.err"
    echo "sim bench exit $?" >> "$work/sim-accuracy.err"
    tar czf "$OUT/sim-accuracy.tgz" -C "$work" sim-accuracy.json sim-accuracy.md sim-accuracy.err gpus.txt
    ;;
  finish)
    # (this script's own command line holds no "healthy:", so pgrep finds only the job's)
    while pgrep -f "run.sh .* healthy:" > /dev/null; do sleep 2; done
    bash "$here/run.sh" "$2" "$work/gpu" gpuhog:200:60:90 > "$work/run2.log" 2>&1
    for s in healthy gpuhog; do tar czf "$OUT/$s.tgz" --exclude=timeline.json -C "$work/gpu" "$s"; done
    tar czf "$OUT/logs.tgz" -C "$work" healthy-run.log run2.log gpus.txt
    ;;
  host)
    bash "$here/run.sh" "$2" "$work/gpu" host:160:60:0.05 > "$work/run3.log" 2>&1
    tar czf "$OUT/host.tgz" --exclude=timeline.json -C "$work/gpu" host
    ;;
esac
