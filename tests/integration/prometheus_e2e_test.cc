// End to end with the real Prometheus tools (Debian package `prometheus`):
//  - promtool accepts a live sim job's /metrics and our alert rules;
//  - a Prometheus server on loopback scrapes the supervisor of a sim job and
//    answers PromQL with the values the simulated GPU produced: GEMMs run at
//    exactly XPU_TIMER_SIM_TFLOPS, a collective lasts exactly
//    XPU_TIMER_SIM_LAT_US + bytes / XPU_TIMER_SIM_BUS_GBPS once all ranks
//    arrived (arrival skew between ranks only adds: kept small by a long
//    collective), and histogram_quantile interpolates inside the one
//    histogram bucket that holds every AllReduce.
// Tests skip (visibly) where promtool/prometheus are not installed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kPrometheus = "/usr/bin/prometheus";

// The simulated job: 4 ranks, each step four 8192^3 bf16 GEMMs (11 ms each
// at 100 TFLOP/s) then one 3 GiB AllReduce (64.45 ms at the sim's 20 us +
// 50 GB/s). Event timing, as on a GPU, adds the host gap between the start
// event and the kernel when the stream is idle: only the first GEMM of a step
// sees one (the others queue behind it), a few us against 44 ms.
constexpr double kTflops = 100;
constexpr double kAllReduceBytes = 3.0 * (1ull << 30);
constexpr double kLatencyS = 20e-6;
constexpr double kBusBytesPerS = 50e9;
constexpr int kRanks = 4;

std::vector<std::string> gemm_and_allreduce_job(int steps) {
  return sim_job(kRanks, false,
                 {"--steps", std::to_string(steps), "--gemm", "8192,8192,8192", "--gemms-per-step",
                  "4", "--collective", "allreduce", "--bytes",
                  std::to_string(static_cast<uint64_t>(kAllReduceBytes))});
}

std::vector<std::string> sim_timing_env() {
  return {"XPU_TIMER_SIM_TFLOPS=100", "XPU_TIMER_SIM_LAT_US=20", "XPU_TIMER_SIM_BUS_GBPS=50",
          "XPU_TIMER_JOB_NAME=prom-e2e", "XPU_TIMER_METRICS_WINDOW_S=5"};
}

// Waits until every rank completed at least `ops` operations.
bool wait_ops(SupervisedJob& job, uint64_t ops) {
  return wait_until(
      [&] {
        auto ranks = job.get_json("/ranks");
        if (!ranks.is_array() || ranks.size() != kRanks) return false;
        for (const auto& r : ranks) {
          if (r.at("completed_total").get<uint64_t>() < ops) return false;
        }
        return true;
      },
      std::chrono::seconds(30));
}

ExitStatus run_promtool(const std::vector<std::string>& args, const std::string& stdin_file,
                        std::string* output) {
  const std::string dir = make_temp_dir("promtool");
  std::string cmd = std::string(kPromtool);
  for (const auto& a : args) cmd += " '" + a + "'";
  if (!stdin_file.empty()) cmd += " < '" + stdin_file + "'";
  const ExitStatus st =
      run_to_end({"/bin/sh", "-c", cmd}, {}, dir + "/out.txt", std::chrono::seconds(30));
  *output = read_file(dir + "/out.txt");
  return st;
}

TEST(PrometheusE2E, PromtoolAcceptsTheLiveExposition) {
  if (access(kPromtool, X_OK) != 0)
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  // The job runs until the test ends (the supervisor serves only while it runs).
  SupervisedJob job("promtool", {}, gemm_and_allreduce_job(100000), sim_timing_env());
  ASSERT_TRUE(wait_ops(job, 2 * 5)) << job.log();
  const auto reply = http_get(job.port(), "/metrics");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200);
  // Every family we export is present, so promtool lints all of them.
  for (const char* family :
       {"xpu_timer_rank_up", "xpu_timer_queue_depth", "xpu_timer_operation_latency_seconds_bucket",
        "xpu_timer_gemm_flops_total", "xpu_timer_gemm_flops_per_second",
        "xpu_timer_nccl_bytes_total", "xpu_timer_nccl_bus_bytes_total",
        "xpu_timer_nccl_algo_bandwidth_bytes_per_second",
        "xpu_timer_nccl_bus_bandwidth_bytes_per_second", "xpu_timer_job_hung"}) {
    EXPECT_NE(reply->body.find(std::string("\n") + family + "{"), std::string::npos) << family;
  }
  const std::string file = make_temp_dir("promtool-metrics") + "/metrics.txt";
  std::ofstream(file) << reply->body;
  std::string out;
  const ExitStatus st = run_promtool({"check", "metrics"}, file, &out);
  EXPECT_TRUE(st.exited && st.code == 0) << describe(st) << "\n" << out;
  EXPECT_EQ(out, "") << "promtool lint findings";
}

