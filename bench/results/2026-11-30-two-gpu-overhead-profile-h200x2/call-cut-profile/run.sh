#!/usr/bin/env bash
# One call on nvidia-h200-x2, issue 40: a sampling profile (perf, cpu-clock, CLOCK_MONOTONIC) of a
# host-bound DDP pairs run, split into watched (A) and paused / part-off (B) steps by the step log.
set -u
o=/tmp/o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
P() { LD_LIBRARY_PATH=$PWD/.gpu/perf/lib $PWD/.gpu/perf/perf "$@"; }
echo -1 > /proc/sys/kernel/perf_event_paranoid
F=3000
P record -k CLOCK_MONOTONIC -a -C 0-15 -e cpu-clock -F $F -o $o/perf.data > $o/perf-record.log 2>&1 &
perfpid=$!
NPROC=2 CPUS=0-15 timeout 300 bash bench/gpu/overhead_parts.sh $NEW $o/prof ${PAIRS:-500} paused,collective_events \
  --workloads ddp --batch 1 --seq 128 --step-log $o/steps
kill -INT $perfpid; wait $perfpid; tail -2 $o/perf-record.log
echo "== script $(date -u +%T)"
P script -i $o/perf.data -F comm,tid,time,ip,sym,dso --ns 2>/dev/null > $o/samples.txt
wc -l $o/samples.txt
for arm in paused collective_events; do
  python3 bench/gpu/perf_split.py $o/steps.rank0 --freq $F --arm $arm --top 45 < $o/samples.txt > $OUT/split-$arm.txt
  head -50 $OUT/split-$arm.txt
done
cp $o/call.log $OUT/; tar czf $OUT/raw.tgz --exclude='*.ring' --exclude=perf.data --exclude=samples.txt -C $o .
echo "== end $(date -u +%T)"
