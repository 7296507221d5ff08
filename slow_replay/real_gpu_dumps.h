// The recordings of real multi-GPU jobs as the tests find them: unpacked by
// the build into XPU_TIMER_REAL_GPU_DIR (tests/data/real-gpu/README.md), one
// folder per recording with its dump folders. Tests only.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace xpu_timer::slow_replay {

// The dump folders of one recording ("h200x4/healthy"), oldest first.
inline std::vector<std::string> real_gpu_dump_dirs(const std::string& recording) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(fs::path(XPU_TIMER_REAL_GPU_DIR) / recording)) {
    if (e.is_directory() && e.path().filename().string().rfind("timeline-", 0) == 0) {
      dirs.push_back(e.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace xpu_timer::slow_replay
