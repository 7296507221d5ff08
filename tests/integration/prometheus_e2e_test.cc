// End to end with the real Prometheus tools (Debian package `prometheus`):
//  - promtool accepts a live sim job's /metrics and our alert rules;
//  - a Prometheus server on loopback scrapes the supervisor of a sim job and
//    answers PromQL with the values the simulated GPU produced: GEMMs run at
//    exactly XPU_TIMER_SIM_TFLOPS, a collective lasts exactly
//    XPU_TIMER_SIM_LAT_US + bytes / XPU_TIMER_SIM_BUS_GBPS once all ranks
//    arrived (arrival skew between ranks only adds: kept small by a long
//    collective), and histogram_quantile interpolates inside the one
//    histogram bucket that holds every AllReduce;
//  - the same server, loaded with the shipped alert rules, alerts a hang for
//    the missing rank only, and raises nothing when a job simply ends.
// Tests skip (visibly) where promtool/prometheus are not installed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace prometheus_e2e {

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

// The host runs up to 4 steps (about 0.6 s of GPU work) ahead of the GPU:
// an event pair measures from the start event to the end event, so when a
// stream runs dry the host's launch gap joins the operation's time (as on a
// real GPU). On a loaded machine a descheduled host would then make the
// simulated GPU look slower than its model; with a queue it never runs dry
// (2 steps, 0.3 s, were not enough once: a window gauge read 97.3 TFLOPS in a
// ctest run that started every long test at once on 2 cores).
std::vector<std::string> gemm_and_allreduce_job(int steps) {
  return sim_job(kRanks, false,
                 {"--steps", std::to_string(steps), "--gemm", "8192,8192,8192", "--gemms-per-step",
                  "4", "--collective", "allreduce", "--bytes",
                  std::to_string(static_cast<uint64_t>(kAllReduceBytes)), "--sync-lag", "4"});
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
  // Every family we export is present, so promtool lints all of them. The
  // collective families appear with the first completed AllReduce, which may
  // come after ten sampled-out GEMMs (the host runs ahead: --sync-lag).
  const std::vector<std::string> families = {
      "xpu_timer_rank_up", "xpu_timer_queue_depth", "xpu_timer_operation_latency_seconds_bucket",
      "xpu_timer_operations_timed_total", "xpu_timer_operation_gpu_seconds_total",
      "xpu_timer_gemm_flops_total", "xpu_timer_gemm_flops_per_second",
      "xpu_timer_nccl_bytes_total", "xpu_timer_nccl_bus_bytes_total",
      "xpu_timer_nccl_algo_bandwidth_bytes_per_second",
      "xpu_timer_nccl_bus_bandwidth_bytes_per_second", "xpu_timer_job_hung"};
  std::optional<HttpReply> reply;
  const auto missing = [&] {
    std::vector<std::string> out;
    for (const std::string& family : families) {
      if (reply->body.find("\n" + family + "{") == std::string::npos) out.push_back(family);
    }
    return out;
  };
  wait_until(
      [&] {
        reply = http_get(job.port(), "/metrics");
        return reply.has_value() && reply->status == 200 && missing().empty();
      },
      std::chrono::seconds(60));
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200);
  EXPECT_EQ(missing(), std::vector<std::string>{}) << job.log();
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

// Seconds since the epoch of an RFC 3339 time as Prometheus writes it
// ("2026-11-25T10:11:12.123456789Z" or "...+01:00"); 0 when it is not one.
double parse_rfc3339(const std::string& text) {
  std::tm tm{};
  const char* p = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (p == nullptr) return 0;
  double t = static_cast<double>(timegm(&tm));
  if (*p == '.') {
    char* end = nullptr;
    t += std::strtod(p, &end);  // ".123456789"
    p = end;
  }
  if (*p == '+' || *p == '-') {
    int h = 0, m = 0;
    if (std::sscanf(p + 1, "%d:%d", &h, &m) != 2) return 0;
    t -= (*p == '-' ? -1 : 1) * (h * 3600.0 + m * 60.0);
  } else if (*p != 'Z') {
    return 0;
  }
  return t;
}

