#include "inject/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace xpu_timer::inject {
namespace {

// The environment the reader sees: a map instead of the process's.
std::map<std::string, std::string> g_env;

const char* fake_env(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

struct Read {
  InjectSettings settings;
  std::vector<std::string> problems;
};

// `store_bytes` of the text store; its texts live until the next read.
Read read(std::map<std::string, std::string> env, size_t store_bytes = kTextStoreBytes) {
  static char text[kTextStoreBytes];
  g_env = std::move(env);
  TextStore store{text, store_bytes};
  auto problems = std::make_unique<SettingProblems>();
  Read r;
  read_settings(fake_env, &r.settings, &store, problems.get());
  for (int i = 0; i < problems->count; ++i) r.problems.emplace_back(problems->lines[i]);
  return r;
}

TEST(InjectSettings, WithNothingSetEveryDefaultAndNoMessage) {
  const Read r = read({});
  EXPECT_TRUE(r.problems.empty());
  const InjectSettings& s = r.settings;
  EXPECT_FALSE(s.disable);
  EXPECT_FALSE(s.debug);
  EXPECT_STREQ(s.socket, "");
  EXPECT_EQ(s.supervisor_pid, 0);
  EXPECT_EQ(s.sample_per_sec, 10.0);
  EXPECT_EQ(s.recorder_size, 4096);
  EXPECT_EQ(s.crash_wait_ms, 5000);
  EXPECT_EQ(s.poll_interval_ms, 1.0);
  EXPECT_TRUE(s.call_sites);
  EXPECT_STREQ(s.call_site_skip, "/torch/,/deepspeed/comm/");
  EXPECT_TRUE(s.python_probes);
  EXPECT_STREQ(s.dataloader_iter, "torch.utils.data.dataloader:_BaseDataLoaderIter");
  EXPECT_EQ(s.python_monitoring_tool, 4);
  EXPECT_TRUE(s.name_threads);
  EXPECT_STREQ(s.host_tracing_func, "");
}

TEST(InjectSettings, GoodValuesOfEveryKindAreTaken) {
  const Read r = read({{"XPU_TIMER_DISABLE", "1"},
                       {"XPU_TIMER_CALL_SITES", "off"},
                       {"XPU_TIMER_NAME_THREADS", "0"},
                       {"XPU_TIMER_DEBUG_MODE", "TRUE"},
                       {"XPU_TIMER_SAMPLE_PER_SEC", "0"},
                       {"XPU_TIMER_POLL_INTERVAL_MS", "0.25"},
                       {"XPU_TIMER_RECORDER_SIZE", "256"},
                       {"XPU_TIMER_CRASH_WAIT_MS", "60000"},
                       {"XPU_TIMER_SUPERVISOR_PID", "4242"},
                       {"XPU_TIMER_PYTHON_MONITORING_TOOL", "0"},
                       {"XPU_TIMER_SOCKET", "/dev/shm/x/s.sock"},
                       {"XPU_TIMER_DATALOADER_ITER", "__main__:SimLoaderIter"},
                       {"XPU_TIMER_HOST_TRACING_FUNC", "torch@cuda@synchronize,train_step"}});
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  const InjectSettings& s = r.settings;
  EXPECT_TRUE(s.disable);
  EXPECT_FALSE(s.call_sites);
  EXPECT_FALSE(s.name_threads);
  EXPECT_TRUE(s.debug);
  EXPECT_EQ(s.sample_per_sec, 0.0);
  EXPECT_EQ(s.poll_interval_ms, 0.25);
  EXPECT_EQ(s.recorder_size, 256);
  EXPECT_EQ(s.crash_wait_ms, 60000);
  EXPECT_EQ(s.supervisor_pid, 4242);
  EXPECT_EQ(s.python_monitoring_tool, 0);
  EXPECT_STREQ(s.socket, "/dev/shm/x/s.sock");
  EXPECT_STREQ(s.dataloader_iter, "__main__:SimLoaderIter");
  EXPECT_STREQ(s.host_tracing_func, "torch@cuda@synchronize,train_step");
}

// Out of range, junk, a wrong kind of text: the default, and one line that
// names the variable, what it takes, the value and the default.
TEST(InjectSettings, ABadValueKeepsTheDefaultAndSaysSoInOneLine) {
  const struct {
    const char* name;
    const char* value;
    const char* line;
  } cases[] = {
      {"XPU_TIMER_SAMPLE_PER_SEC", "fast",
       "XPU_TIMER_SAMPLE_PER_SEC must be a number >= 0, got 'fast': the default (10) is used"},
      {"XPU_TIMER_SAMPLE_PER_SEC", "-1",
       "XPU_TIMER_SAMPLE_PER_SEC must be a number >= 0, got '-1': the default (10) is used"},
      {"XPU_TIMER_RECORDER_SIZE", "2097152",
       "XPU_TIMER_RECORDER_SIZE must be a whole number 0-1048576, got '2097152': the default "
       "(4096) is used"},
      {"XPU_TIMER_RECORDER_SIZE", "4k",
       "XPU_TIMER_RECORDER_SIZE must be a whole number 0-1048576, got '4k': the default (4096) "
       "is used"},
      {"XPU_TIMER_CRASH_WAIT_MS", "60001",
       "XPU_TIMER_CRASH_WAIT_MS must be a whole number of milliseconds 0-60000, got '60001': the "
       "default (5000) is used"},
      {"XPU_TIMER_POLL_INTERVAL_MS", "0.01",
       "XPU_TIMER_POLL_INTERVAL_MS must be a number of milliseconds 0.05-1000, got '0.01': the "
       "default (1) is used"},
      {"XPU_TIMER_PYTHON_MONITORING_TOOL", "6",
       "XPU_TIMER_PYTHON_MONITORING_TOOL must be a whole number 0-5, got '6': the default (4) is "
       "used"},
      {"XPU_TIMER_SUPERVISOR_PID", "1",
       "XPU_TIMER_SUPERVISOR_PID must be a process id, got '1': the default (none) is used"},
      {"XPU_TIMER_CALL_SITES", "maybe",
       "XPU_TIMER_CALL_SITES must be 1 or 0, got 'maybe': the default (1) is used"},
      {"XPU_TIMER_DATALOADER_ITER", "x'); import os",
       "XPU_TIMER_DATALOADER_ITER must be module:Class, got 'x'); import os': the default "
       "(torch.utils.data.dataloader:_BaseDataLoaderIter) is used"},
  };
  for (const auto& c : cases) {
    const Read r = read({{c.name, c.value}});
    ASSERT_EQ(r.problems.size(), 1u) << c.name << "=" << c.value;
    EXPECT_EQ(r.problems[0], c.line);
    const InjectSettings defaults;
    EXPECT_EQ(r.settings.sample_per_sec, defaults.sample_per_sec);
    EXPECT_EQ(r.settings.recorder_size, defaults.recorder_size);
    EXPECT_EQ(r.settings.crash_wait_ms, defaults.crash_wait_ms);
    EXPECT_EQ(r.settings.poll_interval_ms, defaults.poll_interval_ms);
    EXPECT_EQ(r.settings.python_monitoring_tool, defaults.python_monitoring_tool);
    EXPECT_EQ(r.settings.supervisor_pid, defaults.supervisor_pid);
    EXPECT_EQ(r.settings.call_sites, defaults.call_sites);
    EXPECT_STREQ(r.settings.dataloader_iter, defaults.dataloader_iter);
  }
}

TEST(InjectSettings, EveryBadValueHasItsOwnLine) {
  const Read r = read({{"XPU_TIMER_SAMPLE_PER_SEC", "x"},
                       {"XPU_TIMER_RECORDER_SIZE", "x"},
                       {"XPU_TIMER_CALL_SITES", "x"}});
  EXPECT_EQ(r.problems.size(), 3u);
}

// Empty is unset, as for the supervisor's settings: the default, silently.
// Only the call-site fragments take empty as a value (skip nothing).
TEST(InjectSettings, AnEmptyVariableIsTheDefaultButForTheCallSiteFragments) {
  const Read r = read({{"XPU_TIMER_SAMPLE_PER_SEC", ""},
                       {"XPU_TIMER_CALL_SITES", ""},
                       {"XPU_TIMER_DATALOADER_ITER", ""},
                       {"XPU_TIMER_SOCKET", ""},
                       {"XPU_TIMER_CALL_SITE_SKIP", ""}});
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_EQ(r.settings.sample_per_sec, 10.0);
  EXPECT_TRUE(r.settings.call_sites);
  EXPECT_STREQ(r.settings.dataloader_iter, "torch.utils.data.dataloader:_BaseDataLoaderIter");
  EXPECT_STREQ(r.settings.socket, "");
  EXPECT_STREQ(r.settings.call_site_skip, "");
}

// The message stays one printable line, however long or odd the value.
TEST(InjectSettings, TheMessageShowsAPrintableCutValue) {
  const Read r = read({{"XPU_TIMER_SAMPLE_PER_SEC", "1\n2" + std::string(200, '9')}});
  ASSERT_EQ(r.problems.size(), 1u);
  const std::string& line = r.problems[0];
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("got '1?2999"), std::string::npos) << line;
  EXPECT_NE(line.find("...': the default (10) is used"), std::string::npos) << line;
  EXPECT_LT(line.size(), SettingProblems::kLineBytes);
}

// The texts share one fixed store: one that does not fit keeps its default.
TEST(InjectSettings, ATextBeyondTheStoreKeepsItsDefault) {
  const Read r = read(
      {{"XPU_TIMER_SOCKET", "/s.sock"}, {"XPU_TIMER_HOST_TRACING_FUNC", std::string(100, 'f')}},
      64);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0],
            "XPU_TIMER_HOST_TRACING_FUNC is too long (100 bytes; the text settings share 64): "
            "the default (none) is used");
  EXPECT_STREQ(r.settings.socket, "/s.sock");
  EXPECT_STREQ(r.settings.host_tracing_func, "");
}

TEST(InjectSettings, TheDocsTableHasARowPerVariableWithItsDefault) {
  const std::string md = settings_markdown();
  EXPECT_EQ(md.rfind("| variable | default | value | meaning |\n| --- | --- | --- | --- |\n", 0),
            0u);
  EXPECT_NE(md.find("| `XPU_TIMER_SAMPLE_PER_SEC` | 10 | a number >= 0 | "), std::string::npos)
      << md;
  EXPECT_NE(md.find("| `XPU_TIMER_CALL_SITES` | 1 | 1 or 0 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| `XPU_TIMER_CRASH_DIR` | the working directory | text | "), std::string::npos)
      << md;
}

}  // namespace
}  // namespace xpu_timer::inject
