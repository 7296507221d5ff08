#!/usr/bin/env bash
# Builds every libFuzzer target (*_fuzz) with clang in BUILD_DIR and runs each
# for SECONDS on a temporary copy of its seed corpus. Exits non-zero when a
# fuzzer crashes, leaks, times out or runs out of memory, naming the saved
# input (under BUILD_DIR/fuzz-artifacts) and the first lines of the report.
#
#   scripts/run_fuzzers.sh BUILD_DIR SECONDS
#
# A target's seeds are <component>/fuzz/corpus/<target>/ (or .../corpus/<name
# without _fuzz>/); a target without seeds starts from nothing, with a note.
# Nothing is written into the source tree: each fuzzer works on a copy.
# Environment: CMAKE_FLAGS (extra cmake arguments, e.g. a compiler launcher),
# JOBS (build jobs), FUZZ_JOBS (fuzzers run at once; both default to the CPU
# count).
set -euo pipefail

if [ $# -ne 2 ] || ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(mkdir -p "$1" && cd "$1" && pwd)"
seconds="$2"
jobs="${JOBS:-$(nproc)}"

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "run_fuzzers: $tool not found (scripts/install_deps.sh installs it)" >&2; exit 1; }
done

# Tests off keeps the build to the fuzz targets' few sources. -O1 with
# assertions on: fast enough to fuzz, and an assertion is a finding. Line
# tables only: a finding's stack keeps its files and lines, and the build on
# 2 cores took 48.5 s instead of 57.7 s with full debug info. A unity
# build (as make sanitize's): the libraries the fuzzers link compile a few
# sources to a translation unit, most of their time being the same headers.
# shellcheck disable=SC2086
# Ninja where the folder is new (as the Makefile's builds).
generator=()
[ -f "$build/CMakeCache.txt" ] || ! command -v ninja >/dev/null || generator=(-G Ninja)
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${generator[@]}" -DXPU_TIMER_BUILD_TESTS=OFF -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" ${CMAKE_FLAGS:-} >/dev/null
# Every *_fuzz target the build defines (Makefile and Ninja generators).
mapfile -t targets < <(cmake --build "$build" --target help |
  sed -nE 's/^(\.\.\. )?([A-Za-z0-9_]+_fuzz)(:.*)?$/\2/p' | sort -u)
if [ ${#targets[@]} -eq 0 ]; then
  echo "run_fuzzers: no *_fuzz target in $build (is its compiler clang? delete the folder to reconfigure)" >&2
  exit 1
fi
echo "run_fuzzers: building ${targets[*]}"
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >/dev/null

# The seeds of a target: the one folder named after it under some fuzz/corpus/.
corpus_of() {
  local t="$1" d
  for d in "$root"/{*,*/*}/fuzz/corpus/{"$t","${t%_fuzz}"}; do
    [ -d "$d" ] && { echo "$d"; return; }
  done
}

work="$(mktemp -d "${TMPDIR:-/tmp}/xpu_fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
rm -rf "$artifacts"

# Runs one fuzzer; its summary goes to $work/<target>/summary, its status to
# $work/<target>/rc.
run_one() {
  local t="$1" seeds log rc=0 start=$SECONDS runs cov input
  mkdir -p "$work/$t/corpus" "$work/$t/tmp" "$artifacts/$t"
  seeds="$(corpus_of "$t")"
  if [ -n "$seeds" ]; then
    cp -r "$seeds"/. "$work/$t/corpus/"
  else
    echo "run_fuzzers: $t has no seed corpus (<component>/fuzz/corpus/$t); started empty" \
      >>"$work/$t/summary"
  fi
  log="$artifacts/$t/fuzz.log"
  # -timeout: one input running this long is a hang; -rss_limit_mb: a
  # hostile size must not become a huge allocation. The outer timeout only
  # guards against libFuzzer itself never returning.
  (cd "$work/$t" &&
    TMPDIR="$work/$t/tmp" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}" \
    timeout --kill-after=30 $((seconds + 300)) \
      "$build/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$artifacts/$t/" -print_final_stats=1 corpus >"$log" 2>&1) || rc=$?
  echo "$rc" >"$work/$t/rc"
  if [ "$rc" -eq 0 ]; then
    runs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)"
    cov="$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)"
    echo "run_fuzzers: $t ok: ${runs:-?} inputs in $((SECONDS - start)) s, ${cov:-cov: ?}" \
      >>"$work/$t/summary"
    return
  fi
  input="$(find "$artifacts/$t" -maxdepth 1 -type f \
             \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \
                -o -name 'slow-unit-*' \) | head -1)"
  {
    echo "run_fuzzers: $t FAILED (exit $rc) after $((SECONDS - start)) s"
    echo "  input: ${input:-none saved}; full log: $log"
    echo "  reproduce: $build/bin/$t ${input:-<input>}"
    # The report starts at the sanitizer's or libFuzzer's first complaint.
    awk '/ERROR: |runtime error|deadly signal|ALARM: |out-of-memory|Timeout|leak/ {on=1}
         on && n < 30 {print "  | " substr($0, 1, 200); n++}' "$log"
  } >>"$work/$t/summary"
}

# The fuzzers run side by side, at most FUZZ_JOBS (default: the CPU count) at
# a time: -max_total_time is wall time, so each gets a whole core for it.
fuzz_jobs="${FUZZ_JOBS:-$(nproc)}"
start_all=$SECONDS
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$fuzz_jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$work/$t/summary" 2>/dev/null || echo "run_fuzzers: $t left no summary (the runner failed)"
  [ "$(cat "$work/$t/rc" 2>/dev/null || echo 1)" -eq 0 ] || failed+=("$t")
done
echo "run_fuzzers: ${#targets[@]} fuzzer(s) of $seconds s each, $((SECONDS - start_all)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_fuzzers: failed: ${failed[*]}" >&2
  exit 1
fi
