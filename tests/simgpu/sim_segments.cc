#include "tests/simgpu/sim_segments.h"

#include <filesystem>

#include "tests/harness/child_process.h"

namespace xpu_timer::simgpu::testing {
namespace {

// The sim names a job's segments /dev/shm/xpu_sim_<job>_* (rendezvous.cc).
std::string segment_prefix(const std::string& job_id) { return "xpu_sim_" + job_id + "_"; }

}  // namespace

std::string unique_job_id() { return xpu_timer::testing::unique_name("simgpu-test"); }

void remove_segments(const std::string& job_id) {
  const std::string prefix = segment_prefix(job_id);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

int count_segments(const std::string& job_id) {
  const std::string prefix = segment_prefix(job_id);
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

}  // namespace xpu_timer::simgpu::testing
