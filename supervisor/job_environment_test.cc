#include "supervisor/job_environment.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>

namespace xpu_timer::supervisor {
namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(JobEnvironment, PrependsTheLibraryAndSetsTheSocket) {
  const WatchSettings w{"/opt/x/lib/libxpu_timer_inject.so", "/dev/shm/r/s.sock", "/dev/shm/r"};
  const auto env = build_job_environment(
      {"PATH=/bin", "LD_PRELOAD=/usr/lib/libjemalloc.so", "XPU_TIMER_SOCKET=/stale",
       "XPU_TIMER_SUPERVISOR_PID=1"},
      w);
  EXPECT_TRUE(has(env, "PATH=/bin"));
  EXPECT_TRUE(has(env, "LD_PRELOAD=/opt/x/lib/libxpu_timer_inject.so:/usr/lib/libjemalloc.so"));
  EXPECT_TRUE(has(env, "XPU_TIMER_SOCKET=/dev/shm/r/s.sock"));
  EXPECT_TRUE(has(env, "XPU_TIMER_RUN_DIR=/dev/shm/r"));
  EXPECT_FALSE(has(env, "XPU_TIMER_SOCKET=/stale"));
  EXPECT_TRUE(has(env, "NCCL_PROFILER_PLUGIN=/opt/x/lib/libxpu_timer_inject.so"));
  // Our pid, for the ranks' PR_SET_PTRACER; an inherited one is replaced.
  EXPECT_TRUE(has(env, "XPU_TIMER_SUPERVISOR_PID=" + std::to_string(getpid())));
  EXPECT_FALSE(has(env, "XPU_TIMER_SUPERVISOR_PID=1"));
  EXPECT_EQ(env.size(), 6u);
}

TEST(JobEnvironment, KeepsTheUsersOwnNcclProfilerPlugin) {
  const WatchSettings w{"/l/inject.so", "/s", "/r"};
  const auto env = build_job_environment({"NCCL_PROFILER_PLUGIN=/their/plugin.so"}, w);
  EXPECT_TRUE(has(env, "NCCL_PROFILER_PLUGIN=/their/plugin.so"));
  EXPECT_FALSE(has(env, "NCCL_PROFILER_PLUGIN=/l/inject.so"));
}

TEST(JobEnvironment, DoesNotPreloadTwice) {
  const WatchSettings w{"/l/inject.so", "/s", "/r"};
  const auto env = build_job_environment({"LD_PRELOAD=/a.so /l/inject.so"}, w);
  EXPECT_TRUE(has(env, "LD_PRELOAD=/a.so /l/inject.so"));
}

TEST(JobEnvironment, UnwatchedLeavesTheUsersEnvironment) {
  const auto env = build_job_environment({"A=1", "LD_PRELOAD=/a.so"}, WatchSettings{});
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", "LD_PRELOAD=/a.so"}));
}

}  // namespace
}  // namespace xpu_timer::supervisor
