#!/usr/bin/env bash
# issue 40: the sampled timings' share of a host-bound two-GPU step (timed_ops arm), e2e60c7.
set -u
o=/tmp/o7; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
NPROC=2 CPUS=0-15 timeout 170 bash bench/gpu/overhead_parts.sh $NEW $o/t ${PAIRS:-600} timed_ops \
  --workloads ddp --batch 1 --seq 128 > $o/job.log 2>&1
grep -E "^ddp|^workload" $o/t/overhead.log
cp $o/call.log $o/t/overhead.log $OUT/
echo "== end $(date -u +%T)"
