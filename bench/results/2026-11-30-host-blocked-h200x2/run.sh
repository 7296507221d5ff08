#!/usr/bin/env bash
# One call on nvidia-h200-x2: the host-bound GPT-2 DDP job of two ranks (batch 1 x 128) under the
# release at .gpu/x2/new.tar.gz, which measures each host's time blocked on its GPU
# (inject/host_blocked.h): healthy for 90 s, then with rank 1 sleeping 30% of a step before every
# step from 45 s on (100 s). Supervisor on CPUs 16-31, the job on 0-15, a ring of 2^20 records.
# Each dump folder is slimmed on the machine (xpu_timer_slow_replay --slim) and replayed once.
set -u
o=/tmp/o4; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
export SUP_CPUS=16-31 NPROC=2 STRAGGLE_ARGS="--batch 1 --seq 128" XPU_TIMER_RECORDER_SIZE=1048576
for sc in healthy:90 host:100:45:0.3; do
  echo "== $sc $(date -u +%T)"
  timeout 170 bash bench/gpu/straggler/run.sh .gpu/x2/new.tar.gz $o $sc > $o/run-${sc%%:*}.log 2>&1
  echo "exit $?"
done
bin=$(echo /tmp/xt/*/bin); echo "release $(cat /tmp/xt/*/VERSION)"
for k in healthy host; do
  echo "== $k"; grep -E "HEALTHY_STEP_S|DELAY_ONSET|STEPS [0-9]*00 " $o/$k/console.log | head -5
  grep -E "straggler" $o/$k/supervisor.log | cut -c1-400
  python3 - $o/$k/slow.jsonl <<'PY'
import json, sys
n = named = 0
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    n += 1
    s = (j.get("slow") or {}).get("stragglers") or []
    if s:
        named += 1
        e = s[0].get("evidence", {})
        print("poll", round(j.get("t", 0), 1), s[0]["rank"], s[0]["cause"], round(s[0]["impact"], 4),
              e.get("host_blocked_s"), e.get("peer_host_blocked_s"))
print("polls", n, "naming someone", named)
PY
  for d in $o/$k/timeline-*; do
    [ -d "$d" ] || continue
    rm -f $d/timeline.json
    timeout 60 $bin/xpu_timer_slow_replay --path $d --slim $d.slim && rm -rf $d && mv $d.slim $d
    du -sh $d
    timeout 60 $bin/xpu_timer_slow_replay --path $d --every | python3 -c "
import json,sys
for l in sys.stdin:
    j=json.loads(l); s=j.get('stragglers',[])
    print('%.1f'%j['t_unix_s'], [(x['rank'],x['cause'],round(x['impact'],4),x['evidence'].get('host_blocked_s'),x['evidence'].get('peer_host_blocked_s')) for x in s])" | tail -30
  done
  tar cJf $OUT/$k.tar.xz -C $o $k
done
ls -la $OUT
echo "== end $(date -u +%T)"
cp $o/call.log $OUT/
