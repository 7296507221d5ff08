#!/usr/bin/env bash
# One call on nvidia-h200-x2, issue 40: where a watched host-bound DDP step's CPU goes, by a sampling
# profile (perf, cpu-clock) of the job's CPUs while steps alternate watched and paused.
set -u
o=/tmp/o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
P() { LD_LIBRARY_PATH=$PWD/.gpu/perf/lib $PWD/.gpu/perf/perf "$@"; }
P --version; cat /proc/sys/kernel/perf_event_paranoid; echo -1 > /proc/sys/kernel/perf_event_paranoid
timeout 10 bash -c "LD_LIBRARY_PATH=$PWD/.gpu/perf/lib $PWD/.gpu/perf/perf stat -e cycles,instructions,cache-misses,dTLB-load-misses -a -- sleep 1" 2>&1 | tail -8
NPROC=2 CPUS=0-15 timeout 300 bash bench/gpu/overhead_parts.sh $NEW $o/prof ${PAIRS:-700} paused --workloads ddp --batch 1 --seq 128 &
job=$!
# the pairs begin about 25 s after the start (the ddp job's warm-up) and last about 40 s
sleep 32
echo "== perf record $(date -u +%T)"
P record -a -C 0-15 -e cpu-clock -F 2000 -o $o/perf.data -- sleep 15 2>&1 | tail -3
wait $job
echo "== reports $(date -u +%T)"
P report -i $o/perf.data --no-children --sort comm,dso -q 2>/dev/null | head -60 > $OUT/by-thread-dso.txt
P report -i $o/perf.data --no-children --sort comm,dso,sym -q 2>/dev/null | head -400 > $OUT/by-thread-sym.txt
P report -i $o/perf.data --no-children --dsos libxpu_timer_inject.so --sort comm,sym -q 2>/dev/null | head -200 > $OUT/ours.txt
P annotate -i $o/perf.data --stdio -d libxpu_timer_inject.so 2>/dev/null | head -3000 > $OUT/annotate.txt
cp $o/call.log $OUT/; tar czf $OUT/raw.tgz --exclude='*.ring' --exclude=perf.data -C $o .
echo "== end $(date -u +%T)"
