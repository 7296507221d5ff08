#include "supervisor/metrics/metrics_exporter.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>

namespace xpu_timer::supervisor {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

constexpr uint64_t kNow = 1000ull * 1000000000ull;  // CLOCK_MONOTONIC of the scrapes

const MetricsConfig& config() {
  static const MetricsConfig c = [] {
    MetricsConfig m;
    m.job_name = "train";
    return m;
  }();
  return c;
}

std::unique_ptr<proto::StatusPage> page_with_allreduce_and_gemm() {
  auto page = std::make_unique<proto::StatusPage>();
  page->inflight_count = 2;
  page->dropped_queue_full = 7;
  page->skipped_capture = 3;
  page->hook_errors = 1;
  page->nmetrics = 3;
  proto::MetricSlot& ar = page->metrics[0];
  ar.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  ar.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  ar.size_bucket = 20;
  ar.nranks = 4;
  ar.count = 3;
  ar.sum_ns = 1500000;  // 1.5 ms
  ar.sum_bytes = 3u << 20;
  ar.untimed_count = 2;  // sampled out of timing: in the totals, not the histogram
  ar.untimed_bytes = 1u << 20;
  ar.hist[6] = 1;  // <= 640 us
  ar.hist[7] = 2;  // <= 1.28 ms
  ar.algo = static_cast<uint8_t>(proto::NcclAlgo::kRing);
  ar.proto = static_cast<uint8_t>(proto::NcclProto::kLL128);
  ar.transport = static_cast<uint8_t>(proto::NcclTransport::kIntraNode);
  ar.nchannels = 16;
  ar.last_update_ns = kNow - 1;
  // metrics[1] unused (name 0) must be skipped.
  proto::MetricSlot& mm = page->metrics[2];
  mm.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  mm.dtype = static_cast<uint8_t>(proto::DType::kF16);
  mm.size_bucket = 30;
  mm.count = 1;
  mm.sum_ns = 12000000001ull;
  mm.sum_flops = 2000000000ull;
  mm.untimed_count = 4;
  mm.untimed_flops = 8000000000ull;
  mm.hist[proto::kHistBuckets - 1] = 1;
  mm.last_update_ns = kNow - 1;
  return page;
}

TEST(MetricsExporter, ExactLinesForOnePage) {
  auto page = page_with_allreduce_and_gemm();
  MetricsWriter w(config(), nullptr, kNow);
  RankMetricsInput in;
  in.rank = 5;
  in.local_rank = 1;
  in.host = "node\"a\\b\nc";
  in.up = true;
  in.stuck = true;
  in.state = "stuck";
  in.heartbeat_age_s = 0.25;
  in.page = page.get();
  w.add_rank(in);
  const std::string text = w.finish(true, false);
  const std::string l =
      "rank=\"5\",local_rank=\"1\",host=\"node\\\"a\\\\b\\nc\",job_name=\"train\"";
  const std::string ar =
      l + ",op=\"AllReduce\",kind=\"nccl\",dtype=\"bf16\",size_bucket=\"20\",nranks=\"4\"," +
      "algo=\"Ring\",proto=\"LL128\",transport=\"intra_node\"";
  const std::string mm = l + ",op=\"GemmEx\",kind=\"gemm\",dtype=\"fp16\",size_bucket=\"30\"";
  // The histograms: summed over the node's ranks, without rank labels.
  const std::string node = "host=\"node\\\"a\\\\b\\nc\",job_name=\"train\"";
  const std::string ar_node = node + ar.substr(l.size());
  const std::string mm_node = node + mm.substr(l.size());

  EXPECT_TRUE(has_line(text, "# HELP xpu_timer_rank_up 1 while the rank's process is alive."));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_rank_up gauge"));
  EXPECT_TRUE(has_line(text, "xpu_timer_rank_up{" + l + "} 1"));
  EXPECT_TRUE(has_line(text, "xpu_timer_hang{" + l + "} 1"));
  EXPECT_TRUE(has_line(text, "xpu_timer_inflight_operations{" + l + "} 2"));
  EXPECT_TRUE(has_line(text, "xpu_timer_heartbeat_age_seconds{" + l + "} 0.250"));
  EXPECT_TRUE(has_line(text, "xpu_timer_dropped_records_total{" + l + "} 7"));
  EXPECT_TRUE(has_line(text, "xpu_timer_skipped_capture_total{" + l + "} 3"));
  EXPECT_TRUE(has_line(text, "xpu_timer_hook_errors_total{" + l + "} 1"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_operations_total counter"));
  EXPECT_TRUE(has_line(text, "xpu_timer_operations_total{" + ar + "} 5"));
  EXPECT_TRUE(has_line(text, "xpu_timer_operations_total{" + mm + "} 5"));
  EXPECT_TRUE(has_line(text, "xpu_timer_operations_timed_total{" + ar + "} 3"));
  EXPECT_TRUE(has_line(text, "xpu_timer_operation_gpu_seconds_total{" + ar + "} 0.001500000"));
  EXPECT_TRUE(has_line(text, "xpu_timer_operation_gpu_seconds_total{" + mm + "} 12.000000001"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_operation_latency_seconds histogram"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_operation_latency_seconds_bucket{" + ar_node + ",le=\"1e-05\"} 0"));
  EXPECT_TRUE(has_line(
      text, "xpu_timer_operation_latency_seconds_bucket{" + ar_node + ",le=\"0.00032\"} 0"));
  EXPECT_TRUE(has_line(
      text, "xpu_timer_operation_latency_seconds_bucket{" + ar_node + ",le=\"0.00064\"} 1"));
  EXPECT_TRUE(has_line(
      text, "xpu_timer_operation_latency_seconds_bucket{" + ar_node + ",le=\"0.00128\"} 3"));
  EXPECT_TRUE(has_line(
      text, "xpu_timer_operation_latency_seconds_bucket{" + ar_node + ",le=\"41.94304\"} 3"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_operation_latency_seconds_bucket{" + ar_node + ",le=\"+Inf\"} 3"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_operation_latency_seconds_sum{" + ar_node + "} 0.001500000"));
  EXPECT_TRUE(has_line(text, "xpu_timer_operation_latency_seconds_count{" + ar_node + "} 3"));
  EXPECT_TRUE(has_line(
      text, "xpu_timer_operation_latency_seconds_bucket{" + mm_node + ",le=\"41.94304\"} 0"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_operation_latency_seconds_bucket{" + mm_node + ",le=\"+Inf\"} 1"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_operation_latency_seconds_sum{" + mm_node + "} 12.000000001"));
  EXPECT_TRUE(has_line(text, "xpu_timer_nccl_bytes_total{" + ar + "} 4194304"));
  EXPECT_TRUE(has_line(text, "xpu_timer_gemm_flops_total{" + mm + "} 10000000000"));
  EXPECT_TRUE(has_line(text, "xpu_timer_nccl_bus_bytes_total{" + ar + "} 6291456"));
  EXPECT_TRUE(has_line(text, "xpu_timer_nccl_channels{" + ar + "} 16"));
  EXPECT_TRUE(has_line(text, "xpu_timer_queue_depth{" + l + "} 0"));
  EXPECT_TRUE(has_line(text, "xpu_timer_job_hung{job_name=\"train\"} 1"));
  EXPECT_TRUE(has_line(text, "xpu_timer_job_running{job_name=\"train\"} 0"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_rank_state gauge"));
  // The enum convention: every state has its series, 1 for the current one.
  for (const char* state : {"ok", "missing", "unresponsive", "exited", "crashed", "terminated",
                            "mismatch", "stalled"}) {
    EXPECT_TRUE(has_line(text, "xpu_timer_rank_state{" + l + ",state=\"" + state + "\"} 0"))
        << state;
  }
  EXPECT_TRUE(has_line(text, "xpu_timer_rank_state{" + l + ",state=\"stuck\"} 1"));
  // No window state given: no rate gauges.
  EXPECT_EQ(text.find("xpu_timer_gemm_flops_per_second{"), std::string::npos);
  // One HELP/TYPE per family; 24 buckets per slot; unused slot skipped.
  EXPECT_EQ(count(text, "# TYPE xpu_timer_operation_latency_seconds "), 1u);
  EXPECT_EQ(count(text, "xpu_timer_operation_latency_seconds_bucket{"), 2u * proto::kHistBuckets);
  EXPECT_EQ(count(text, "xpu_timer_operations_total{"), 2u);
  EXPECT_EQ(text.back(), '\n');
}

// Series per family name (`_bucket` etc. counted under their own names) of
// an exposition: the shape of a scrape, comment lines left out.
std::map<std::string, size_t> series_by_name(const std::string& text) {
  std::map<std::string, size_t> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++out[line.substr(0, line.find('{'))];
  }
  return out;
}

// The series of a two-rank node whose ranks ran the same AllReduce and GEMM
// keys, with NVTX ranges and steps: one histogram series per key and node by
// default, one per key and rank with --metrics-histograms rank; the counters
// and gauges are per rank either way, and the node's histogram is the sum of
// the ranks' (bucket by bucket, _sum and _count).
TEST(MetricsExporter, HistogramsPerNodeByDefaultPerRankOnRequest) {
  auto page = page_with_allreduce_and_gemm();
  page->nranges = 2;
  std::snprintf(page->ranges[1].name, proto::kRangeNameBytes, "forward");
  page->ranges[1].count = 1;
  page->ranges[1].sum_ns = 1000;
  page->ranges[1].hist[0] = 1;
  page->steps.steps = 1;
  page->steps.sum_ns = 2000;
  page->steps.hist[0] = 1;
  auto render = [&](bool per_rank) {
    MetricsConfig c = config();
    c.per_rank_histograms = per_rank;
    MetricsWriter w(c, nullptr, kNow);
    for (int r = 0; r < 2; ++r) {
      RankMetricsInput in;
      in.rank = r;
      in.local_rank = r;
      in.host = "n1";
      in.up = true;
      in.page = page.get();
      w.add_rank(in);
    }
    return w.finish(false);
  };
  const std::string node_text = render(false);
  const std::string rank_text = render(true);
  const size_t b = proto::kHistBuckets;
  // Per rank: 1 + 9 + 1 + 1 liveness, 14 page counters and gauges, 1 step
  // gauge; per key and rank: operations, timed, GPU seconds, and 1 (GEMM
  // flops) or 3 (NCCL bytes, bus bytes, channels).
  std::map<std::string, size_t> per_rank = {
      {"xpu_timer_rank_up", 2},
      {"xpu_timer_rank_state", 18},
      {"xpu_timer_hang", 2},
      {"xpu_timer_heartbeat_age_seconds", 2},
      {"xpu_timer_inflight_operations", 2},
      {"xpu_timer_queue_depth", 2},
      {"xpu_timer_dropped_records_total", 2},
      {"xpu_timer_skipped_capture_total", 2},
      {"xpu_timer_hook_errors_total", 2},
      {"xpu_timer_kernel_launches_total", 2},
      {"xpu_timer_host_blocked_seconds_total", 2},
      {"xpu_timer_device_memory_allocations_total", 2},
      {"xpu_timer_device_memory_allocated_bytes_total", 2},
      {"xpu_timer_device_memory_frees_total", 2},
      {"xpu_timer_device_memory_freed_bytes_total", 2},
      {"xpu_timer_nvtx_ranges_dropped_total", 2},
      {"xpu_timer_self_poller_cpu_seconds_total", 2},
      {"xpu_timer_self_hook_seconds_total", 2},
      {"xpu_timer_step_last_seconds", 2},
      {"xpu_timer_operations_total", 4},
      {"xpu_timer_operations_timed_total", 4},
      {"xpu_timer_operation_gpu_seconds_total", 4},
      {"xpu_timer_gemm_flops_total", 2},
      {"xpu_timer_nccl_bytes_total", 2},
      {"xpu_timer_nccl_bus_bytes_total", 2},
      {"xpu_timer_nccl_channels", 2},
      {"xpu_timer_job_hung", 1},
      {"xpu_timer_job_stalled", 1},
      {"xpu_timer_job_running", 1},
      {"xpu_timer_collective_mismatches_total", 1},
      {"xpu_timer_self_supervisor_cpu_seconds_total", 1},
  };
  // Histograms: 2 operation keys, 1 range name, 1 step source; once per
  // node, or once per rank.
  auto with_histograms = [&](size_t copies) {
    std::map<std::string, size_t> m = per_rank;
    for (const auto& [name, series] :
         {std::pair<std::string, size_t>{"xpu_timer_operation_latency_seconds", 2},
          {"xpu_timer_nvtx_range_seconds", 1},
          {"xpu_timer_step_seconds", 1}}) {
      m[name + "_bucket"] = series * copies * b;
      m[name + "_sum"] = series * copies;
      m[name + "_count"] = series * copies;
    }
    return m;
  };
  EXPECT_EQ(series_by_name(node_text), with_histograms(1)) << node_text;
  EXPECT_EQ(series_by_name(rank_text), with_histograms(2)) << rank_text;

  // The node's series carry no rank label, and sum the two ranks'.
  const std::string ar_key =
      ",op=\"AllReduce\",kind=\"nccl\",dtype=\"bf16\",size_bucket=\"20\",nranks=\"4\","
      "algo=\"Ring\",proto=\"LL128\",transport=\"intra_node\"";
  const std::string node = "host=\"n1\",job_name=\"train\"";
  EXPECT_TRUE(
      has_line(node_text, "xpu_timer_operation_latency_seconds_count{" + node + ar_key + "} 6"));
  EXPECT_TRUE(has_line(
      node_text, "xpu_timer_operation_latency_seconds_sum{" + node + ar_key + "} 0.003000000"));
  EXPECT_TRUE(has_line(node_text, "xpu_timer_operation_latency_seconds_bucket{" + node + ar_key +
                                      ",le=\"0.00064\"} 2"));
  EXPECT_TRUE(
      has_line(node_text, "xpu_timer_step_seconds_count{" + node + ",source=\"optimizer\"} 2"));
  EXPECT_TRUE(has_line(
      node_text, "xpu_timer_nvtx_range_seconds_sum{" + node + ",range=\"forward\"} 0.000002000"));
  for (const char* family : {"xpu_timer_operation_latency_seconds", "xpu_timer_nvtx_range_seconds",
                             "xpu_timer_step_seconds"}) {
    EXPECT_EQ(node_text.find(std::string(family) + "_count{rank="), std::string::npos) << family;
  }
  // Per rank: each rank's own, as before.
  const std::string r1 = "rank=\"1\",local_rank=\"1\"," + node;
  EXPECT_TRUE(
      has_line(rank_text, "xpu_timer_operation_latency_seconds_count{" + r1 + ar_key + "} 3"));
  // Per-rank timed counters and GPU time sum to the node's histogram.
  EXPECT_TRUE(has_line(node_text, "xpu_timer_operations_timed_total{" + r1 + ar_key + "} 3"));
  EXPECT_TRUE(has_line(node_text,
                       "xpu_timer_operation_gpu_seconds_total{" + r1 + ar_key + "} 0.001500000"));
}

// An idle key of one rank stays in its node's histogram while another rank
// uses it (the sum must not drop: Prometheus would read a counter reset),
// and leaves with the last rank's.
TEST(MetricsExporter, ANodeHistogramKeepsAnExpiredRanksCountsWhileTheKeyLives) {
  auto live = page_with_allreduce_and_gemm();
  auto idle = page_with_allreduce_and_gemm();
  idle->metrics[0].last_update_ns = kNow - 601ull * 1000000000ull;
  idle->metrics[2].last_update_ns = kNow - 601ull * 1000000000ull;
  live->metrics[2].last_update_ns = kNow - 601ull * 1000000000ull;  // the GEMM idle everywhere
  MetricsWriter w(config(), nullptr, kNow);
  for (proto::StatusPage* p : {live.get(), idle.get()}) {
    RankMetricsInput in;
    in.rank = p == live.get() ? 0 : 1;
    in.host = "n1";
    in.page = p;
    w.add_rank(in);
  }
  const std::string text = w.finish(false);
  EXPECT_EQ(count(text, "xpu_timer_operation_latency_seconds_count{"), 1u) << text;
  EXPECT_NE(text.find("op=\"AllReduce\""), std::string::npos);
  EXPECT_TRUE(has_line(text,
                       "xpu_timer_operation_latency_seconds_count{host=\"n1\","
                       "job_name=\"train\",op=\"AllReduce\",kind=\"nccl\",dtype=\"bf16\","
                       "size_bucket=\"20\",nranks=\"4\",algo=\"Ring\",proto=\"LL128\","
                       "transport=\"intra_node\"} 6"))
      << text;
  EXPECT_EQ(count(text, "xpu_timer_operations_total{"), 1u);  // rank 0's AllReduce only
}

TEST(MetricsExporter, RankWithoutReadablePageHasOnlyLiveness) {
  MetricsWriter w(config(), nullptr, kNow);
  RankMetricsInput in;
  in.rank = 0;
  in.host = "h";
  w.add_rank(in);
  const std::string text = w.finish(false);
  EXPECT_TRUE(has_line(
      text, "xpu_timer_rank_up{rank=\"0\",local_rank=\"0\",host=\"h\",job_name=\"train\"} 0"));
  EXPECT_EQ(text.find("xpu_timer_operations_total"), std::string::npos);
  EXPECT_TRUE(has_line(text, "xpu_timer_job_hung{job_name=\"train\"} 0"));
  EXPECT_TRUE(has_line(text, "xpu_timer_job_stalled{job_name=\"train\"} 0"));
}

TEST(MetricsExporter, AStalledJobAndItsStalledRank) {
  MetricsWriter w(config(), nullptr, kNow);
  RankMetricsInput in;
  in.rank = 0;
  in.host = "h";
  in.up = true;
  in.state = "stalled";
  w.add_rank(in);
  const std::string text = w.finish(false, true, 0, /*job_stalled=*/true);
  EXPECT_TRUE(has_line(text, "xpu_timer_job_stalled{job_name=\"train\"} 1"));
  EXPECT_TRUE(has_line(text, "xpu_timer_job_hung{job_name=\"train\"} 0"));
  const std::string l = "rank=\"0\",local_rank=\"0\",host=\"h\",job_name=\"train\"";
  EXPECT_TRUE(has_line(text, "xpu_timer_rank_state{" + l + ",state=\"stalled\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "xpu_timer_rank_state{" + l + ",state=\"ok\"} 0")) << text;
}

TEST(MetricsExporter, GarbageCountsAreBounded) {
  auto page = std::make_unique<proto::StatusPage>();
  page->nmetrics = 0xffffffffu;  // a corrupt page must not read past metrics[]
  page->metrics[proto::kMaxMetrics - 1].name = static_cast<uint16_t>(proto::OpName::kSend);
  page->metrics[proto::kMaxMetrics - 1].dtype = 200;  // unknown dtype
  page->metrics[proto::kMaxMetrics - 1].algo = 250;   // unknown algorithm
  page->metrics[proto::kMaxMetrics - 1].count = 1;
  page->metrics[proto::kMaxMetrics - 1].last_update_ns = kNow;
  MetricsWriter w(config(), nullptr, kNow);
  RankMetricsInput in;
  in.page = page.get();
  w.add_rank(in);
  const std::string text = w.finish(false);
  EXPECT_NE(text.find("op=\"Send\",kind=\"nccl\",dtype=\"unknown\""), std::string::npos);
  EXPECT_NE(text.find("algo=\"unknown\",proto=\"unknown\""), std::string::npos);
}

TEST(MetricsExporter, ScalesTo1024Ranks) {
  auto page = page_with_allreduce_and_gemm();
  MetricsWriter w(config(), nullptr, kNow);
  for (int r = 0; r < 1024; ++r) {
    RankMetricsInput in;
    in.rank = r;
    in.local_rank = r % 8;
    in.host = "node" + std::to_string(r / 8);
    in.up = true;
    in.page = page.get();
    w.add_rank(in);
  }
  const std::string text = w.finish(false);
  EXPECT_EQ(count(text, "xpu_timer_rank_up{"), 1024u);
  EXPECT_EQ(count(text, "# TYPE xpu_timer_rank_up "), 1u);
}

TEST(MetricsExporter, SecondsFromNanoseconds) {
  std::string s;
  append_ns_as_seconds(&s, 0);
  EXPECT_EQ(s, "0.000000000");
  s.clear();
  append_ns_as_seconds(&s, 18446744073709551615ull);
  EXPECT_EQ(s, "18446744073.709551615");
}

TEST(MetricsExporter, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(proto::nccl_bus_factor(proto::OpName::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(proto::nccl_bus_factor(proto::OpName::kAllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(proto::nccl_bus_factor(proto::OpName::kReduceScatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(proto::nccl_bus_factor(proto::OpName::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(proto::nccl_bus_factor(proto::OpName::kSend, 8), 1.0);
  EXPECT_DOUBLE_EQ(proto::nccl_bus_factor(proto::OpName::kAllReduce, 0), 1.0);  // size unknown
}

// Rate gauges over the window: the deltas between the newest sample at least
// a window old and now, not lifetime averages.
TEST(MetricsExporter, RateGaugesUseTheRecentWindow) {
  const uint64_t s = 1000000000ull;
  RateWindow rates(30 * s);
  auto page = std::make_unique<proto::StatusPage>();
  page->nmetrics = 2;
  proto::MetricSlot& mm = page->metrics[0];
  mm.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  mm.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  proto::MetricSlot& ar = page->metrics[1];
  ar.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  ar.nranks = 2;
  RankMetricsInput in;
  in.rank = 1;
  in.pid = 42;
  in.page = page.get();
  auto scrape = [&](uint64_t now) {
    MetricsWriter w(config(), &rates, now);
    w.add_rank(in);
    return w.finish(false);
  };
  // 0-100 s: 1e12 flops per 10 ms of GPU time = 100 TFLOP/s.
  mm.count = 10;
  mm.sum_ns = 100000000;
  mm.sum_flops = 10000000000000ull;
  mm.last_update_ns = 100 * s;
  ar.count = 4;
  ar.sum_ns = 4000000;        // 1 ms each
  ar.sum_bytes = 4000000000;  // 1e9 bytes each: algbw 1e12 B/s
  ar.last_update_ns = 100 * s;
  std::string text = scrape(100 * s);
  const std::string l = "rank=\"1\",local_rank=\"0\",host=\"\",job_name=\"train\"";
  const std::string g = l + ",op=\"GemmEx\",kind=\"gemm\",dtype=\"bf16\",size_bucket=\"0\"";
  const std::string n = l + ",op=\"AllReduce\",kind=\"nccl\",dtype=\"unknown\",size_bucket=\"0\"," +
                        "nranks=\"2\",algo=\"unknown\",proto=\"unknown\",transport=\"unknown\"";
  EXPECT_TRUE(has_line(text, "xpu_timer_gemm_flops_per_second{" + g + "} 1e+14")) << text;
  EXPECT_TRUE(has_line(text, "xpu_timer_nccl_algo_bandwidth_bytes_per_second{" + n + "} 1e+12"));
  EXPECT_TRUE(has_line(text, "xpu_timer_nccl_bus_bandwidth_bytes_per_second{" + n + "} 1e+12"));
  // Its help says what the GPU time holds, and where the link alone is.
  for (const char* family : {"algo", "bus"}) {
    const std::string help = "# HELP xpu_timer_nccl_" + std::string(family) + "_bandwidth";
    const size_t at = text.find(help);
    ASSERT_NE(at, std::string::npos) << help;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_NE(line.find("includes the wait for the last member to arrive and the SMs shared"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second"),
              std::string::npos)
        << line;
  }
  // 100-140 s: the GEMMs got twice slower (50 TFLOP/s); the lifetime average
  // would still say 66.7.
  mm.count += 10;
  mm.sum_ns += 200000000;
  mm.sum_flops += 10000000000000ull;
  mm.last_update_ns = 140 * s;
  text = scrape(140 * s);
  EXPECT_TRUE(has_line(text, "xpu_timer_gemm_flops_per_second{" + g + "} 5e+13")) << text;
  // No AllReduce in the window: no bandwidth sample rather than a stale one.
  EXPECT_EQ(text.find("xpu_timer_nccl_algo_bandwidth_bytes_per_second{"), std::string::npos);
  EXPECT_TRUE(has_line(text, "xpu_timer_nccl_bytes_total{" + n + "} 4000000000"));
  // A new process for the rank starts its window afresh.
  in.pid = 43;
  mm.count = 1;
  mm.sum_ns = 10000000;
  mm.sum_flops = 2000000000000ull;
  text = scrape(150 * s);
  EXPECT_TRUE(has_line(text, "xpu_timer_gemm_flops_per_second{" + g + "} 2e+14")) << text;
}

// Copies are operations with their bytes and bandwidth; launches and device
// allocations are per-rank counters of the page (inject/hooks_cudart.cc).
TEST(MetricsExporter, CopiesAndRuntimeCounters) {
  const uint64_t s = 1000000000ull;
  RateWindow rates(30 * s);
  auto page = std::make_unique<proto::StatusPage>();
  page->runtime.kernel_launches = 123456;
  page->runtime.mallocs = 3;
  page->runtime.malloc_bytes = 3u << 30;
  page->runtime.frees = 1;
  page->runtime.free_bytes = 1u << 30;
  page->runtime.host_blocked_ns = 2500000000ull;
  page->nmetrics = 1;
  proto::MetricSlot& cp = page->metrics[0];
  cp.name = static_cast<uint16_t>(proto::OpName::kMemcpyH2D);
  cp.dtype = static_cast<uint8_t>(proto::DType::kU8);
  cp.size_bucket = 26;
  cp.count = 2;
  cp.sum_ns = 4000000;      // 2 ms each
  cp.sum_bytes = 2u << 26;  // 64 MiB each: 33.55 GB/s
  cp.untimed_count = 3;
  cp.untimed_bytes = 3u << 26;
  cp.hist[8] = 2;
  cp.last_update_ns = 100 * s;
  RankMetricsInput in;
  in.rank = 0;
  in.pid = 7;
  in.page = page.get();
  MetricsWriter w(config(), &rates, 100 * s);
  w.add_rank(in);
  const std::string text = w.finish(false);
  const std::string l = "rank=\"0\",local_rank=\"0\",host=\"\",job_name=\"train\"";
  const std::string c = l + ",op=\"MemcpyH2D\",kind=\"memcpy\",dtype=\"uint8\",size_bucket=\"26\"";
  EXPECT_TRUE(has_line(text, "xpu_timer_operations_total{" + c + "} 5")) << text;
  EXPECT_TRUE(has_line(text, "xpu_timer_memcpy_bytes_total{" + c + "} 335544320"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_memcpy_bytes_total counter"));
  EXPECT_TRUE(has_line(text, "xpu_timer_memcpy_bandwidth_bytes_per_second{" + c + "} 33554432000"))
      << text;
  EXPECT_TRUE(has_line(text, "xpu_timer_kernel_launches_total{" + l + "} 123456"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_kernel_launches_total counter"));
  EXPECT_TRUE(has_line(text, "xpu_timer_host_blocked_seconds_total{" + l + "} 2.500000000"))
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_host_blocked_seconds_total counter"));
  EXPECT_TRUE(has_line(text, "xpu_timer_device_memory_allocations_total{" + l + "} 3"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_device_memory_allocated_bytes_total{" + l + "} 3221225472"));
  EXPECT_TRUE(has_line(text, "xpu_timer_device_memory_frees_total{" + l + "} 1"));
  EXPECT_TRUE(has_line(text, "xpu_timer_device_memory_freed_bytes_total{" + l + "} 1073741824"));
  // Copies are neither NCCL traffic nor GEMM work.
  EXPECT_EQ(text.find("xpu_timer_nccl_bytes_total{"), std::string::npos);
  EXPECT_EQ(text.find("xpu_timer_gemm_flops_total{"), std::string::npos);
}

// Python series only for a rank whose probes run, each generation its series.
TEST(MetricsExporter, PythonSeriesOnlyWhereTheProbesRun) {
  auto page = std::make_unique<proto::StatusPage>();
  RankMetricsInput in;
  in.rank = 3;
  in.page = page.get();
  {
    MetricsWriter w(config(), nullptr, kNow);
    w.add_rank(in);
    const std::string text = w.finish(false);
    EXPECT_EQ(text.find("xpu_timer_python_gc"), std::string::npos);
    EXPECT_EQ(text.find("xpu_timer_dataloader"), std::string::npos);
  }
  page->python.probes = proto::kPythonProbeGc | proto::kPythonProbeDataLoader;
  page->python.gc_collections[2] = 4;
  page->python.gc_pause_ns[2] = 1500000000;
  page->python.gc_collected[0] = 77;
  page->python.loader_batches = 20;
  page->python.loader_wait_ns = 250000000;
  MetricsWriter w(config(), nullptr, kNow);
  w.add_rank(in);
  const std::string text = w.finish(false);
  const std::string l = "rank=\"3\",local_rank=\"0\",host=\"\",job_name=\"train\"";
  EXPECT_TRUE(has_line(text, "xpu_timer_python_gc_collections_total{" + l + ",generation=\"2\"} 4"))
      << text;
  EXPECT_TRUE(
      has_line(text, "xpu_timer_python_gc_collections_total{" + l + ",generation=\"0\"} 0"));
  EXPECT_TRUE(has_line(
      text, "xpu_timer_python_gc_pause_seconds_total{" + l + ",generation=\"2\"} 1.500000000"));
  EXPECT_TRUE(
      has_line(text, "xpu_timer_python_gc_collected_objects_total{" + l + ",generation=\"0\"} 77"));
  EXPECT_TRUE(has_line(text, "xpu_timer_dataloader_batches_total{" + l + "} 20"));
  EXPECT_TRUE(has_line(text, "xpu_timer_dataloader_wait_seconds_total{" + l + "} 0.250000000"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_python_gc_pause_seconds_total counter"));
}

TEST(MetricsExporter, NvtxRangesAndStepsAsHistograms) {
  auto page = std::make_unique<proto::StatusPage>();
  RankMetricsInput in;
  in.rank = 1;
  in.page = page.get();
  page->nranges = 3;
  std::snprintf(page->ranges[0].name, proto::kRangeNameBytes, "(other)");
  std::snprintf(page->ranges[1].name, proto::kRangeNameBytes, "for\"ward");  // escaped
  std::snprintf(page->ranges[2].name, proto::kRangeNameBytes, "never_ended");
  page->ranges[1].count = 3;
  page->ranges[1].sum_ns = 3500000;
  page->ranges[1].hist[proto::hist_bucket_for_ns(1000000)] = 2;
  page->ranges[1].hist[proto::hist_bucket_for_ns(1500000)] += 1;
  page->ranges_dropped = 2;
  page->steps.source = static_cast<uint32_t>(proto::StepSource::kNvtxRange);
  page->steps.steps = 2;
  page->steps.sum_ns = 2500000000;
  page->steps.last_ns = 1200000000;
  page->steps.hist[proto::hist_bucket_for_ns(1200000000)] = 1;
  page->steps.hist[proto::hist_bucket_for_ns(1300000000)] += 1;
  MetricsWriter w(config(), nullptr, kNow);
  w.add_rank(in);
  const std::string text = w.finish(false);
  const std::string l = "rank=\"1\",local_rank=\"0\",host=\"\",job_name=\"train\"";
  const std::string node = "host=\"\",job_name=\"train\"";  // histograms: per node
  const std::string fwd = node + ",range=\"for\\\"ward\"";
  EXPECT_TRUE(has_line(text, "xpu_timer_nvtx_range_seconds_count{" + fwd + "} 3")) << text;
  EXPECT_TRUE(has_line(text, "xpu_timer_nvtx_range_seconds_sum{" + fwd + "} 0.003500000"));
  EXPECT_TRUE(has_line(text, "xpu_timer_nvtx_range_seconds_bucket{" + fwd + ",le=\"+Inf\"} 3"));
  EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_nvtx_range_seconds histogram"));
  // Names that never ended (and "(other)" while empty) have no series.
  EXPECT_EQ(text.find("never_ended"), std::string::npos);
  EXPECT_EQ(text.find(",range=\"(other)\""), std::string::npos);
  EXPECT_TRUE(has_line(text, "xpu_timer_nvtx_ranges_dropped_total{" + l + "} 2"));
  const std::string st = node + ",source=\"nvtx\"";
  EXPECT_TRUE(has_line(text, "xpu_timer_step_seconds_count{" + st + "} 2"));
  EXPECT_TRUE(has_line(text, "xpu_timer_step_seconds_sum{" + st + "} 2.500000000"));
  EXPECT_TRUE(has_line(text, "xpu_timer_step_last_seconds{" + l + "} 1.200000000"));
  // No step measured yet: no GPU idle series.
  EXPECT_EQ(text.find("xpu_timer_step_bubble_ratio{"), std::string::npos);
  page->steps.measured = 2;
  page->steps.busy_ns = 1500000000;
  page->steps.idle_ns = 1000000000;
  page->steps.last_busy_ns = 900000000;
  page->steps.last_window_ns = 1200000000;
  page->steps.untimed_ops = 3;
  MetricsWriter w3(config(), nullptr, kNow);
  w3.add_rank(in);
  const std::string measured = w3.finish(false);
  EXPECT_TRUE(has_line(measured, "xpu_timer_step_gpu_busy_seconds_total{" + l + "} 1.500000000"));
  EXPECT_TRUE(has_line(measured, "xpu_timer_step_gpu_idle_seconds_total{" + l + "} 1.000000000"));
  EXPECT_TRUE(has_line(measured, "xpu_timer_step_bubble_ratio{" + l + "} 0.25")) << measured;
  EXPECT_TRUE(has_line(measured, "xpu_timer_step_untimed_operations_total{" + l + "} 3"));

  // A page without NVTX or steps: none of these families.
  auto bare = std::make_unique<proto::StatusPage>();
  in.page = bare.get();
  MetricsWriter w2(config(), nullptr, kNow);
  w2.add_rank(in);
  const std::string none = w2.finish(false);
  EXPECT_EQ(none.find("xpu_timer_nvtx_range_seconds_count"), std::string::npos);
  EXPECT_EQ(none.find("xpu_timer_nvtx_ranges_dropped_total{"), std::string::npos);
  EXPECT_EQ(none.find("xpu_timer_step_seconds_count"), std::string::npos);
}

// Traced Python functions share the range table, told apart by their kind:
// per-rank call and time counters, a histogram per node (per rank on
// request), never mixed with an NVTX range of the same name.
TEST(MetricsExporter, TracedPythonFunctionsAsCountersAndAHistogram) {
  auto page = std::make_unique<proto::StatusPage>();
  page->nranges = 3;
  std::snprintf(page->ranges[1].name, proto::kRangeNameBytes, "torch.cuda.synchronize");
  page->ranges[1].kind = static_cast<uint32_t>(proto::RangeKind::kPythonFunction);
  page->ranges[1].count = 4;
  page->ranges[1].sum_ns = 2000000;
  page->ranges[1].hist[proto::hist_bucket_for_ns(500000)] = 4;
  std::snprintf(page->ranges[2].name, proto::kRangeNameBytes, "torch.cuda.synchronize");
  page->ranges[2].count = 1;  // an NVTX range of that name
  page->ranges[2].sum_ns = 7000;
  page->ranges[2].hist[0] = 1;
  auto other = std::make_unique<proto::StatusPage>();  // rank 2: the same calls
  other->nranges = page->nranges;
  std::memcpy(other->ranges, page->ranges, sizeof(page->ranges));
  const std::string fn = ",function=\"torch.cuda.synchronize\"";
  for (const bool per_rank : {false, true}) {
    MetricsConfig c = config();
    c.per_rank_histograms = per_rank;
    MetricsWriter w(c, nullptr, kNow);
    RankMetricsInput in;
    in.rank = 1;
    in.page = page.get();
    w.add_rank(in);
    in.rank = 2;
    in.page = other.get();
    w.add_rank(in);
    const std::string text = w.finish(false);
    const std::string l = "rank=\"1\",local_rank=\"0\",host=\"\",job_name=\"train\"";
    EXPECT_TRUE(has_line(text, "xpu_timer_python_function_calls_total{" + l + fn + "} 4")) << text;
    EXPECT_TRUE(
        has_line(text, "xpu_timer_python_function_call_seconds_total{" + l + fn + "} 0.002000000"));
    EXPECT_TRUE(has_line(text, "# TYPE xpu_timer_python_function_seconds histogram"));
    const std::string key = per_rank ? l + fn : "host=\"\",job_name=\"train\"" + fn;
    EXPECT_TRUE(
        has_line(text, "xpu_timer_python_function_seconds_count{" + key + "} " +
                           std::string(per_rank ? "4" : "8")))
        << text;
    EXPECT_TRUE(has_line(text, "xpu_timer_python_function_seconds_bucket{" + key +
                                   ",le=\"0.00064\"} " + std::string(per_rank ? "4" : "8")));
    // The NVTX range keeps its own family and count.
    const std::string range = per_rank ? l : "host=\"\",job_name=\"train\"";
    EXPECT_TRUE(has_line(text, "xpu_timer_nvtx_range_seconds_count{" + range +
                                   ",range=\"torch.cuda.synchronize\"} " +
                                   std::string(per_rank ? "1" : "2")))
        << text;
    EXPECT_EQ(text.find("xpu_timer_nvtx_range_seconds_count{" + range + fn), std::string::npos);
  }
}

TEST(MetricsExporter, IdleKeysExpire) {
  MetricsConfig c = config();
  c.expiry_s = 600;
  auto page = page_with_allreduce_and_gemm();
  page->metrics[2].last_update_ns = kNow - 601ull * 1000000000ull;  // the GEMM went idle
  MetricsWriter w(c, nullptr, kNow);
  RankMetricsInput in;
  in.page = page.get();
  w.add_rank(in);
  const std::string text = w.finish(false);
  EXPECT_EQ(count(text, "xpu_timer_operations_total{"), 1u);
  EXPECT_EQ(text.find("op=\"GemmEx\""), std::string::npos);
  EXPECT_NE(text.find("op=\"AllReduce\""), std::string::npos);
}

// A scrape reads a page as the poll does (read_page): a rank whose writer
// holds the seqlock is read again after a pause, not left out of /metrics.
// The "writer" here finishes its write during the exporter's first pause.
TEST(MetricsExporter, APageBusyUnderItsSeqlockIsReadAgainNotDropped) {
  char dir[] = "/tmp/xpu_exporter_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  RankIdentity id;
  id.rank = 2;
  std::string error;
  auto writer = proto::StatusPageFile::create(dir, id, getpid(), &error);
  ASSERT_NE(writer, nullptr) << error;
  RankRecord rec;
  rec.reg.rank = 2;
  rec.reg.pid = getpid();
  rec.reg.host = "h";
  rec.page = proto::StatusPageFile::attach(writer->path(), getpid(), 2, &error);
  ASSERT_NE(rec.page, nullptr) << error;
  writer->begin_write();
  writer->page()->inflight_count = 3;
  int pauses = 0;
  bool finish_in_first_pause = true;
  MetricsExporter exporter(config(), [&] {
    if (++pauses == 1 && finish_in_first_pause) writer->end_write();
  });
  const std::string labels = "rank=\"2\",local_rank=\"0\",host=\"h\",job_name=\"train\"";
  std::string text = exporter.render({rec}, HangReport{});
  EXPECT_EQ(pauses, 1) << "the first read saw the write in progress, the second its result";
  EXPECT_TRUE(has_line(text, "xpu_timer_inflight_operations{" + labels + "} 3")) << text;

  // A writer that never finishes: a bounded number of pauses, then the
  // rank's page series are left out of this scrape (its liveness stays).
  writer->begin_write();
  pauses = 0;
  finish_in_first_pause = false;
  text = exporter.render({rec}, HangReport{});
  EXPECT_EQ(pauses, 10);
  EXPECT_EQ(text.find("xpu_timer_inflight_operations{"), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "xpu_timer_rank_up{" + labels + "} 1")) << text;
  writer->end_write();
  const std::string path = writer->path();
  rec.page.reset();
  writer.reset();
  unlink(path.c_str());
  rmdir(dir);
}

TEST(MetricsExporter, JobNameFromEnvironmentOrJobId) {
  unsetenv("ENV_ARGO_WORKFLOW_NAME");
  unsetenv("XPU_TIMER_JOB_NAME");
  EXPECT_EQ(MetricsConfig::from_env({"/usr/bin/torchrun", "x.py"}, "run-3", false).job_name,
            "run-3");
  // No id: generated, never the launcher's name alone (job_name_test.cc).
  const std::string generated = MetricsConfig::from_env({"/usr/bin/torchrun"}, "", false).job_name;
  EXPECT_EQ(generated.rfind("torchrun-", 0), 0u) << generated;
  EXPECT_GT(generated.size(), std::string("torchrun-").size() + 16) << generated;
  setenv("XPU_TIMER_JOB_NAME", "llama-70b", 1);
  const MetricsConfig c = MetricsConfig::from_env({"torchrun"}, "run-3", true);
  EXPECT_EQ(c.job_name, "llama-70b");
  EXPECT_TRUE(c.per_rank_histograms);
  unsetenv("XPU_TIMER_JOB_NAME");
}

}  // namespace
}  // namespace xpu_timer::supervisor
