// End to end: the counts, bytes and FLOPs that /metrics reports for each rank
// are exactly what a known simulated job did.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <sstream>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace metrics_e2e {

// Sums of one metric family per (rank, op) from the Prometheus text.
std::map<std::pair<std::string, std::string>, double> sum_by_rank_op(const std::string& text,
                                                                     const std::string& family) {
  std::map<std::pair<std::string, std::string>, double> out;
  const std::regex line_re("^" + family + R"(\{([^}]*)\} (\S+)$)");
  const std::regex rank_re(R"(rank="([^"]*)\")"), op_re(R"(op="([^"]*)\")");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m, r, o;
    if (!std::regex_match(line, m, line_re)) continue;
    const std::string labels = m[1];
    if (!std::regex_search(labels, r, rank_re) || !std::regex_search(labels, o, op_re)) continue;
    out[{r[1], o[1]}] += std::stod(m[2]);
  }
  return out;
}

// Sums of one metric family per op over the series without a rank label.
std::map<std::string, double> sum_by_op(const std::string& text, const std::string& family) {
  std::map<std::string, double> out;
  const std::regex line_re("^" + family + R"(\{([^}]*)\} (\S+)$)");
  const std::regex op_re(R"(op="([^"]*)\")");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m, o;
    if (!std::regex_match(line, m, line_re)) continue;
    const std::string labels = m[1];
    if (labels.find("rank=") != std::string::npos) continue;
    if (!std::regex_search(labels, o, op_re)) continue;
    out[o[1]] += std::stod(m[2]);
  }
  return out;
}

const std::vector<std::string> expected_ops = {
    "GemmEx", "GemmStridedBatchedEx", "Sgemm", "Hgemm", "SgemmStridedBatched",
    "HgemmStridedBatched", "LtMatmul", "AllReduce"};

// "0": every call timed; "": the default sampling (each (op, shape) timed
// about 10 times a second, the other calls only counted).
class MetricsE2E : public ::testing::TestWithParam<std::string> {};

TEST_P(MetricsE2E, PerRankCountsBytesAndFlopsAreExact) {
  const bool every_call_timed = GetParam() == "0";
  // 11 steps of 3 GEMMs rotating over all 7 GEMM entry points (steps 0..10;
  // rank 1 hangs at step 10 after its GEMMs), 10 completed 1 MiB all-reduces.
  SupervisedJob job(
      every_call_timed ? "metrics-all" : "metrics-sampled", {"--hang-timeout", "300"},
      sim_job(2, false,
              {"--steps", "1000", "--gemm-api", "all", "--gemm", "1024,1024,1024", "--gemm-batch",
               "2", "--bytes", "1048576", "--hang-rank", "1", "--hang-step", "10"}),
      {"XPU_TIMER_SAMPLE_PER_SEC=" + GetParam()});
  ASSERT_TRUE(wait_until(
      [&] {
        auto ranks = job.get_json("/ranks");
        if (!ranks.is_array() || ranks.size() != 2) return false;
        for (const auto& r : ranks) {
          if (r.at("completed_total").get<uint64_t>() != 33 + 10) return false;
        }
        return true;
      },
      std::chrono::seconds(30)))
      << job.get_json("/ranks").dump(2) << job.log();

  const auto reply = http_get(job.port(), "/metrics");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200);
  const auto ops = sum_by_rank_op(reply->body, "xpu_timer_operations_total");
  const auto flops = sum_by_rank_op(reply->body, "xpu_timer_gemm_flops_total");
  const auto bytes = sum_by_rank_op(reply->body, "xpu_timer_nccl_bytes_total");
  const auto lat_count = sum_by_rank_op(reply->body, "xpu_timer_operations_timed_total");
  const auto lat_sum = sum_by_rank_op(reply->body, "xpu_timer_operation_gpu_seconds_total");
  // The latency histogram is the node's: no rank label, and per operation
  // the sum of the ranks' timed calls and GPU time (docs/metrics.md "Series
  // budget"), exactly.
  const auto node_count = sum_by_op(reply->body, "xpu_timer_operation_latency_seconds_count");
  const auto node_sum = sum_by_op(reply->body, "xpu_timer_operation_latency_seconds_sum");
  EXPECT_EQ(reply->body.find("xpu_timer_operation_latency_seconds_count{rank="), std::string::npos);
  ASSERT_EQ(node_count.size(), expected_ops.size());
  for (const std::string& op : expected_ops) {
    EXPECT_EQ(node_count.at(op), lat_count.at({"0", op}) + lat_count.at({"1", op})) << op;
    EXPECT_NEAR(node_sum.at(op), lat_sum.at({"0", op}) + lat_sum.at({"1", op}), 2e-9) << op;
  }

  const double mnk2 = 2.0 * 1024 * 1024 * 1024;
  const std::map<std::string, std::pair<int, double>> expected = {
      // op -> (calls, flops per call)
      {"GemmEx", {5, mnk2}},
      {"GemmStridedBatchedEx", {5, 2 * mnk2}},
      {"Sgemm", {5, mnk2}},
      {"Hgemm", {5, mnk2}},
      {"SgemmStridedBatched", {5, 2 * mnk2}},
      {"HgemmStridedBatched", {4, 2 * mnk2}},
      {"LtMatmul", {4, 2 * mnk2}},
  };
  for (const std::string rank : {"0", "1"}) {
    for (const auto& [op, e] : expected) {
      // Every call is counted, with its FLOPs; the timed ones carry latency.
      EXPECT_EQ(ops.at({rank, op}), e.first) << rank << " " << op;
      const double timed = lat_count.at({rank, op});
      if (every_call_timed) {
        EXPECT_EQ(timed, e.first) << rank << " " << op;
      } else {
        EXPECT_GE(timed, 1) << rank << " " << op;
        EXPECT_LE(timed, e.first) << rank << " " << op;
      }
      EXPECT_EQ(flops.at({rank, op}), e.first * e.second) << rank << " " << op;
    }
    EXPECT_EQ(ops.at({rank, "AllReduce"}), 10) << rank;
    EXPECT_EQ(bytes.at({rank, "AllReduce"}), 10 * 1048576) << rank;
    // Each simulated all-reduce lasts at least 20 us + 1 MiB / 50 GB/s (less
    // 1% for the resolution of event timestamps).
    EXPECT_GE(lat_sum.at({rank, "AllReduce"}),
              lat_count.at({rank, "AllReduce"}) * (20e-6 + 1048576 / 50e9) * 0.99)
        << rank;
  }
  EXPECT_NE(reply->body.find("# TYPE xpu_timer_operation_latency_seconds histogram"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Sampling, MetricsE2E, ::testing::Values("0", ""),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "0" ? std::string("EveryCallTimed")
                                                 : std::string("DefaultSampling");
                         });

}  // namespace metrics_e2e
}  // namespace xpu_timer::testing

namespace xpu_timer::testing {
namespace metrics_e2e {

// The Python probes (inject/python_probes.py) count what a Python rank's
// interpreter did: every garbage collection per generation with its pause,
// every batch its DataLoader iterator returned with the wait. Before 3.12
// through a wrapped __next__, from 3.12 on through sys.monitoring.
class PythonProbesE2E : public ::testing::TestWithParam<PythonInterpreter> {};

TEST_P(PythonProbesE2E, GcCollectionsAndDataLoaderWaitsAreCountedExactly) {
  const PythonInterpreter& py = GetParam();
  if (access(py.path, X_OK) != 0) GTEST_SKIP() << py.path << " is not installed";
  constexpr int kSteps = 20, kGcPerStep = 3;
  constexpr double kLoaderMs = 10;
  const std::vector<std::string> job =
      python_sim_job(2, py.path,
                     {"--steps", std::to_string(kSteps), "--gemms-per-step", "1", "--bytes", "4096",
                      "--gc-per-step", std::to_string(kGcPerStep), "--loader-ms", "10",
                      "--await-probes", "--end-sleep-s", "60"});
  SupervisedJob sup(std::string("probes-") + py.name, {"--hang-timeout", "300"}, job,
                    {"XPU_TIMER_DATALOADER_ITER=__main__:SimLoaderIter"});
  ASSERT_GT(sup.port(), 0) << sup.log();
  ASSERT_TRUE(sup.wait_python_loops(2)) << sup.log();
  const auto [text, ready] = sup.metrics_when([&](const std::string& t) {
    for (int r : {0, 1}) {
      if (value_of(t, "xpu_timer_dataloader_batches_total", r) < kSteps) return false;
      if (value_of(t, "xpu_timer_python_gc_collections_total", r, "generation=\"2\"") <
          kSteps * kGcPerStep) {
        return false;
      }
    }
    return true;
  });
  ASSERT_TRUE(ready) << text << sup.log();
  for (int r : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(value_of(text, "xpu_timer_dataloader_batches_total", r), kSteps);
    // Each batch sleeps kLoaderMs: the wait is at least that (a sleep never ends early).
    EXPECT_GE(value_of(text, "xpu_timer_dataloader_wait_seconds_total", r),
              kSteps * kLoaderMs / 1000.0);
    // Automatic collection is off: only the trainer's gc.collect() calls (generation 2).
    EXPECT_EQ(value_of(text, "xpu_timer_python_gc_collections_total", r, "generation=\"2\""),
              kSteps * kGcPerStep);
    EXPECT_EQ(value_of(text, "xpu_timer_python_gc_collections_total", r, "generation=\"0\""), 0);
    EXPECT_EQ(value_of(text, "xpu_timer_python_gc_collections_total", r, "generation=\"1\""), 0);
    EXPECT_GT(value_of(text, "xpu_timer_python_gc_pause_seconds_total", r, "generation=\"2\""), 0);
  }

  // The flight recorder holds each collection and each wait: the timeline
  // draws them on the rank's Python thread track, as many as were counted.
  const auto reply = http_post(sup.port(), "/dump/timeline");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200) << reply->body;
  const std::string dir = nlohmann::json::parse(reply->body).at("dir").get<std::string>();
  const auto trace = wait_for_dump_trace(reply->body);
  ASSERT_TRUE(trace.is_object()) << "no trace in " << dir;
  auto threads = trace_thread_names(trace);  // (pid, tid) -> track name
  std::map<std::pair<int, std::string>, int> slices;  // (pid, name) -> count
  std::map<int, double> wait_ms;                      // pid -> DataLoader wait drawn
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "range") continue;
    const int pid = e.at("pid").get<int>();
    const std::string name = e.at("name").get<std::string>();
    ++slices[{pid, name}];
    if (name == "DataLoader wait") wait_ms[pid] += e.at("dur").get<double>() / 1000.0;
    if (name == "DataLoader wait" || name.rfind("GC gen ", 0) == 0) {
      const std::string& track = threads[{pid, e.at("tid").get<int>()}];
      EXPECT_EQ(track.rfind("Python thread ", 0), 0u) << track;
    }
  }
  for (int pid : {1, 2}) {  // ranks 0 and 1
    SCOPED_TRACE("pid " + std::to_string(pid));
    EXPECT_EQ((slices[{pid, "GC gen 2"}]), kSteps * kGcPerStep);
    EXPECT_EQ((slices[{pid, "GC gen 0"}]), 0);
    EXPECT_EQ((slices[{pid, "DataLoader wait"}]), kSteps);
    EXPECT_GE(wait_ms[pid], kSteps * kLoaderMs);
  }
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonProbesE2E, ::testing::ValuesIn(python_interpreters()),
                         [](const ::testing::TestParamInfo<PythonInterpreter>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace metrics_e2e
}  // namespace xpu_timer::testing
