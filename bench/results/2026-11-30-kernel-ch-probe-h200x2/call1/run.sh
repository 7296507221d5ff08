#!/usr/bin/env bash
# One call on nvidia-h200-x2, issue 40: what asking NCCL for its kernel-channel events costs a step
# (kernel_ch arm) against what our two events per collective cost (collective_events arm), and how
# late the events reach the plugin (kernel_ch_latency.py). Host-bound DDP twice, arms in both orders,
# then the GPU-bound GPT-2 job. Release tarball at .gpu/x2/new.tar.gz.
set -u
o=/tmp/o; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
save() { cp $o/call.log $OUT/; tar czf $OUT/raw.tgz --exclude='*.ring' -C $o . 2>/dev/null; }
i=0
for arms in collective_events,kernel_ch kernel_ch,collective_events; do
  i=$((i+1))
  echo "== host-bound $i $arms $(date -u +%T)"
  NPROC=2 CPUS=0-15 timeout 200 bash bench/gpu/overhead_parts.sh $NEW $o/hb$i ${HB_PAIRS:-500} $arms \
    --workloads ddp --batch 1 --seq 128 --kernel-ch-dump $o/hb$i/kch > $o/hb$i.log 2>&1
  grep -E "^ddp|^workload|samples" $o/hb$i/overhead.log
  python3 bench/gpu/kernel_ch_latency.py $o/hb$i/kch.rank0 $o/hb$i/kch.rank1
  save
done
echo "== gpu-bound $(date -u +%T)"
NPROC=2 CPUS=0-15 timeout 150 bash bench/gpu/overhead_parts.sh $NEW $o/gb ${GB_PAIRS:-150} kernel_ch \
  --kernel-ch-dump $o/gb/kch > $o/gb.log 2>&1
grep -E "^gpt2|^workload|samples" $o/gb/overhead.log
python3 bench/gpu/kernel_ch_latency.py $o/gb/kch.rank0 $o/gb/kch.rank1
echo "== end $(date -u +%T)"
save
