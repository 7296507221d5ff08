// End to end: Python function tracing (XPU_TIMER_HOST_TRACING_FUNC) under each
// installed CPython: exact call counts on /metrics and one slice per call on
// the rank's Python thread track of the timeline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace python_tracing_e2e {

// sim_trainer.py --traced-calls: per step host_work(2) (three nested calls of
// a function of the entry script) and, from step 1 on (sim_host is imported
// at the end of step 0, after the probes were installed: a module imported
// late, picked up at that step's optimizer hook), sim_host.synchronize()
// twice (the second raises), sim_host.Stream().wait_event() and the
// generator sim_host.batches(2) (three runs: to each yield and to the end).
// The DataLoader, named both as the loader and as a traced function, is
// timed once; a name that never resolves is said once per rank.
class PythonTracingE2E : public ::testing::TestWithParam<PythonInterpreter> {};

std::string function_label(const std::string& f) { return "function=\"" + f + "\""; }

TEST_P(PythonTracingE2E, TracedCallsAreCountedExactlyAndDrawnNested) {
  const PythonInterpreter& py = GetParam();
  if (access(py.path, X_OK) != 0) GTEST_SKIP() << py.path << " is not installed";
  constexpr int kSteps = 6;
  const std::vector<std::string> job = python_sim_job(
      2, py.path,
      {"--steps", std::to_string(kSteps), "--gemms-per-step", "1", "--bytes", "4096", "--loader-ms",
       "1", "--traced-calls", "--optimizer-steps", "--await-probes", "--end-sleep-s", "60"});
  SupervisedJob sup(std::string("tracing-") + py.name, {"--hang-timeout", "300"}, job,
                    {"XPU_TIMER_DATALOADER_ITER=__main__:SimLoaderIter",
                     "XPU_TIMER_OPTIMIZER_HOOK=__main__:register_step_hook",
                     "XPU_TIMER_HOST_TRACING_FUNC=host_work, sim_host@synchronize,"
                     "sim_host@Stream@wait_event,sim_host@batches,no_such_function,"
                     "__main__@SimLoaderIter@__next__"});
  ASSERT_GT(sup.port(), 0) << sup.log();
  ASSERT_TRUE(sup.wait_python_loops(2)) << sup.log();
  const std::map<std::string, int> want = {
      {"host_work", 3 * kSteps},
      {"sim_host.synchronize", 2 * (kSteps - 1)},
      {"sim_host.Stream.wait_event", kSteps - 1},
      {"sim_host.batches", py.monitoring ? 3 * (kSteps - 1) : 0},
  };
  const auto [text, ready] = sup.metrics_when([&](const std::string& t) {
    for (int r : {0, 1}) {
      if (value_of(t, "xpu_timer_python_function_calls_total", r,
                   function_label("sim_host.Stream.wait_event")) < kSteps - 1) {
        return false;
      }
    }
    return true;
  });
  ASSERT_TRUE(ready) << text << sup.log();
  for (int r : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    for (const auto& [function, calls] : want) {
      EXPECT_EQ(
          value_of(text, "xpu_timer_python_function_calls_total", r, function_label(function)),
          calls == 0 ? -1 : calls)
          << function;
    }
    EXPECT_EQ(value_of(text, "xpu_timer_dataloader_batches_total", r), kSteps);
    EXPECT_EQ(text.find("SimLoaderIter"), std::string::npos);  // not a function series too
    EXPECT_EQ(text.find("no_such_function"), std::string::npos);
  }
  // The histogram: per node (no rank label), both ranks' calls.
  for (const auto& [function, calls] : want) {
    double count = -1;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("xpu_timer_python_function_seconds_count{host=", 0) == 0 &&
          line.find(function_label(function) + "} ") != std::string::npos) {
        count = std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    EXPECT_EQ(count, calls == 0 ? -1 : 2 * calls) << function;
  }
  // Said once per rank: the name that never resolved; before 3.12, the
  // generator, once its module was imported.
  const std::string log = sup.log();
  const auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("no_such_function (not found yet"), 2) << log;
  EXPECT_EQ(count("sim_host@batches (a generator or coroutine"), py.monitoring ? 0 : 2) << log;

  // The timeline: one slice per call on the rank's Python thread track,
  // host_work's three calls nested at depths 0, 1, 2.
  const auto reply = http_post(sup.port(), "/dump/timeline");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200) << reply->body;
  const auto trace = wait_for_dump_trace(reply->body);
  ASSERT_TRUE(trace.is_object()) << reply->body;
  auto threads = trace_thread_names(trace);                     // (pid, tid) -> track name
  std::map<std::pair<int, std::string>, int> slices;            // (pid, name) -> count
  std::map<std::pair<int, int>, int> depths;                    // (pid, host_work depth) -> count
  std::map<int, std::vector<std::pair<double, double>>> outer;  // pid -> depth-0 host_work spans
  std::vector<nlohmann::json> inner;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "range") continue;
    const int pid = e.at("pid").get<int>();
    const std::string name = e.at("name").get<std::string>();
    ++slices[{pid, name}];
    if (want.count(name) == 0) continue;
    const std::string& track = threads[{pid, e.at("tid").get<int>()}];
    EXPECT_EQ(track.rfind("Python thread ", 0), 0u) << track;
    if (name != "host_work") continue;
    const int depth = e.at("args").at("depth").get<int>();
    ++depths[{pid, depth}];
    const double ts = e.at("ts").get<double>(), dur = e.at("dur").get<double>();
    if (depth == 0) outer[pid].emplace_back(ts, ts + dur);
    if (depth > 0) inner.push_back(e);
  }
  for (int pid : {1, 2}) {  // ranks 0 and 1
    SCOPED_TRACE("pid " + std::to_string(pid));
    for (const auto& [function, calls] : want)
      EXPECT_EQ((slices[{pid, function}]), calls) << function;
    for (int depth : {0, 1, 2}) EXPECT_EQ((depths[{pid, depth}]), kSteps) << depth;
    EXPECT_EQ((slices[{pid, "DataLoader wait"}]), kSteps);
  }
  for (const auto& e : inner) {  // inside an outermost call of the same rank
    const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
    bool nested = false;
    for (const auto& [s, f] : outer[e.at("pid").get<int>()]) nested |= s <= ts && end <= f;
    EXPECT_TRUE(nested) << e.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonTracingE2E, ::testing::ValuesIn(python_interpreters()),
                         [](const ::testing::TestParamInfo<PythonInterpreter>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace python_tracing_e2e
}  // namespace xpu_timer::testing
