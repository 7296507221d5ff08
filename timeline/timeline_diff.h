// `--diff A B`: what got slower between two timelines. Operations are grouped
// by kind and shape (op name, dtype, and bytes for NCCL and copies or
// m/n/k/batch for GEMMs); each side gets its calls and mean GPU latency (of
// the timed calls: sampled-out ones have none), both per rank and per unit
// of work, and the rows are sorted by how much the time spent per unit,
// calls per unit x mean, changed.
//
// The unit is one training step when every rank of both sides recorded steps
// (kStep host records, docs/architecture.md "NVTX ranges and steps"): only
// operations launched within a rank's recorded steps count, so the partial
// steps at the edges of a ring's window do not skew the numbers. Otherwise it
// is one second of each rank's dump (first launch to last recorded time).
// Per rank, so that a whole dump can be compared with one rank of another
// ("DIR:RANK").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "timeline/dump_loader.h"

namespace xpu_timer::timeline {

struct DiffStats {
  uint64_t calls = 0;  // launched (not failed), over all ranks of the side
  uint64_t timed = 0;  // of which with GPU times
  double timed_ns = 0;
  double calls_per_rank = 0;
  double calls_per_unit = 0;  // per rank and step (or second)
  double mean_ns() const { return timed > 0 ? timed_ns / static_cast<double>(timed) : 0; }
  // Time spent per rank: calls per rank x mean latency (0 without timing).
  double total_ns() const { return calls_per_rank * mean_ns(); }
  // Time spent per rank and unit (step or second).
  double unit_ns() const { return calls_per_unit * mean_ns(); }
};

struct DiffRow {
  std::string op, dtype, shape;
  DiffStats a, b;
  // The change of time spent per unit: what the rows are sorted by.
  double change_ns() const { return b.unit_ns() - a.unit_ns(); }
  // B's mean latency over A's; 0 when either side has no timed call.
  double ratio() const {
    return a.mean_ns() > 0 && b.mean_ns() > 0 ? b.mean_ns() / a.mean_ns() : 0;
  }
};

struct TimelineDiff {
  std::string a_source, b_source;
  size_t a_ranks = 0, b_ranks = 0;
  bool per_step = false;  // the unit: a step, else a second
  double a_units = 0;     // steps (or seconds) per rank of A
  double b_units = 0;
  std::vector<DiffRow> rows;  // by |change_ns()|, largest first
  const char* unit() const { return per_step ? "step" : "s"; }
};

TimelineDiff diff_timelines(const LoadedDumps& a, const std::string& a_source, const LoadedDumps& b,
                            const std::string& b_source);
// The plain-text table printed to stdout.
std::string diff_table(const TimelineDiff& d);
nlohmann::json diff_json(const TimelineDiff& d);

}  // namespace xpu_timer::timeline
