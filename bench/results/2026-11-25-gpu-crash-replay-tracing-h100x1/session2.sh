#!/usr/bin/env bash
# One device call: crash forensics on GPT-2 (issue 27), GEMM replay of a GPT-2
# dump (issue 28.2) with Python function tracing on real torch (issue 28.1).
set -uo pipefail
dist=$(ls -d dist/xpu-timer-*-linux-x86_64 | head -1)
echo "dist $dist"; nvidia-smi -L; date -u
mkdir -p "$OUT/crash" "$OUT/replay"
KINDS="segv abort-in-thread" timeout 280 bash bench/gpu/checks/crash_check.sh "$dist" "$OUT/crash" 2>&1 | tee "$OUT/crash/summary.txt"
echo "crash check status ${PIPESTATUS[0]}"
date -u
XPU_TIMER_HOST_TRACING_FUNC="common@run_steps,nosuch.module@fn" timeout 290 bash bench/gpu/gemm_replay_check.sh "$dist" "$OUT/replay" 2>&1 | tee "$OUT/replay/summary.txt"
echo "replay check status ${PIPESTATUS[0]}"
date -u
