// Cost of the flight recorder (common/recorder_ring.h):
//  - BM_RecordLifecycle: what the rank's background thread does per operation:
//    one append when it drains the record, one update when the operation
//    starts, one when it completes (3 seqlock'ed writes of 136 bytes). The
//    training thread pays none of it.
//  - BM_ReadWholeRing: what the supervisor pays to copy one rank's full ring
//    out of its mapping (a dump), records validated one by one.
// The ring lives in /dev/shm, mapped as in a real job.
//
//   build/bin/recorder_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <string>

#include "common/recorder_ring.h"

namespace xpu_timer::recorder {
namespace {

std::string run_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/dev/shm/xpu_timer_recorder_bench.XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d != nullptr ? d : "/tmp");
  }();
  return dir;
}

RecordData sample_record(uint64_t i) {
  RecordData d;
  d.name = 32;  // AllReduce
  d.kind = 2;
  d.dtype = 3;
  d.state = static_cast<uint8_t>(OpState::kIssued);
  d.device = 0;
  d.nranks = 8;
  d.stream = 0x7f0000001000;
  d.comm_hash = 0x1234;
  d.seq = i;
  d.count = 1 << 20;
  d.bytes = 2 << 20;
  d.launch_ns = 1000 + i;
  return d;
}

void BM_RecordLifecycle(benchmark::State& state) {
  RingWriter w;
  if (!w.create(run_dir().c_str(), RankIdentity{}, getpid(), kDefaultCapacity)) {
    state.SkipWithError("cannot create the ring");
    return;
  }
  uint64_t i = 0;
  for (auto _ : state) {
    RecordData d = sample_record(i++);
    const uint64_t pos = w.append(d);
    d.state = static_cast<uint8_t>(OpState::kRunning);
    d.ready_ns = d.launch_ns + 10;
    w.update(pos, d);
    d.state = static_cast<uint8_t>(OpState::kCompleted);
    d.gpu_start_ns = d.ready_ns;
    d.gpu_end_ns = d.ready_ns + 100;
    d.flags = kRecTimed;
    w.update(pos, d);
  }
  w.unlink_file();
}
BENCHMARK(BM_RecordLifecycle);

void BM_ReadWholeRing(benchmark::State& state) {
  RingWriter w;
  const uint32_t cap = static_cast<uint32_t>(state.range(0));
  if (!w.create(run_dir().c_str(), RankIdentity{1, 1, 2, 2, 0}, getpid(), cap)) {
    state.SkipWithError("cannot create the ring");
    return;
  }
  for (uint64_t i = 0; i < 2ull * cap; ++i) w.append(sample_record(i));
  std::string error;
  auto reader = RingReader::attach(w.path(), getpid(), 1, &error);
  if (!reader) {
    state.SkipWithError(error.c_str());
    return;
  }
  RingSnapshot snap;
  for (auto _ : state) {
    if (!reader->read(&snap, &error) || snap.records.size() != cap) {
      state.SkipWithError("short read");
      break;
    }
    benchmark::DoNotOptimize(snap.records.data());
  }
  state.counters["bytes_per_rank"] = static_cast<double>(ring_file_bytes(cap));
  w.unlink_file();
}
BENCHMARK(BM_ReadWholeRing)->Arg(kDefaultCapacity)->Arg(65536);

}  // namespace
}  // namespace xpu_timer::recorder

BENCHMARK_MAIN();
