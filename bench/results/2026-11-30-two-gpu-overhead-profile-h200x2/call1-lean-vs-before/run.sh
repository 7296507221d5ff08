#!/usr/bin/env bash
# One call on nvidia-h200-x2, issue 40: the lean hot path (new) against the release before it (old),
# host-bound per-step pairs (paused arm) in alternated jobs A B B A, then the GPU-bound job on the new.
set -u
o=/tmp/o; mkdir -p $o
exec > >(tee $o/call.log) 2>&1
date -u
for n in old new; do mkdir -p /tmp/$n && tar xzf .gpu/x2/$n.tar.gz -C /tmp/$n; done
OLD=$(echo /tmp/old/xpu-timer-*-linux-x86_64); NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64)
echo "old $(cat $OLD/VERSION) new $(cat $NEW/VERSION)"
nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node|L2|L3'
echo "thp $(cat /sys/kernel/mm/transparent_hugepage/enabled) clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
mkdir -p $OUT
save() { cp $o/call.log $OUT/; tar czf $OUT/raw.tgz --exclude='*.ring' -C $o . 2>/dev/null; }
i=0
for n in old new new old; do
  i=$((i+1)); D=$OLD; [ $n = new ] && D=$NEW
  echo "== host-bound $i $n $(date -u +%T)"
  NPROC=2 CPUS=0-15 timeout 240 bash bench/gpu/overhead_parts.sh $D $o/hb$i-$n ${HB_PAIRS:-400} paused --workloads ddp --batch 1 --seq 128
  save
done
echo "== gpu-bound new $(date -u +%T)"
NPROC=2 CPUS=0-15 timeout 240 bash bench/gpu/overhead_parts.sh $NEW $o/gb-new 250 paused
echo "== end $(date -u +%T)"
save
