// What xpu_timer_gemm_replay prints and writes: per GEMM group, the job's
// time (from the dump's timed calls) beside the time the same GEMM takes on
// this GPU now, and a flag where the job was more than kSlowerThreshold
// slower. Pure: the replay results come in, text and JSON go out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "replay/gemm_groups.h"
#include "replay/gemm_runner.h"

namespace xpu_timer::replay {

// The job ran slower than the replay by more than this fraction: flagged.
constexpr double kSlowerThreshold = 0.15;

struct ReplayRow {
  GemmGroup group;
  ReplayResult now;  // not ok: not replayed (note says why)
  // job per call / replay per call; 0 when either is unknown.
  double slowdown() const {
    const double job = group.job_ns_per_call();
    return now.ok && now.ns_per_call > 0 && job > 0 ? job / now.ns_per_call : 0;
  }
  bool flagged() const { return slowdown() > 1.0 + kSlowerThreshold; }
};

struct ReplayReport {
  std::string source;     // the dump folder
  size_t ranks = 0;       // ranks in the dump
  std::string device;     // "0 (NVIDIA H100 80GB HBM3)", "0"
  std::string libraries;  // the cuBLAS found
  int warmup = 0, reps = 0;
  std::vector<ReplayRow> rows;  // as group_gemms sorted them
};

// TFLOP/s of `flops` done in `ns` (0 when ns is 0).
double tflops(double flops, double ns);
// The table printed to stdout.
std::string report_table(const ReplayReport& r);
nlohmann::json report_json(const ReplayReport& r);

}  // namespace xpu_timer::replay
