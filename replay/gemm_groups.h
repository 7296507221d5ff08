// The GEMMs of a flight-recorder dump, grouped by what decides their speed:
// API, dtype, transposes, m, n, k and batch. Each group counts the calls the
// dump holds and sums the GPU time of those that were timed (a sampled-out
// call has none: docs/architecture.md "The hot path", sampling). Pure: the
// records come from dump_loader, which validated the files; fields are still
// only read, never trusted as sizes here.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "timeline/dump_loader.h"

namespace xpu_timer::replay {

struct GemmKey {
  uint16_t api = 0;      // proto::OpName (kGemmEx ... kLtMatmul)
  uint8_t dtype = 0;     // proto::DType
  uint8_t gemm_ops = 0;  // recorder::gemm_ops_of(transa, transb); 0: not recorded
  uint32_t m = 0, n = 0, k = 0, batch = 0;
  auto tie() const { return std::tie(api, dtype, gemm_ops, m, n, k, batch); }
  bool operator<(const GemmKey& o) const { return tie() < o.tie(); }
  bool operator==(const GemmKey& o) const { return tie() == o.tie(); }
  double flops() const { return 2.0 * batch * static_cast<double>(m) * n * k; }
};

struct GemmGroup {
  GemmKey key;
  uint64_t calls = 0;     // launched (not failed), over every rank of the dump
  uint64_t timed = 0;     // of which with a GPU time
  uint64_t timed_ns = 0;  // their GPU time, summed
  // The median GPU time of the timed calls (0: none): what the replay's
  // median is compared with. A call that the stream started while idle also
  // holds the host's gap between our start event and the kernel's launch
  // (a descheduled thread: milliseconds), which a mean would spread over
  // every call and a median leaves out.
  uint64_t median_ns = 0;
  double job_ns_per_call() const { return static_cast<double>(median_ns); }
  // Time in the job over all calls: calls x the timed calls' mean (the sum
  // itself when every call was timed).
  double job_total_ns() const {
    return timed > 0 ? static_cast<double>(calls) * static_cast<double>(timed_ns) /
                           static_cast<double>(timed)
                     : 0;
  }
};

// Every GEMM group of the dump, by job_total_ns() (largest first; ties, and
// groups without a timed call, in key order).
std::vector<GemmGroup> group_gemms(const timeline::LoadedDumps& dumps);

// "N" / "T" / "C", or "?" when the record does not say (op -1).
const char* op_letter(int op);
// "GemmEx bf16 NT m=4096 n=4096 k=1024 batch=1"
std::string key_label(const GemmKey& k);

}  // namespace xpu_timer::replay
