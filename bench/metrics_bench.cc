// Cost of GET /metrics: MetricsExporter::render, the function the HTTP
// handler calls, over N registered ranks whose status pages are real files in
// /dev/shm mapped read-only exactly as the supervisor maps them (seqlock copy
// through the SIGBUS guard, /proc liveness probe per rank, rate window
// bookkeeping, text rendering). Each page holds a realistic training mix:
// 8 GEMM keys and 6 NCCL keys with filled latency histograms.
//
//   build/bin/metrics_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "supervisor/metrics/metrics_exporter.h"
#include "supervisor/job/process_table.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {
namespace {

void fill_page(proto::StatusPage* p, int rank, uint64_t now_ns) {
  std::memset(static_cast<void*>(p), 0, sizeof(*p));
  p->magic = proto::kStatusPageMagic;
  p->version = proto::kStatusPageVersion;
  p->page_bytes = sizeof(proto::StatusPage);
  p->pid = getpid();
  p->rank = rank;
  p->local_rank = rank % 8;
  p->heartbeat_ns.store(now_ns);
  p->issued_total = p->completed_total = 1000000;
  p->queue_depth = 3;
  uint32_t n = 0;
  const proto::OpName gemms[] = {proto::OpName::kGemmEx, proto::OpName::kLtMatmul,
                                 proto::OpName::kGemmStridedBatchedEx};
  for (int i = 0; i < 8; ++i) {
    proto::MetricSlot& m = p->metrics[n++];
    m.name = static_cast<uint16_t>(gemms[i % 3]);
    m.dtype = static_cast<uint8_t>(proto::DType::kBF16);
    m.size_bucket = static_cast<uint8_t>(30 + i);
    m.count = 50000 + static_cast<uint64_t>(i);
    m.sum_ns = m.count * 400000;
    m.sum_flops = m.count * (1ull << (30 + i));
    m.last_update_ns = now_ns;
    for (int b = 4; b < 10; ++b) m.hist[b] = m.count / 6;
  }
  const proto::OpName colls[] = {proto::OpName::kAllReduce, proto::OpName::kAllGather,
                                 proto::OpName::kReduceScatter};
  for (int i = 0; i < 6; ++i) {
    proto::MetricSlot& m = p->metrics[n++];
    m.name = static_cast<uint16_t>(colls[i % 3]);
    m.dtype = static_cast<uint8_t>(proto::DType::kBF16);
    m.size_bucket = static_cast<uint8_t>(20 + i);
    m.nranks = 1024;
    m.algo = static_cast<uint8_t>(proto::NcclAlgo::kRing);
    m.proto = static_cast<uint8_t>(proto::NcclProto::kSimple);
    m.transport = static_cast<uint8_t>(proto::NcclTransport::kInterNode);
    m.nchannels = 16;
    m.count = 20000;
    m.sum_ns = m.count * 2000000;
    m.sum_bytes = m.count * (1ull << (20 + i));
    m.last_update_ns = now_ns;
    for (int b = 6; b < 12; ++b) m.hist[b] = m.count / 6;
  }
  p->nmetrics = n;
}

// N page files under /dev/shm, mapped like the supervisor maps them.
class Ranks {
 public:
  explicit Ranks(int n) {
    char tmpl[] = "/dev/shm/xpu_metrics_bench_XXXXXX";
    dir_ = mkdtemp(tmpl) != nullptr ? tmpl : "";
    const uint64_t now = monotonic_ns();
    auto page = std::make_unique<proto::StatusPage>();
    const auto self = read_proc_stat(getpid());
    for (int r = 0; r < n; ++r) {
      const std::string path = dir_ + "/rank-" + std::to_string(r) + ".page";
      fill_page(page.get(), r, now);
      const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0 || ::write(fd, page.get(), sizeof(*page)) != sizeof(*page)) std::abort();
      ::close(fd);
      paths_.push_back(path);
      std::string error;
      RankRecord rec;
      rec.reg.rank = r;
      rec.reg.local_rank = r % 8;
      rec.reg.pid = getpid();
      rec.reg.host = "node-" + std::to_string(r / 8);
      rec.start_time = self ? self->start_time : 0;
      rec.page = proto::StatusPageFile::attach(path, getpid(), r, &error);
      if (!rec.page) {
        std::fprintf(stderr, "%s\n", error.c_str());
        std::abort();
      }
      records_.push_back(std::move(rec));
    }
  }
  ~Ranks() {
    records_.clear();
    for (const auto& p : paths_) ::unlink(p.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::vector<RankRecord>& records() const { return records_; }

 private:
  std::string dir_;
  std::vector<std::string> paths_;
  std::vector<RankRecord> records_;
};

void BM_MetricsRender(benchmark::State& state) {
  Ranks ranks(static_cast<int>(state.range(0)));
  MetricsConfig config;
  config.job_name = "bench";
  MetricsExporter exporter(config);
  HangReport report;
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = exporter.render(ranks.records(), report);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
  state.SetLabel(std::to_string(state.range(0)) + " ranks x 14 keys");
}
BENCHMARK(BM_MetricsRender)->Arg(8)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace xpu_timer::supervisor

BENCHMARK_MAIN();