TEST(PrometheusE2E, PromtoolAcceptsTheAlertRules) {
  if (access(kPromtool, X_OK) != 0)
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  std::string out;
  const ExitStatus st = run_promtool(
      {"check", "rules", source_dir() + "/deploy/prometheus/xpu_timer_alerts.yml"}, "", &out);
  EXPECT_TRUE(st.exited && st.code == 0) << describe(st) << "\n" << out;
  EXPECT_NE(out.find("SUCCESS"), std::string::npos) << out;
  // The scrape configuration that loads them.
  const ExitStatus config = run_promtool(
      {"check", "config", source_dir() + "/deploy/prometheus/prometheus.yml"}, "", &out);
  EXPECT_TRUE(config.exited && config.code == 0) << describe(config) << "\n" << out;
}

// The alerts on recorded series (deploy/prometheus/xpu_timer_alerts_test.yml):
// a hang fires one job alert and one for the missing rank only, not one per
// waiting rank; a crash alerts its rank, not the ranks the launcher
// terminated; a finished job's supervisor exiting is no "down".
TEST(PrometheusE2E, AlertsNameTheCulpritOncePerIncident) {
  if (access(kPromtool, X_OK) != 0)
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  std::string out;
  const ExitStatus st = run_promtool(
      {"test", "rules", source_dir() + "/deploy/prometheus/xpu_timer_alerts_test.yml"}, "", &out);
  EXPECT_TRUE(st.exited && st.code == 0) << describe(st) << "\n" << out;
  EXPECT_NE(out.find("SUCCESS"), std::string::npos) << out;
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// A Prometheus server scraping one supervisor every second.
class PrometheusServer {
 public:
  PrometheusServer(int target_port) {
    dir_ = make_temp_dir("prometheus");
    port_ = free_loopback_port();
    std::ofstream(dir_ + "/prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: xpu_timer\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << target_port << "']\n";
    child_ = std::make_unique<Child>(
        std::vector<std::string>{kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir_ + "/data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        std::vector<std::string>{}, ChildOptions{dir_ + "/prometheus.log"});
  }
  bool wait_ready() {
    return wait_until(
        [&] {
          auto r = http_get(port_, "/-/ready");
          return r.has_value() && r->status == 200;
        },
        std::chrono::seconds(20));
  }
  // Instant query; rank label -> value (one entry "" for a series without rank).
  std::map<std::string, double> query(const std::string& promql) {
    std::map<std::string, double> out;
    auto r = http_get(port_, "/api/v1/query?query=" + url_encode(promql));
    if (!r.has_value() || r->status != 200) return out;
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return out;
    for (const auto& s : j["data"]["result"]) {
      const std::string rank = s["metric"].value("rank", "");
      out[rank] = std::stod(s["value"][1].get<std::string>());
    }
    return out;
  }
  std::string log() const { return read_file(dir_ + "/prometheus.log"); }
  // Number of series an instant query returns; -1 when Prometheus rejects it.
  int count_series(const std::string& promql) {
    auto r = http_get(port_, "/api/v1/query?query=" + url_encode(promql));
    if (!r.has_value() || r->status != 200) return -1;
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return -1;
    return static_cast<int>(j["data"]["result"].size());
  }

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Child> child_;
};

TEST(PrometheusE2E, PromqlAnswersMatchTheSimulatedGpu) {
  if (access(kPrometheus, X_OK) != 0)
    GTEST_SKIP() << "prometheus not installed (apt-get install prometheus)";
  SupervisedJob job("prometheus", {}, gemm_and_allreduce_job(100000), sim_timing_env());
  ASSERT_TRUE(wait_ops(job, 3)) << job.log();
  PrometheusServer prom(job.port());
  ASSERT_TRUE(prom.wait_ready()) << prom.log();

  // The totals count every call, the latency only the timed ones (sampling):
  // a key's GPU time is its timed time scaled by calls / timed calls
  // (docs/metrics.md).
  auto gpu_time = [](const std::string& sel) {
    return "(rate(xpu_timer_operation_latency_seconds_sum{" + sel +
           "}[8s]) * rate(xpu_timer_operations_total{" + sel +
           "}[8s]) / (rate(xpu_timer_operation_latency_seconds_count{" + sel + "}[8s]) > 0))";
  };
  const std::string tflops_q = "sum by (rank) (rate(xpu_timer_gemm_flops_total[8s])) / sum by (rank) " +
                               gpu_time("kind=\"gemm\"") + " / 1e12";
  const std::string busbw_q =
      "sum by (rank) (rate(xpu_timer_nccl_bus_bytes_total{op=\"AllReduce\"}[8s])) / sum by (rank) " +
      gpu_time("op=\"AllReduce\"");
  const std::string p99_q =
      "histogram_quantile(0.99, sum by (le) "
      "(rate(xpu_timer_operation_latency_seconds_bucket{op=\"AllReduce\"}[8s])))";
  // Bounded wait until the range holds enough scrapes for every rank.
  std::map<std::string, double> tflops, busbw;
  ASSERT_TRUE(wait_until(
      [&] {
        tflops = prom.query(tflops_q);
        busbw = prom.query(busbw_q);
        const auto scrapes = prom.query("count_over_time(xpu_timer_rank_up{rank=\"0\"}[8s])");
        return tflops.size() == kRanks && busbw.size() == kRanks && scrapes.count("0") == 1 &&
               scrapes.at("0") >= 6;
      },
      std::chrono::seconds(40)))
      << prom.log() << job.log();

  // Exact quantities: 2% (the AllReduce also waits for the last rank to arrive).
  const double algbw = kAllReduceBytes / (kLatencyS + kAllReduceBytes / kBusBytesPerS);
  const double expected_busbw = algbw * 2.0 * (kRanks - 1) / kRanks;
  for (int r = 0; r < kRanks; ++r) {
    const std::string rank = std::to_string(r);
    EXPECT_NEAR(tflops.at(rank), kTflops, 0.02 * kTflops) << "rank " << r;
    EXPECT_NEAR(busbw.at(rank), expected_busbw, 0.02 * expected_busbw) << "rank " << r;
  }
  // The window gauges agree with the PromQL over the counters.
  const auto gauge_tflops = prom.query("xpu_timer_gemm_flops_per_second / 1e12");
  const auto gauge_busbw =
      prom.query("xpu_timer_nccl_bus_bandwidth_bytes_per_second{op=\"AllReduce\"}");
  ASSERT_EQ(gauge_tflops.size(), static_cast<size_t>(kRanks));
  ASSERT_EQ(gauge_busbw.size(), static_cast<size_t>(kRanks));
  for (const auto& [rank, v] : gauge_tflops) EXPECT_NEAR(v, kTflops, 0.02 * kTflops) << rank;
  for (const auto& [rank, v] : gauge_busbw) {
    EXPECT_NEAR(v, expected_busbw, 0.02 * expected_busbw) << rank;
  }

  // p99 across ranks: an AllReduce takes at least 64.45 ms (the simulated
  // transfer), in the (40.96, 81.92] ms bucket, plus whatever it waits for the
  // last rank to arrive; no observation lies below that bucket. Had every one
  // fallen in it, histogram_quantile would interpolate lo + 0.99 (hi - lo);
  // waits on a busy machine can only push observations into later buckets,
  // so that value is a lower bound, reached exactly when no rank waited long.
  const double op_s = kLatencyS + kAllReduceBytes / kBusBytesPerS;
  const double lo = 0.04096, hi = 0.08192;
  ASSERT_GT(op_s, lo);
  ASSERT_LE(op_s * 1.02, hi);
  const auto p99 = prom.query(p99_q);
  ASSERT_EQ(p99.size(), 1u) << prom.log();
  EXPECT_GE(p99.begin()->second, lo + 0.99 * (hi - lo) - 1e-9);
  // And the mean from the same histogram is the exact latency.
  const auto mean = prom.query(
      "sum(rate(xpu_timer_operation_latency_seconds_sum{op=\"AllReduce\"}[8s])) / "
      "sum(rate(xpu_timer_operation_latency_seconds_count{op=\"AllReduce\"}[8s]))");
  ASSERT_EQ(mean.size(), 1u);
  EXPECT_NEAR(mean.begin()->second, op_s, 0.02 * op_s);

  // Every query of the Grafana dashboard is valid PromQL and finds data.
  const auto dash = nlohmann::json::parse(
      read_file(source_dir() + "/deploy/grafana/xpu_timer_dashboard.json"), nullptr, false);
  ASSERT_FALSE(dash.is_discarded());
  int queries = 0;
  for (const auto& panel : dash["panels"]) {
    for (const auto& target : panel["targets"]) {
      std::string q = target["expr"];
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"$__rate_interval", "8s"}, {"$job_name", ".*"}}) {
        for (size_t at = q.find(from); at != std::string::npos; at = q.find(from)) {
          q.replace(at, from.size(), to);
        }
      }
      EXPECT_GT(prom.count_series(q), 0) << panel["title"] << ": " << q;
      ++queries;
    }
  }
  EXPECT_GE(queries, 8);
}

}  // namespace
}  // namespace xpu_timer::testing
