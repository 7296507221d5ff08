#!/usr/bin/env bash
# issue 40: perf profile (cpu-clock, CLOCK_MONOTONIC, no build-ids) of 25 s of a host-bound DDP pairs run, split A/B.
set -u
o=/tmp/o4; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
[ -d /tmp/new ] || { mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new; }
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
PERF="env LD_LIBRARY_PATH=$PWD/.gpu/perf/lib $PWD/.gpu/perf/perf"
echo -1 > /proc/sys/kernel/perf_event_paranoid
F=2000
NPROC=2 CPUS=0-15 timeout 150 bash bench/gpu/overhead_parts.sh $NEW $o/prof ${PAIRS:-600} paused \
  --workloads ddp --batch 1 --seq 128 --step-log $o/steps > $o/job.log 2>&1 &
job=$!
sleep 30
echo "== record $(date -u +%T)"
timeout -s INT 60 $PERF record -B -N -k CLOCK_MONOTONIC -a -C 0-15 -e cpu-clock -F $F -o $o/perf.data -- sleep 25 2>&1 | tail -2
echo "== recorded $(date -u +%T)"
wait $job; grep -E "^ddp|^workload" $o/prof/overhead.log
echo "== script $(date -u +%T)"
timeout 150 $PERF script -i $o/perf.data -F comm,tid,time,ip,sym,dso --ns 2>$o/script.err > $o/samples.txt
echo "script rc $? $(wc -l < $o/samples.txt) $(date -u +%T)"
python3 bench/gpu/perf_split.py $o/steps.rank0 --freq $F --arm paused --top 50 < $o/samples.txt > $OUT/split-paused.txt
cat $OUT/split-paused.txt
cp $o/call.log $o/prof/overhead.log $OUT/ 2>/dev/null
echo "== end $(date -u +%T)"