// One entry of Prometheus' GET /api/v1/alerts.
struct Alert {
  std::string name;
  std::string state;  // "pending" or "firing"
  std::map<std::string, std::string> labels;
  std::string active_at;
  std::string value;
};

std::string alerts_text(const std::vector<Alert>& alerts) {
  std::string out;
  for (const Alert& a : alerts) {
    out += a.name + " " + a.state + " {";
    for (const auto& [k, v] : a.labels) out += k + "=" + v + ",";
    out += "} value " + a.value + " since " + a.active_at + "\n";
  }
  return out.empty() ? "(no alert)\n" : out;
}

// A Prometheus server scraping one supervisor every second and, given a rule
// file, evaluating it every second.
class PrometheusServer {
 public:
  explicit PrometheusServer(int target_port, const std::string& rule_file = "") {
    dir_ = make_temp_dir("prometheus");
    port_ = free_loopback_port();
    std::ofstream config(dir_ + "/prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n";
    if (!rule_file.empty()) config << "rule_files: ['" << rule_file << "']\n";
    config << "scrape_configs:\n  - job_name: xpu_timer\n    static_configs:\n"
           << "      - targets: ['127.0.0.1:" << target_port << "']\n";
    config.close();
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
  // The `data` of a GET /api/v1/... answer; null when there is none.
  nlohmann::json api(const std::string& path) {
    auto r = http_get(port_, "/api/v1/" + path);
    if (!r.has_value() || r->status != 200) return nullptr;
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return nullptr;
    return j["data"];
  }
  // Every pending and firing alert.
  std::vector<Alert> alerts() {
    std::vector<Alert> out;
    const auto data = api("alerts");
    if (!data.is_object()) return out;
    for (const auto& a : data["alerts"]) {
      Alert alert;
      alert.labels = a["labels"].get<std::map<std::string, std::string>>();
      alert.name = alert.labels["alertname"];
      alert.state = a.value("state", "");
      alert.active_at = a.value("activeAt", "");
      alert.value = a.value("value", "");
      out.push_back(std::move(alert));
    }
    return out;
  }
  // When Prometheus last evaluated the rule group `group` (seconds since the
  // epoch; 0 before its first evaluation), and whether every rule of the
  // group evaluated without error (a rule in error never fires).
  double last_evaluation(const std::string& group, bool* healthy = nullptr) {
    const auto data = api("rules");
    if (!data.is_object()) return 0;
    for (const auto& g : data["groups"]) {
      if (g.value("name", "") != group) continue;
      if (healthy != nullptr) {
        *healthy = true;
        for (const auto& r : g["rules"]) {
          if (r.value("health", "") != "ok") {
            *healthy = false;
            ADD_FAILURE() << "rule " << r.value("name", "") << ": " << r.dump();
          }
        }
      }
      return parse_rfc3339(g.value("lastEvaluation", ""));
    }
    return 0;
  }
  // Waits until Prometheus evaluated `group` at `t` (epoch seconds) or later.
  bool wait_evaluated_after(const std::string& group, double t) {
    return wait_until(
        [&] {
          if (last_evaluation(group) >= t) return true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll politely
          return false;
        },
        std::chrono::seconds(60));
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
    return "(rate(xpu_timer_operation_gpu_seconds_total{" + sel +
           "}[8s]) * rate(xpu_timer_operations_total{" + sel +
           "}[8s]) / (rate(xpu_timer_operations_timed_total{" + sel + "}[8s]) > 0))";
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

  // Every query of the Grafana dashboard is valid PromQL, and finds data
  // unless it asks for what this job does not have (steps, Python probes,
  // stragglers); supervisor_metrics_test's DeployQueries checks that every
  // name it asks for is exported.
  const auto dash = nlohmann::json::parse(
      read_file(source_dir() + "/deploy/grafana/xpu_timer_dashboard.json"), nullptr, false);
  ASSERT_FALSE(dash.is_discarded());
  const std::regex absent_here(
      "xpu_timer_(step_|python_|dataloader_|straggler|rank_late|rank_wait)");
  int queries = 0, with_data = 0;
  for (const auto& panel : dash["panels"]) {
    if (!panel.contains("targets")) continue;  // a row
    for (const auto& target : panel["targets"]) {
      std::string q = target["expr"];
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"$__rate_interval", "8s"}, {"$job_name", ".*"}}) {
        for (size_t at = q.find(from); at != std::string::npos; at = q.find(from)) {
          q.replace(at, from.size(), to);
        }
      }
      const int series = prom.count_series(q);
      EXPECT_GE(series, 0) << panel["title"] << ": " << q;
      if (!std::regex_search(q, absent_here)) {
        EXPECT_GT(series, 0) << panel["title"] << ": " << q;
        ++with_data;
      }
      ++queries;
    }
  }
  EXPECT_GE(queries, 20);
  EXPECT_GE(with_data, 10);
}

