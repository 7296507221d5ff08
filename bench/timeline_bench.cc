// Cost of a flight-recorder dump in the supervisor
// (supervisor/incidents/timeline_dump.h), 8 ranks x ~4096 records (the
// default ring), split as the dumper splits it:
//  - BM_ImagesAndFiles: what the caller's thread (the asio or HTTP thread)
//    pays per dump after copying the rings (recorder_bench's
//    BM_ReadWholeRing): one frozen image per rank and its file written.
//  - BM_ConvertFromMemory: what the dumper's own thread pays: the images
//    loaded as the tool would load the files, and the trace file written
//    (timeline/trace_conversion.h).
// Files go to a folder in /dev/shm, as a --dump-dir on tmpfs would.
//
//   build/bin/timeline_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/recorder_ring.h"
#include "timeline/test_dumps.h"
#include "timeline/trace_conversion.h"

namespace xpu_timer::timeline {
namespace {

constexpr int kRanks = 8;

testing::JobSpec job() {
  testing::JobSpec spec;
  spec.world = kRanks;
  spec.missing_rank = 3;
  spec.hang_seq = 1366;  // 3 records a step: ~4096 records a rank
  return spec;
}

std::string out_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/dev/shm/xpu_timer_timeline_bench.XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d != nullptr ? d : "/tmp");
  }();
  return dir;
}

void BM_ImagesAndFiles(benchmark::State& state) {
  const testing::JobSpec spec = job();
  std::vector<recorder::RingSnapshot> snaps;
  size_t records = 0;
  for (int r = 0; r < kRanks; ++r) {
    snaps.push_back(testing::rank_snapshot(spec, r));
    records += snaps.back().records.size();
  }
  std::string error;
  for (auto _ : state) {
    for (int r = 0; r < kRanks; ++r) {
      const recorder::RingImage image = recorder::ring_image(snaps[r]);
      if (!recorder::write_ring_image(out_dir() + "/" + recorder::dump_file_name(r, kRanks),
                                      image, &error)) {
        state.SkipWithError(error.c_str());
        return;
      }
    }
  }
  state.counters["records"] = static_cast<double>(records);
}
BENCHMARK(BM_ImagesAndFiles)->Unit(benchmark::kMillisecond);

void BM_ConvertFromMemory(benchmark::State& state) {
  const testing::JobSpec spec = job();
  std::vector<RankImage> images;
  for (int r = 0; r < kRanks; ++r) {
    images.push_back(RankImage{r, kRanks, recorder::ring_image(testing::rank_snapshot(spec, r))});
  }
  const std::string hang = testing::hang_json(spec);
  TraceSummary summary;
  for (auto _ : state) {
    const LoadedDumps dumps = dumps_from_images(out_dir(), images, hang);
    std::vector<std::string> warnings;
    std::string error;
    if (!write_trace_file(dumps, TraceOptions{}, out_dir() + "/timeline.json", &summary,
                          &warnings, &error)) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  state.counters["events"] = static_cast<double>(summary.events);
}
BENCHMARK(BM_ConvertFromMemory)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xpu_timer::timeline

BENCHMARK_MAIN();
