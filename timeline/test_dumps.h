// Test fixtures for timeline/: a temporary folder, and the flight-recorder
// dumps of a small job written with the real writer (write_ring_image), so
// that the tests read exactly what the supervisor writes.
//
// The job: `world` ranks, each with a compute stream (GEMMs) and a comm
// stream (AllReduce on one communicator). Step s = 1, 2, ... starts at
// s ms after the rank's base time (+ rank us of skew) and holds a timed GEMM
// (launch +0, GPU +10 us .. +10 us + gemm_ns), a sampled-out GEMM (launch
// +5 us, without its device, as the hooks publish it) and an AllReduce #s
// (launch +20 us, ready +110 us, GPU +120 us .. +120 us + allreduce_ns).
// At step `hang_seq` every rank but `missing_rank` launches AllReduce
// #hang_seq, which never completes (state running); `missing_rank` stops
// before it.
#pragma once

#include <cstdint>
#include <string>

#include "common/recorder_ring.h"

namespace xpu_timer::timeline::testing {

constexpr uint64_t kComm = 0x06543c4e36ee6c61ull;
constexpr uint64_t kComputeStream = 0x7f00a0001000ull;
constexpr uint64_t kCommStream = 0x7f00a0002000ull;
constexpr uint64_t kMs = 1000000, kUs = 1000, kSec = 1000000000;

struct JobSpec {
  int world = 4;
  int missing_rank = 2;  // -1: nobody missing, nothing pending
  uint64_t hang_seq = 6;
  uint64_t gemm_ns = 100 * kUs;
  uint64_t allreduce_ns = 200 * kUs;
  uint64_t allreduce_bytes = 64ull << 20;
  uint64_t mono_base = 1000 * kSec;  // CLOCK_MONOTONIC at ring creation
  uint64_t realtime_base = 1700000000 * kSec;
  double detected_after_s = 5.5;       // hang.json's detected_at, after realtime_base
  int first_rank = 0, last_rank = -1;  // the ranks written (-1: world - 1)
};

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `bytes` to path()/name; returns the full path.
  std::string write(const std::string& name, const std::string& bytes) const;
  std::string subdir(const std::string& name) const;
  static std::string read(const std::string& path);

 private:
  std::string path_;
};

recorder::RingSnapshot rank_snapshot(const JobSpec& spec, int rank);
// The supervisor's hang.json for the job (ranks stuck in AllReduce #hang_seq,
// missing_rank behind with last completed #hang_seq - 1).
std::string hang_json(const JobSpec& spec);
// Writes every rank's RRRRR-WWWWW.timeline (and hang.json when asked).
void write_job(const std::string& dir, const JobSpec& spec, bool with_hang_json);
// One rank's dump image as bytes (to corrupt in tests).
std::string image_bytes(const JobSpec& spec, int rank);

}  // namespace xpu_timer::timeline::testing