// The alert tests load the shipped rules with every `for:` shortened to
// kForS seconds, so that an alert fires within seconds instead of minutes.
// ONLY the `for:` values differ from deploy/prometheus/xpu_timer_alerts.yml:
// shortened_rules() checks that every other byte is the same.
constexpr int kForS = 3;
constexpr const char* kAlertGroup = "xpu_timer_alerts";

// Lines of `text` split at '\n'; joining them with '\n' gives `text` back.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines(1);
  for (char c : text) {
    if (c == '\n') {
      lines.emplace_back();
    } else {
      lines.back().push_back(c);
    }
  }
  return lines;
}

std::string shortened_rules() {
  const std::string original = read_file(source_dir() + "/deploy/prometheus/xpu_timer_alerts.yml");
  const std::regex for_line(R"(^(\s*)for: (\S+)$)");
  const std::vector<std::string> lines = split_lines(original);
  std::string copy;
  int shortened = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, for_line)) {
      copy += m[1].str() + "for: " + std::to_string(kForS) + "s";
      ++shortened;
    } else {
      copy += lines[i];
    }
    if (i + 1 < lines.size()) copy += '\n';
  }
  // The check: line for line, the copy is the original but for `for:` values.
  const std::vector<std::string> copied = split_lines(copy);
  EXPECT_EQ(copied.size(), lines.size());
  for (size_t i = 0; i < std::min(lines.size(), copied.size()); ++i) {
    if (copied[i] == lines[i]) continue;
    std::smatch a, b;
    EXPECT_TRUE(std::regex_match(lines[i], a, for_line) && std::regex_match(copied[i], b, for_line) &&
                a[1] == b[1])
        << "line " << i + 1 << " differs in more than its for: value:\n"
        << lines[i] << "\n"
        << copied[i];
  }
  EXPECT_GE(shortened, 4) << "the rules have fewer for: clauses than the test expects";
  const std::string path = make_temp_dir("rules") + "/xpu_timer_alerts.yml";
  std::ofstream(path) << copy;
  return path;
}

std::set<std::string> ranks_of(const std::map<std::string, double>& series) {
  std::set<std::string> out;
  for (const auto& [rank, value] : series) out.insert(rank);
  return out;
}

