// The shipped Grafana dashboard and Prometheus rules (deploy/) query only
// metric names that /metrics exports: a renamed or per-node-only family
// would otherwise leave a panel or an alert silently empty.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "supervisor/metrics/metrics_exporter.h"
#include "supervisor/metrics/straggler_metrics.h"
#include "supervisor/metrics/transfer_metrics.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kNow = 1000ull * 1000000000ull;

std::string read_source(const std::string& path) {
  std::ifstream in(std::string(XPU_TIMER_SOURCE_DIR) + "/" + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every sample name of an exposition (histograms with their suffixes).
std::set<std::string> exported_names(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') names.insert(line.substr(0, line.find('{')));
  }
  return names;
}

// A scrape with every family present: a Python rank with GC and DataLoader
// probes, measured steps, NVTX ranges, a GEMM and an AllReduce key with
// their rate gauges, a mismatch, a straggler and a measured link transfer.
std::set<std::string> every_exported_name(bool per_rank_histograms) {
  auto page = std::make_unique<proto::StatusPage>();
  page->nmetrics = 2;
  page->metrics[0].name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  page->metrics[0].count = 1;
  page->metrics[0].nchannels = 2;
  page->metrics[0].last_update_ns = kNow;
  page->metrics[1].name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  page->metrics[1].count = 1;
  page->metrics[1].last_update_ns = kNow;
  for (int i = 0; i < 2; ++i) {  // timed: the rate gauges (bandwidth, FLOP/s) too
    page->metrics[i].sum_ns = 1000;
    page->metrics[i].sum_bytes = page->metrics[i].sum_flops = 1 << 20;
  }
  page->python.probes = proto::kPythonProbeGc | proto::kPythonProbeDataLoader;
  page->nranges = 2;
  page->ranges[1].count = 1;
  page->steps.steps = 2;
  page->steps.measured = 1;
  page->steps.last_window_ns = 10;
  MetricsConfig config;
  config.job_name = "j";
  config.per_rank_histograms = per_rank_histograms;
  RateWindow rates(30ull * 1000000000ull);
  MetricsWriter w(config, &rates, kNow);
  RankMetricsInput in;
  in.up = true;
  in.page = page.get();
  w.add_rank(in);
  SlowReport slow;
  slow.ranks.push_back(RankLateness{});
  slow.stragglers.push_back(Straggler{});
  TransferReport links;
  links.series.push_back(TransferSeries{TransferKey{}, 1, 1e11});
  links.times.push_back(RankCommTime{});
  return exported_names(w.finish(false, true, 1) + straggler_metrics_text(slow, "j") +
                        transfer_metrics_text(links, "j"));
}

// Names of the form xpu_timer_... in a PromQL expression (recorded series
// are xpu_timer:...: not exported, so not matched).
std::set<std::string> queried_names(const std::string& promql) {
  std::set<std::string> out;
  const std::regex name(R"(\bxpu_timer_[a-z0-9_]+)");
  for (std::sregex_iterator it(promql.begin(), promql.end(), name), end; it != end; ++it) {
    out.insert(it->str());
  }
  return out;
}

// The `expr:` of every rule: the key's line and the lines indented deeper.
std::vector<std::string> rule_expressions(const std::string& yaml) {
  std::vector<std::string> out;
  std::istringstream in(yaml);
  std::string line;
  size_t indent = std::string::npos;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (indent != std::string::npos && first > indent) {
      out.back() += "\n" + line;
      continue;
    }
    indent = std::string::npos;
    if (line.compare(first, 5, "expr:") == 0) {
      indent = first;
      out.push_back(line.substr(first + 5));
    }
  }
  return out;
}

void expect_exported(const std::string& where, const std::string& promql) {
  for (bool per_rank : {false, true}) {
    const std::set<std::string> exported = every_exported_name(per_rank);
    for (const std::string& name : queried_names(promql)) {
      EXPECT_EQ(exported.count(name), 1u)
          << where << " queries " << name << ", which /metrics does not export"
          << (per_rank ? " with --metrics-histograms rank" : "") << ":\n"
          << promql;
    }
  }
}

TEST(DeployQueries, EveryDashboardQueryNamesExportedMetrics) {
  const auto dash = nlohmann::json::parse(read_source("deploy/grafana/xpu_timer_dashboard.json"),
                                          nullptr, false);
  ASSERT_FALSE(dash.is_discarded()) << "the dashboard is not valid JSON";
  int queries = 0;
  for (const auto& panel : dash.at("panels")) {
    if (!panel.contains("targets")) continue;  // a row
    for (const auto& target : panel.at("targets")) {
      expect_exported(panel.value("title", "?"), target.at("expr").get<std::string>());
      ++queries;
    }
  }
  EXPECT_GE(queries, 20);
}

// The link's bandwidth beside the one of GPU time (which includes the wait
// for the last member) in one panel, and each rank's wait share from the
// two counters.
TEST(DeployQueries, DashboardShowsTheTransferBandwidthBesideTheGpuTimeOneAndTheWaitShare) {
  const auto dash =
      nlohmann::json::parse(read_source("deploy/grafana/xpu_timer_dashboard.json"), nullptr, false);
  ASSERT_FALSE(dash.is_discarded());
  bool both = false, share = false;
  for (const auto& panel : dash.at("panels")) {
    if (!panel.contains("targets")) continue;
    std::set<std::string> names;
    for (const auto& target : panel.at("targets")) {
      for (const std::string& n : queried_names(target.at("expr").get<std::string>())) {
        names.insert(n);
      }
    }
    both = both || (names.count("xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second") == 1 &&
                    names.count("xpu_timer_nccl_bus_bandwidth_bytes_per_second") == 1);
    share = share || (names.count("xpu_timer_nccl_wait_seconds_total") == 1 &&
                      names.count("xpu_timer_nccl_transfer_seconds_total") == 1 &&
                      panel.at("fieldConfig").at("defaults").value("unit", "") == "percentunit");
  }
  EXPECT_TRUE(both) << "no panel shows both bus bandwidths";
  EXPECT_TRUE(share) << "no panel shows the wait share";
}

TEST(DeployQueries, EveryRuleNamesExportedMetrics) {
  const std::vector<std::string> exprs =
      rule_expressions(read_source("deploy/prometheus/xpu_timer_alerts.yml"));
  EXPECT_GE(exprs.size(), 13u);
  for (const std::string& e : exprs) expect_exported("deploy/prometheus/xpu_timer_alerts.yml", e);
}

// The check can fail: a name we do not export is reported.
TEST(DeployQueries, AnUnknownNameIsNotExported) {
  EXPECT_EQ(every_exported_name(false).count("xpu_timer_operation_latency_seconds_sum"), 1u);
  EXPECT_EQ(every_exported_name(false).count("xpu_timer_no_such_family"), 0u);
  EXPECT_EQ(queried_names("rate(xpu_timer_a_total[5m]) / xpu_timer:b:rate5m"),
            (std::set<std::string>{"xpu_timer_a_total"}));
  EXPECT_EQ(rule_expressions("- alert: A\n  expr: |\n    x\n      y\n  for: 1m\n"),
            (std::vector<std::string>{" |\n    x\n      y"}));
}

}  // namespace
}  // namespace xpu_timer::supervisor
