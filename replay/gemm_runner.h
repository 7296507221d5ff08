// Runs one GEMM group on the local GPU and times it: the same API, dtype,
// transposes, m, n, k and batch as the job's calls, tight leading dimensions
// (the record has none), operands filled with small random values of the
// dtype (all-zero operands draw less power and run faster than training
// data), one stream. Warm-up calls, then `reps` calls with a CUDA event
// between consecutive ones: each call's time is the difference of two
// events recorded while the stream is busy, so host launch gaps stay out of
// it, and the median of those is the answer. cuBLASLt calls use the first
// algorithm of the heuristic with a 32 MiB workspace, as PyTorch does.
// Threads: one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/cuda_api.h"
#include "replay/gemm_groups.h"

namespace xpu_timer::replay {

struct ReplayOptions {
  std::string lib_dir;  // where to look for the CUDA libraries first ("": the loader's path)
  int device = 0;
  int warmup = 10;
  int reps = 50;
  double max_gib = 8;  // operands of one group at most
};

struct ReplayResult {
  bool ok = false;
  double ns_per_call = 0;  // median over the repetitions
  std::string note;        // why it was not replayed, or how (transposes assumed)
};

class GemmRunner {
 public:
  // Loads the libraries, selects the device, creates the handles, stream and
  // events. nullptr with one line in *error.
  static std::unique_ptr<GemmRunner> create(const ReplayOptions& options, std::string* error);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  ReplayResult run(const GemmKey& key);
  const CudaApi& api() const { return api_; }

 private:
  explicit GemmRunner(const ReplayOptions& o) : options_(o) {}
  ReplayOptions options_;
  CudaApi api_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<cudaEvent_t> events_;
};

// Median of `v` (the mean of the two middle values for an even count); 0 for none.
double median(std::vector<double> v);

}  // namespace xpu_timer::replay