const Alert* find_alert(const std::vector<Alert>& alerts, const std::string& name) {
  for (const Alert& a : alerts) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool is_firing(const std::vector<Alert>& alerts, const std::string& name) {
  const Alert* a = find_alert(alerts, name);
  return a != nullptr && a->state == "firing";
}

// Polls Prometheus' alerts until `pred` holds on them.
bool wait_alerts(PrometheusServer& prom, std::vector<Alert>* alerts,
                 const std::function<bool(const std::vector<Alert>&)>& pred) {
  return wait_until(
      [&] {
        *alerts = prom.alerts();
        if (pred(*alerts)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll politely
        return false;
      },
      std::chrono::seconds(60));
}

// A real Prometheus with the shipped rules watching a 4-rank job in which
// rank 2 stops in host code before a collective: one alert for the job, one
// naming rank 2, none naming the ranks that wait for it, and each fires once.
TEST(PrometheusE2E, AHangAlertsTheMissingRankOnly) {
  if (access(kPrometheus, X_OK) != 0)
    GTEST_SKIP() << "prometheus not installed (apt-get install prometheus)";
  const std::string rules = shortened_rules();
  SupervisedJob job("prom-hang", {"--hang-timeout", "2"},
                    sim_job(kRanks, false,
                            {"--steps", "100000", "--step-ms", "20", "--bytes", "65536",
                             "--hang-rank", "2", "--hang-step", "5"}),
                    {"XPU_TIMER_JOB_NAME=prom-hang"});
  ASSERT_GT(job.port(), 0) << job.log();
  PrometheusServer prom(job.port(), rules);
  ASSERT_TRUE(prom.wait_ready()) << prom.log();

  std::vector<Alert> alerts;
  ASSERT_TRUE(wait_alerts(prom, &alerts, [](const std::vector<Alert>& a) {
    return is_firing(a, "XpuTimerRankMissing") && is_firing(a, "XpuTimerJobHang");
  })) << alerts_text(alerts) << job.log() << prom.log();
  const std::vector<Alert> first = alerts;
  // Long enough for any other rule to go from pending to firing: kForS, a
  // scrape and an evaluation after the hang alerts fired.
  const double fired_at = prom.last_evaluation(kAlertGroup);
  ASSERT_TRUE(prom.wait_evaluated_after(kAlertGroup, fired_at + kForS + 2)) << prom.log();
  bool healthy = false;
  prom.last_evaluation(kAlertGroup, &healthy);
  EXPECT_TRUE(healthy);
  alerts = prom.alerts();

  // What Prometheus scraped has ranks to blame wrongly: 0, 1 and 3 wait.
  EXPECT_EQ(ranks_of(prom.query("xpu_timer_rank_state{state=\"stuck\"} == 1")),
            (std::set<std::string>{"0", "1", "3"}));
  EXPECT_EQ(ranks_of(prom.query("xpu_timer_rank_state{state=\"missing\"} == 1")),
            (std::set<std::string>{"2"}));

  // Exactly two alerts, both firing since they were first seen (once per
  // incident), none naming a waiting rank.
  std::map<std::string, int> count;
  for (const Alert& a : alerts) {
    ++count[a.name];
    EXPECT_EQ(a.state, "firing") << a.name;
    if (a.labels.count("rank") != 0) {
      EXPECT_EQ(a.labels.at("rank"), "2") << a.name << " names a rank that waits";
    }
    const Alert* before = find_alert(first, a.name);
    if (before != nullptr) {
      EXPECT_EQ(a.active_at, before->active_at) << a.name << " fired again";
    }
  }
  EXPECT_EQ(count, (std::map<std::string, int>{{"XpuTimerJobHang", 1}, {"XpuTimerRankMissing", 1}}))
      << alerts_text(alerts);
  for (const char* must_not : {"XpuTimerRankCrashed", "XpuTimerSupervisorDown", "XpuTimerRankDown"}) {
    EXPECT_EQ(count.count(must_not), 0u) << must_not << "\n" << alerts_text(alerts);
  }
  if (const Alert* hang = find_alert(alerts, "XpuTimerJobHang")) {
    EXPECT_EQ(hang->labels, (std::map<std::string, std::string>{{"alertname", "XpuTimerJobHang"},
                                                                 {"job_name", "prom-hang"},
                                                                 {"severity", "critical"}}));
    EXPECT_EQ(std::strtod(hang->value.c_str(), nullptr), 3.0) << "ranks that wait";
  }
  if (const Alert* missing = find_alert(alerts, "XpuTimerRankMissing")) {
    EXPECT_EQ(missing->labels.at("job_name"), "prom-hang");
    EXPECT_EQ(missing->labels.at("state"), "missing");
  }

  // The control: the same rules do alert a supervisor that stops answering
  // while its job runs (SIGSTOP: its scrapes time out).
  ASSERT_TRUE(job.child().signal(SIGSTOP));
  const bool down_fired = wait_alerts(prom, &alerts, [](const std::vector<Alert>& a) {
    return is_firing(a, "XpuTimerSupervisorDown");
  });
  job.child().signal(SIGCONT);
  ASSERT_TRUE(down_fired) << alerts_text(alerts) << prom.log();
  EXPECT_EQ(find_alert(alerts, "XpuTimerSupervisorDown")->labels.at("instance"),
            "127.0.0.1:" + std::to_string(job.port()));
}

// A job that ends by itself: its supervisor answers /metrics with
// xpu_timer_job_running 0 for --metrics-linger, then exits with the job's
// status; Prometheus, having evaluated the rules past their for: with the
// target down, has no alert at all, pending or firing.
TEST(PrometheusE2E, AJobThatEndsRaisesNoDownAlert) {
  if (access(kPrometheus, X_OK) != 0)
    GTEST_SKIP() << "prometheus not installed (apt-get install prometheus)";
  const std::string rules = shortened_rules();
  // The job waits for the file `go` (so that Prometheus scrapes it while it
  // runs), then runs a short sim job that ends normally. Its GEMMs last 11 ms
  // each, so that every rank reaches the same FLOP/s (XpuTimerSlowRank, whose
  // for: is shortened too, has no reason to fire).
  const std::string go = make_temp_dir("prom-end-go") + "/go";
  std::string script = "until [ -e '" + go + "' ]; do sleep 0.05; done; exec";
  for (const std::string& arg :
       sim_job(kRanks, false,
               {"--steps", "60", "--gemm", "8192,8192,8192", "--gemms-per-step", "4", "--bytes",
                "65536"})) {
    script += " '" + arg + "'";
  }
  SupervisedJob job("prom-end", {"--metrics-linger", "10"}, {"/bin/sh", "-c", script},
                    {"XPU_TIMER_SIM_TFLOPS=100", "XPU_TIMER_JOB_NAME=prom-end"});
  ASSERT_GT(job.port(), 0) << job.log();
  PrometheusServer prom(job.port(), rules);
  ASSERT_TRUE(prom.wait_ready()) << prom.log();
  ASSERT_TRUE(wait_until(
      [&] {
        const auto running = prom.query("xpu_timer_job_running");
        if (running.count("") == 1 && running.at("") == 1) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll politely
        return false;
      },
      std::chrono::seconds(60)))
      << prom.log();

  std::ofstream(go).close();
  const auto status = job.child().wait_for(std::chrono::seconds(90));
  ASSERT_TRUE(status.has_value()) << job.log();
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << job.log();
  EXPECT_NE(job.log().find("/metrics answers xpu_timer_job_running 0 for 10 s more"),
            std::string::npos)
      << job.log();
  // Prometheus saw the end before the target went down.
  const auto last = prom.query("last_over_time(xpu_timer_job_running[1h])");
  ASSERT_EQ(last.count(""), 1u) << prom.log();
  EXPECT_EQ(last.at(""), 0);

  // The target is down; the rules are then evaluated past their for:.
  double down_at = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto up = prom.query("up{job=\"xpu_timer\"}");
        if (up.count("") == 1 && up.at("") == 0) {
          down_at = prom.query("timestamp(up{job=\"xpu_timer\"})")[""];
          return down_at > 0;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll politely
        return false;
      },
      std::chrono::seconds(60)))
      << prom.log();
  ASSERT_TRUE(prom.wait_evaluated_after(kAlertGroup, down_at + kForS + 2)) << prom.log();
  bool healthy = false;
  prom.last_evaluation(kAlertGroup, &healthy);
  EXPECT_TRUE(healthy);
  // Down over the whole for: window: the rule had every chance to fire.
  EXPECT_EQ(prom.query("max_over_time(up{job=\"xpu_timer\"}[" + std::to_string(kForS + 1) + "s])"),
            (std::map<std::string, double>{{"", 0}}));
  const std::vector<Alert> alerts = prom.alerts();
  EXPECT_TRUE(alerts.empty()) << alerts_text(alerts);
}

}  // namespace prometheus_e2e
}  // namespace xpu_timer::testing
