#include "timeline/timeline_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "timeline/op_describe.h"

namespace xpu_timer::timeline {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // op, dtype, shape

void add_side(const LoadedDumps& d, bool side_b, std::map<Key, DiffRow>* rows) {
  for (const RankTimeline& t : d.ranks) {
    for (const recorder::RecordData& r : t.ring.records) {
      if (r.state == static_cast<uint8_t>(recorder::OpState::kFailed)) continue;
      if (r.kind == static_cast<uint8_t>(proto::OpKind::kRange)) continue;  // GPU work only
      const Key key{op_name(r), dtype_name(r), shape_key(r)};
      DiffRow& row = (*rows)[key];
      DiffStats& s = side_b ? row.b : row.a;
      ++s.calls;
      if (const uint64_t ns = gpu_time_ns(r); ns > 0) {
        ++s.timed;
        s.timed_ns += static_cast<double>(ns);
      }
    }
  }
}

std::string mean_text(const DiffStats& s) {
  if (s.timed == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s.mean_ns() / 1e3);
  return buf;
}

}  // namespace

TimelineDiff diff_timelines(const LoadedDumps& a, const std::string& a_source, const LoadedDumps& b,
                            const std::string& b_source) {
  TimelineDiff d;
  d.a_source = a_source;
  d.b_source = b_source;
  d.a_ranks = a.ranks.size();
  d.b_ranks = b.ranks.size();
  std::map<Key, DiffRow> rows;
  add_side(a, false, &rows);
  add_side(b, true, &rows);
  for (auto& [key, row] : rows) {
    std::tie(row.op, row.dtype, row.shape) = key;
    if (d.a_ranks > 0) row.a.calls_per_rank = static_cast<double>(row.a.calls) / d.a_ranks;
    if (d.b_ranks > 0) row.b.calls_per_rank = static_cast<double>(row.b.calls) / d.b_ranks;
    d.rows.push_back(std::move(row));
  }
  // Stable on the key order for equal changes, so the output is deterministic.
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::fabs(x.change_ns()) > std::fabs(y.change_ns());
  });
  return d;
}

std::string diff_table(const TimelineDiff& d) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "A = %s (%zu rank%s), B = %s (%zu rank%s). Calls and time are per rank; mean\n"
                "is the GPU latency of the timed calls. Sorted by |change|, the change of calls x "
                "mean.\n",
                d.a_source.c_str(), d.a_ranks, d.a_ranks == 1 ? "" : "s", d.b_source.c_str(),
                d.b_ranks, d.b_ranks == 1 ? "" : "s");
  out += line;
  std::snprintf(line, sizeof(line), "%-22s %-9s %-36s %10s %11s %10s %11s %12s\n", "op", "dtype",
                "shape", "A calls", "A mean us", "B calls", "B mean us", "change ms");
  out += line;
  for (const DiffRow& r : d.rows) {
    std::snprintf(line, sizeof(line), "%-22s %-9s %-36s %10.2f %11s %10.2f %11s %+12.3f\n",
                  r.op.c_str(), r.dtype.c_str(), r.shape.c_str(), r.a.calls_per_rank,
                  mean_text(r.a).c_str(), r.b.calls_per_rank, mean_text(r.b).c_str(),
                  r.change_ns() / 1e6);
    out += line;
  }
  if (d.rows.empty()) out += "(no operations on either side)\n";
  return out;
}

nlohmann::json diff_json(const TimelineDiff& d) {
  using nlohmann::json;
  auto side = [](const DiffStats& s) {
    json j = {{"calls", s.calls}, {"timed", s.timed}, {"calls_per_rank", s.calls_per_rank}};
    j["mean_us"] = s.timed > 0 ? json(s.mean_ns() / 1e3) : json(nullptr);
    j["total_us_per_rank"] = s.total_ns() / 1e3;
    return j;
  };
  json rows = json::array();
  for (const DiffRow& r : d.rows) {
    rows.push_back({{"op", r.op},
                    {"dtype", r.dtype},
                    {"shape", r.shape},
                    {"a", side(r.a)},
                    {"b", side(r.b)},
                    {"change_us_per_rank", r.change_ns() / 1e3}});
  }
  return {{"a", {{"source", d.a_source}, {"ranks", d.a_ranks}}},
          {"b", {{"source", d.b_source}, {"ranks", d.b_ranks}}},
          {"rows", std::move(rows)}};
}

}  // namespace xpu_timer::timeline
