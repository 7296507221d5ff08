// What the slow-rank analysis costs the supervisor (supervisor/analysis/
// straggler.h), per second of a job, at the rates of a real one: the GPT-2
// DDP job of tests/data/real-gpu/ (12 all-reduces a 65 ms step: 185 a
// second on the data-parallel communicator; 80 timed GEMMs and copies a
// second per rank) on N ranks of one node, with a straggler costing 10% so
// that the cause is worked out at every verdict. One iteration feeds one
// second of records and takes the verdict, in a window kept full (30 s).
// Run: build/bin/straggler_bench (bench/results/).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kMs = 1000000;

void BM_AnalysisPerSecondOfJob(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const uint64_t comm = 0x1234;
  StragglerAnalyzer a;
  for (int r = 0; r < ranks; ++r) a.note_member(comm, r, 0);
  uint64_t seq = 0, t = 1000 * kMs;
  const uint64_t spacing = 1000 * kMs / 185;
  auto one_second = [&]() {
    for (int c = 0; c < 185; ++c) {
      ++seq;
      for (int r = 0; r < ranks; ++r) {
        CollectiveArrival x;
        x.rank = r;
        x.comm = comm;
        x.seq = seq;
        x.name = 32;
        const uint64_t late = r == 1 ? 650'000 : static_cast<uint64_t>(r % 7) * 3'000;
        x.launch_ns = t - 25 * kMs;
        x.arrival_ns = t + late;
        x.end_ns = t + 700'000;
        a.add_collective(x, t);
        if (c % 2 == 0) {
          a.add_gemm(r, GemmShape{1, 3, 1024, 8192, 1024, 1}, 300'000, t - 200'000);
          // Before the collective: its compute waits for it (critical path),
          // so that every margin of the slow rank counts and it is named.
          a.add_timed_op(r, t - 20 * kMs, t - 500'000, t - 200'000);
        }
      }
      t += spacing;
    }
    return a.analyze(t);
  };
  for (int i = 0; i < 30; ++i) one_second();  // fill the window
  size_t named = 0;
  for (auto _ : state) {
    const SlowReport rep = one_second();
    named = rep.stragglers.size();
    benchmark::DoNotOptimize(rep);
  }
  // Each iteration is one second of the job: its CPU time in ms is the
  // analysis's share of a core in thousandths.
  state.counters["stragglers"] = static_cast<double>(named);
}
BENCHMARK(BM_AnalysisPerSecondOfJob)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xpu_timer::supervisor

BENCHMARK_MAIN();
