// The environment the job runs with: the user's, plus LD_PRELOAD of the
// injected library (prepended) and where to find the supervisor. Pure; the
// main thread uses it before the fork.
#pragma once

#include <string>
#include <vector>

namespace xpu_timer::supervisor {

struct WatchSettings {
  std::string inject_lib;  // empty: run the job unwatched (no LD_PRELOAD change)
  std::string socket_path;
  std::string run_dir;
};

// `environ` style "NAME=value" entries in, the job's entries out. Existing
// XPU_TIMER_SOCKET / XPU_TIMER_RUN_DIR are replaced; LD_PRELOAD gets the
// library in front of what the user had (not added twice).
std::vector<std::string> build_job_environment(const std::vector<std::string>& base,
                                               const WatchSettings& watch);

std::vector<std::string> current_environment();

// <dir of /proc/self/exe>/../lib/libxpu_timer_inject.so, where the release
// puts it (XPU_TIMER_INJECT_LIB, supervisor/options.h, names another).
// Returns the path even if it does not exist.
std::string default_inject_lib_path();

}  // namespace xpu_timer::supervisor
