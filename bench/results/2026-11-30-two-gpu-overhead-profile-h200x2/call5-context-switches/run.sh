#!/usr/bin/env bash
# issue 40: context switches of the rank's threads per watched (A) and paused / collective-events-off (B) step.
set -u
o=/tmp/o6; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
NPROC=2 CPUS=0-15 timeout 200 bash bench/gpu/overhead_parts.sh $NEW $o/cs ${PAIRS:-400} paused,collective_events \
  --workloads ddp --batch 1 --seq 128 --ctx-switches > $o/job.log 2>&1
grep -E "^ddp|^workload" $o/cs/overhead.log
python3 - $o/cs/overhead.log <<'PY'
import json,sys
for line in open(sys.argv[1]):
    if line.startswith('{"workload"'):
        r=json.loads(line); print(r["b_lacks"], r["median_ratio"], r["ci95"])
        for k,v in sorted(r.get("context_switches_per_step",{}).items()):
            print("  %-26s A %8.2f B %8.2f A-B %7.2f se %5.2f" % (k, v["A"], v["B"], v["A_minus_B"], v["se"]))
PY
cp $o/call.log $o/cs/overhead.log $OUT/
echo "== end $(date -u +%T)"
