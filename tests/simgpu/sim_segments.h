// The simulated NCCL's shared-memory segments, for tests: a job id of their
// own for each test, and the clean-up of what a killed job left behind in
// /dev/shm. Processes are run with tests/harness/child_process.h.
#pragma once

#include <string>

namespace xpu_timer::simgpu::testing {

// A job id unique to this test process and call ("simgpu-test-<pid>-<n>").
std::string unique_job_id();
// Removes /dev/shm/xpu_sim_<job>_* left by a test.
void remove_segments(const std::string& job_id);
int count_segments(const std::string& job_id);

}  // namespace xpu_timer::simgpu::testing
