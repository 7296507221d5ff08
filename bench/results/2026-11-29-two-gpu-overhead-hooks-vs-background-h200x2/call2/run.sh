#!/usr/bin/env bash
# One call on nvidia-h200-x2, issue 40: the hooks' work split: the collectives' events against the GEMMs', copies' and launches' work, per-step pairs.
set -u
o=/tmp/o; mkdir -p $o
exec > >(tee $o/call.log) 2>&1
date -u
mkdir -p /tmp/d && tar xzf .gpu/x2/dist.tar.gz -C /tmp/d
D=$(echo /tmp/d/xpu-timer-*-linux-x86_64); echo "dist $D"; cat $D/VERSION
nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node'
COLL=collective_events
OPS=op_records+launch_count
echo "== host-bound pairs $(date -u +%T)"
NPROC=2 CPUS=0-15 timeout 380 bash bench/gpu/overhead_parts.sh $D $o/hb ${HB_PAIRS:-500} paused,$COLL,$OPS --workloads ddp --batch 1 --seq 128
echo "== end $(date -u +%T)"
mkdir -p $OUT && cp -r $o/. $OUT/
