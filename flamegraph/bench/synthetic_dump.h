// Writes a synthetic dump that looks like a hung PyTorch job: per rank a main
// thread in all_reduce -> ncclAllReduce (the leak rank instead sleeps in
// stuck_in_host_code), plus autograd, NCCL proxy, data-loader and OpenMP
// threads with realistic native/Python/mixed frames. Used by the benchmark
// and by tests that need a big, known dump.
#pragma once

#include <string>
#include <vector>

namespace xpu_timer::flamegraph {

struct SyntheticDumpSpec {
  int world_size = 8;
  int threads_per_rank = 10;       // >= 1; thread 0 is the main thread
  int leak_rank = -1;              // this rank's main thread is in stuck_in_host_code
  std::vector<int> no_file_ranks;  // ranks that get no file at all
};

// Writes through stack::write_stack_file; false with *error (path and errno)
// on a write failure.
bool write_synthetic_dump(const std::string& dir, const SyntheticDumpSpec& spec,
                          std::string* error);

}  // namespace xpu_timer::flamegraph
