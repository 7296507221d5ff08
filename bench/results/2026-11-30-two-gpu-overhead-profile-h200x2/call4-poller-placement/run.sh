#!/usr/bin/env bash
# issue 40: does the Poller's place matter? Host-bound DDP pairs (paused arm), the job on CPUs 0-15, with the
# Poller threads left there (stay) or moved to CPUs 16-31 (moved) once they start; jobs A B B A.
set -u
o=/tmp/o5; rm -rf $o; mkdir -p $o $OUT
exec > >(tee $o/call.log) 2>&1
date -u
[ -d /tmp/new ] || { mkdir -p /tmp/new && tar xzf .gpu/x2/new.tar.gz -C /tmp/new; }
NEW=$(echo /tmp/new/xpu-timer-*-linux-x86_64); echo "new $(cat $NEW/VERSION)"
lscpu -e=CPU,CORE,SOCKET,NODE | head -40
move_pollers() {  # until two xpu_timer_poll threads were moved, at most 90 s
  local moved=""
  for i in $(seq 1 180); do
    for t in $(ps -eLo tid=,comm= | awk '$2=="xpu_timer_poll"{print $1}'); do
      case " $moved " in *" $t "*) ;; *) taskset -pc 16-31 $t >/dev/null && moved="$moved $t" && echo "moved poller $t";; esac
    done
    [ $(echo $moved | wc -w) -ge 2 ] && return 0
    sleep 0.5
  done
}
i=0
for m in stay moved moved stay; do
  i=$((i+1)); echo "== $i $m $(date -u +%T)"
  [ $m = moved ] && { move_pollers & mp=$!; }
  NPROC=2 CPUS=0-15 timeout 150 bash bench/gpu/overhead_parts.sh $NEW $o/j$i-$m ${PAIRS:-400} paused \
    --workloads ddp --batch 1 --seq 128 > $o/j$i.log 2>&1
  [ $m = moved ] && { kill $mp 2>/dev/null; wait $mp 2>/dev/null; }
  grep -E "^ddp" $o/j$i-$m/overhead.log; grep -o '"self_poller_cpu_seconds_total": [0-9.e-]*' $o/j$i-$m/overhead.log
  cp $o/j$i-$m/overhead.log $OUT/overhead-$i-$m.log
done
cp $o/call.log $OUT/
echo "== end $(date -u +%T)"
