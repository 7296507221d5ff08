#include "supervisor/job/job_environment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "common/env_names.h"

namespace xpu_timer::supervisor {
namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

std::string entry(const char* name, const std::string& value) {
  return std::string(name) + "=" + value;
}

TEST(JobEnvironment, PrependsTheLibraryAndSetsTheSocket) {
  const WatchSettings w{"/opt/x/lib/libxpu_timer_inject.so", "/dev/shm/r/s.sock", "/dev/shm/r"};
  const auto env = build_job_environment(
      {"PATH=/bin", entry(proto::kEnvPreload, "/usr/lib/libjemalloc.so"),
       entry(proto::kEnvSocket, "/stale"), entry(proto::kEnvSupervisorPid, "1")},
      w);
  EXPECT_TRUE(has(env, "PATH=/bin"));
  EXPECT_TRUE(has(
      env, entry(proto::kEnvPreload, "/opt/x/lib/libxpu_timer_inject.so:/usr/lib/libjemalloc.so")));
  EXPECT_TRUE(has(env, entry(proto::kEnvSocket, "/dev/shm/r/s.sock")));
  EXPECT_TRUE(has(env, entry(proto::kEnvRunDir, "/dev/shm/r")));
  EXPECT_FALSE(has(env, entry(proto::kEnvSocket, "/stale")));
  EXPECT_TRUE(has(env, entry(proto::kEnvNcclProfilerPlugin, "/opt/x/lib/libxpu_timer_inject.so")));
  EXPECT_TRUE(has(env, entry(proto::kEnvNvtxInjection, "/opt/x/lib/libxpu_timer_inject.so")));
  // Our pid, for the ranks' PR_SET_PTRACER; an inherited one is replaced.
  EXPECT_TRUE(has(env, entry(proto::kEnvSupervisorPid, std::to_string(getpid()))));
  EXPECT_FALSE(has(env, entry(proto::kEnvSupervisorPid, "1")));
  EXPECT_EQ(env.size(), 7u);
}

TEST(JobEnvironment, KeepsTheUsersOwnNcclProfilerPlugin) {
  const WatchSettings w{"/l/inject.so", "/s", "/r"};
  const auto env =
      build_job_environment({entry(proto::kEnvNcclProfilerPlugin, "/their/plugin.so")}, w);
  EXPECT_TRUE(has(env, entry(proto::kEnvNcclProfilerPlugin, "/their/plugin.so")));
  EXPECT_FALSE(has(env, entry(proto::kEnvNcclProfilerPlugin, "/l/inject.so")));
}

TEST(JobEnvironment, KeepsTheUsersOwnNvtxTool) {
  const WatchSettings w{"/l/inject.so", "/s", "/r"};
  const auto env = build_job_environment({entry(proto::kEnvNvtxInjection, "/nsys/libinj.so")}, w);
  EXPECT_TRUE(has(env, entry(proto::kEnvNvtxInjection, "/nsys/libinj.so")));
  EXPECT_FALSE(has(env, entry(proto::kEnvNvtxInjection, "/l/inject.so")));
}

TEST(JobEnvironment, DoesNotPreloadTwice) {
  const WatchSettings w{"/l/inject.so", "/s", "/r"};
  const auto env = build_job_environment({entry(proto::kEnvPreload, "/a.so /l/inject.so")}, w);
  EXPECT_TRUE(has(env, entry(proto::kEnvPreload, "/a.so /l/inject.so")));
}

TEST(JobEnvironment, UnwatchedLeavesTheUsersEnvironment) {
  const auto env =
      build_job_environment({"A=1", entry(proto::kEnvPreload, "/a.so")}, WatchSettings{});
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", entry(proto::kEnvPreload, "/a.so")}));
}

}  // namespace
}  // namespace xpu_timer::supervisor
