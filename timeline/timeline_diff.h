// `--diff A B`: what changed between two timelines. Operations are grouped by
// kind and shape (op name, dtype, and bytes for NCCL and copies or m/n/k/batch
// for GEMMs); each side gets its calls per rank and mean GPU latency (of the
// timed calls: sampled-out ones have none), and the rows are sorted by how
// much the time spent per rank, calls x mean, changed. Per rank, so that a
// whole dump can be compared with one rank of another ("DIR:RANK").
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
  double mean_ns() const { return timed > 0 ? timed_ns / static_cast<double>(timed) : 0; }
  // Time spent per rank: calls per rank x mean latency (0 without timing).
  double total_ns() const { return calls_per_rank * mean_ns(); }
};

struct DiffRow {
  std::string op, dtype, shape;
  DiffStats a, b;
  double change_ns() const { return b.total_ns() - a.total_ns(); }
};

struct TimelineDiff {
  std::string a_source, b_source;
  size_t a_ranks = 0, b_ranks = 0;
  std::vector<DiffRow> rows;  // by |change_ns()|, largest first
};

TimelineDiff diff_timelines(const LoadedDumps& a, const std::string& a_source, const LoadedDumps& b,
                            const std::string& b_source);
// The plain-text table printed to stdout.
std::string diff_table(const TimelineDiff& d);
nlohmann::json diff_json(const TimelineDiff& d);

}  // namespace xpu_timer::timeline
