#include "supervisor/job/job_environment.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/env_names.h"

extern char** environ;

namespace xpu_timer::supervisor {
namespace {

bool has_name(const std::string& entry, const std::string& name) {
  return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
         entry[name.size()] == '=';
}

std::string entry(const char* name, const std::string& value) {
  return std::string(name) + "=" + value;
}

}  // namespace

std::vector<std::string> build_job_environment(const std::vector<std::string>& base,
                                               const WatchSettings& watch) {
  std::vector<std::string> env;
  env.reserve(base.size() + 3);
  std::string preload;
  bool had_preload = false;
  for (const std::string& e : base) {
    if (has_name(e, proto::kEnvSocket) || has_name(e, proto::kEnvRunDir) ||
        has_name(e, proto::kEnvSupervisorPid)) {
      continue;
    }
    if (has_name(e, proto::kEnvPreload)) {
      preload = e.substr(std::strlen(proto::kEnvPreload) + 1);
      had_preload = true;
      continue;
    }
    env.push_back(e);
  }
  if (!watch.inject_lib.empty()) {
    // ld.so splits LD_PRELOAD on spaces and colons.
    bool present = false;
    size_t pos = 0;
    while (pos <= preload.size()) {
      size_t end = preload.find_first_of(": ", pos);
      if (end == std::string::npos) end = preload.size();
      if (preload.compare(pos, end - pos, watch.inject_lib) == 0 &&
          end - pos == watch.inject_lib.size()) {
        present = true;
      }
      pos = end + 1;
    }
    if (!present) preload = preload.empty() ? watch.inject_lib : watch.inject_lib + ":" + preload;
    env.push_back(entry(proto::kEnvPreload, preload));
    env.push_back(entry(proto::kEnvSocket, watch.socket_path));
    env.push_back(entry(proto::kEnvRunDir, watch.run_dir));
    // The ranks name us as their allowed tracer (inject/ptracer_permit.cc), so
    // that our forked stack collectors may attach under Yama ptrace_scope=1.
    env.push_back(entry(proto::kEnvSupervisorPid, std::to_string(::getpid())));
    // NCCL >= 2.23 then names each collective's algorithm and protocol to us
    // (inject/nccl_profiler_plugin.cc). NCCL loads one profiler plugin: a
    // user's own choice wins, and our NCCL labels then read "unknown".
    const bool user_plugin = std::any_of(base.begin(), base.end(), [](const std::string& e) {
      return has_name(e, proto::kEnvNcclProfilerPlugin);
    });
    if (!user_plugin) env.push_back(entry(proto::kEnvNcclProfilerPlugin, watch.inject_lib));
    // NVTX ranges (inject/nvtx_ranges.h). NVTX loads one tool too: a job run
    // under Nsight Systems keeps its own, and we then see no ranges.
    const bool user_nvtx_tool = std::any_of(base.begin(), base.end(), [](const std::string& e) {
      return has_name(e, proto::kEnvNvtxInjection);
    });
    if (!user_nvtx_tool) env.push_back(entry(proto::kEnvNvtxInjection, watch.inject_lib));
  } else if (had_preload) {
    env.push_back(entry(proto::kEnvPreload, preload));
  }
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

std::string default_inject_lib_path() {
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "libxpu_timer_inject.so";
  std::string path(exe, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return dir + "/../lib/libxpu_timer_inject.so";
}

}  // namespace xpu_timer::supervisor
