#!/usr/bin/env bash
# One call on nvidia-h200-x2 (after call2, whose ranks shared CPUs 0-15 with the supervisor): recordings of a host-bound GPT-2 DDP job of two ranks (batch 1 x 128),
# with the supervisor on CPUs 16-31 apart from the job (0-15): healthy for 150 s, then with rank 1 sleeping 30% of a step before every step from 60 s on, under the
# release at .gpu/x2/new.tar.gz with a ring of 2^20 records (about 45 s of a host-bound rank's history).
# Each dump folder is slimmed on the machine to what the slow-rank analysis reads
# (xpu_timer_slow_replay --slim), then replayed there once.
set -u
o=/tmp/o3; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
export SUP_CPUS=16-31 NPROC=2 STRAGGLE_ARGS="--batch 1 --seq 128" XPU_TIMER_RECORDER_SIZE=1048576
for sc in healthy:150 host:150:60:0.3; do
  echo "== $sc $(date -u +%T)"
  bash bench/gpu/straggler/run.sh .gpu/x2/new.tar.gz $o $sc > $o/run-${sc%%:*}.log 2>&1
  echo "exit $?"
done
bin=$(echo /tmp/xt/*/bin); echo "release $(cat /tmp/xt/*/VERSION)"
for k in healthy host; do
  echo "== $k"; grep -E "HEALTHY_STEP_S|DELAY_ONSET|STEPS [0-9]*00 " $o/$k/console.log | head -5
  grep -E "straggler" $o/$k/supervisor.log | cut -c1-260
  for d in $o/$k/timeline-*; do
    [ -d "$d" ] || continue
    du -sh $d
    rm -f $d/timeline.json
    $bin/xpu_timer_slow_replay --path $d --slim $d.slim && rm -rf $d && mv $d.slim $d
    du -sh $d
    $bin/xpu_timer_slow_replay --path $d --every | python3 -c "
import json,sys
for l in sys.stdin:
    j=json.loads(l); s=j.get('stragglers',[])
    print('%.1f'%j['t_unix_s'], [(x['rank'],x['cause'],round(x['impact'],4)) for x in s])" | tail -40
  done
  tar cJf $OUT/$k.tar.xz -C $o $k
done
ls -la $OUT
echo "== end $(date -u +%T)"
cp $o/call.log $OUT/
