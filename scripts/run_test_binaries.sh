#!/usr/bin/env bash
# Runs gtest binaries of one build folder, JOBS at a time, each into its own
# log; prints one line per binary as it ends and, at the end, the whole log of
# every binary that failed. Exits non-zero when any failed or is missing.
#
#   scripts/run_test_binaries.sh BIN_DIR LOG_DIR JOBS TARGET...
#
# `make sanitize` runs the ASan+UBSan and TSan unit tests with it: they wait
# on their child processes and on etcd far more than they compute (a third of
# a core each, bench/results/2026-11-28-make-test-time.md), so a few at once
# take little more wall time than the longest. Environment (ASAN_OPTIONS,
# UBSAN_OPTIONS, TSAN_OPTIONS) passes through to the binaries.
set -uo pipefail

if [ $# -lt 4 ] || ! [[ "$3" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 BIN_DIR LOG_DIR JOBS TARGET..." >&2
  exit 2
fi
bin_dir="$(cd "$1" && pwd)" || exit 2
mkdir -p "$2" || exit 2
log_dir="$(cd "$2" && pwd)"
jobs="$3"
shift 3
# Each binary runs in its build folder (the parent of BIN_DIR), as ctest runs it.
cd "$bin_dir/.." || exit 2

# One binary: its log, and its exit status in LOG_DIR/<target>.rc.
run_one() {
  local t="$1" start=$SECONDS rc=0
  if [ -x "$bin_dir/$t" ]; then
    "$bin_dir/$t" --gtest_brief=1 >"$log_dir/$t.log" 2>&1 || rc=$?
  else
    echo "$bin_dir/$t: not built" >"$log_dir/$t.log"
    rc=127
  fi
  echo "$rc" >"$log_dir/$t.rc"
  if [ "$rc" -eq 0 ]; then
    echo "  ok      $t ($((SECONDS - start)) s)"
  else
    echo "  FAILED  $t (exit $rc, $((SECONDS - start)) s): $log_dir/$t.log"
  fi
}

running=0
for t in "$@"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

failed=0
for t in "$@"; do
  if [ "$(cat "$log_dir/$t.rc" 2>/dev/null)" != "0" ]; then
    failed=$((failed + 1))
    echo "===== $t ($log_dir/$t.log) ====="
    cat "$log_dir/$t.log"
  fi
done
echo "$(($# - failed)) of $# test binaries passed ($bin_dir)"
[ "$failed" -eq 0 ]
