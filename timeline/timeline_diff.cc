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

bool is_step(const recorder::RecordData& r) {
  return r.kind == static_cast<uint8_t>(proto::OpKind::kRange) &&
         r.name == static_cast<uint16_t>(proto::OpName::kStep) && r.host_start_ns != 0 &&
         r.host_end_ns > r.host_start_ns;
}

// The window of one rank's work that counts, and how many units it holds.
struct Window {
  uint64_t from = 0, to = UINT64_MAX;
  double units = 0;
};

// Steps: the span of the rank's completed steps (host times). Seconds: first
// launch to the latest time recorded.
Window window_of(const RankTimeline& t, bool per_step) {
  Window w;
  if (per_step) {
    w.from = UINT64_MAX;
    w.to = 0;
    for (const recorder::RecordData& r : t.ring.records) {
      if (!is_step(r)) continue;
      w.from = std::min(w.from, r.host_start_ns);
      w.to = std::max(w.to, r.host_end_ns);
      w.units += 1;
    }
    return w;
  }
  uint64_t first = UINT64_MAX, last = 0;
  for (const recorder::RecordData& r : t.ring.records) {
    if (r.launch_ns != 0) first = std::min(first, r.launch_ns);
    last = std::max({last, r.launch_ns, recorder::span_end_ns(r)});
  }
  if (first != UINT64_MAX && last > first) w.units = static_cast<double>(last - first) / 1e9;
  return w;
}

bool every_rank_has_steps(const LoadedDumps& d) {
  for (const RankTimeline& t : d.ranks) {
    if (std::none_of(t.ring.records.begin(), t.ring.records.end(), is_step)) return false;
  }
  return !d.ranks.empty();
}

// Adds one side; returns its units per rank.
double add_side(const LoadedDumps& d, bool side_b, bool per_step, std::map<Key, DiffRow>* rows,
                std::map<Key, double>* in_window) {
  double units = 0;
  for (const RankTimeline& t : d.ranks) {
    const Window w = window_of(t, per_step);
    units += w.units;
    for (const recorder::RecordData& r : t.ring.records) {
      if (r.state == static_cast<uint8_t>(recorder::OpState::kFailed)) continue;
      if (r.kind == static_cast<uint8_t>(proto::OpKind::kRange)) continue;  // GPU work only
      const Key key{op_name(r), dtype_name(r), shape_key(r)};
      DiffRow& row = (*rows)[key];
      DiffStats& s = side_b ? row.b : row.a;
      ++s.calls;
      if (!per_step || (r.launch_ns >= w.from && r.launch_ns <= w.to)) (*in_window)[key] += 1;
      if (const uint64_t ns = gpu_time_ns(r); ns > 0) {
        ++s.timed;
        s.timed_ns += static_cast<double>(ns);
      }
    }
  }
  return d.ranks.empty() ? 0 : units / static_cast<double>(d.ranks.size());
}

std::string num(double v, bool known, const char* fmt) {
  if (!known) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, v);
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
  d.per_step = every_rank_has_steps(a) && every_rank_has_steps(b);
  std::map<Key, DiffRow> rows;
  std::map<Key, double> a_window, b_window;
  d.a_units = add_side(a, false, d.per_step, &rows, &a_window);
  d.b_units = add_side(b, true, d.per_step, &rows, &b_window);
  for (auto& [key, row] : rows) {
    std::tie(row.op, row.dtype, row.shape) = key;
    if (d.a_ranks > 0) row.a.calls_per_rank = static_cast<double>(row.a.calls) / d.a_ranks;
    if (d.b_ranks > 0) row.b.calls_per_rank = static_cast<double>(row.b.calls) / d.b_ranks;
    if (d.a_units > 0) row.a.calls_per_unit = a_window[key] / d.a_ranks / d.a_units;
    if (d.b_units > 0) row.b.calls_per_unit = b_window[key] / d.b_ranks / d.b_units;
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
  char line[640];
  const char* u = d.unit();
  std::snprintf(line, sizeof(line),
                "A = %s (%zu rank%s, %.6g %s per rank), B = %s (%zu rank%s, %.6g %s per rank).\n"
                "Per rank and %s: calls, and time = calls x mean GPU latency of the timed calls.\n"
                "ratio = B mean / A mean. Sorted by |change| of time per %s.\n",
                d.a_source.c_str(), d.a_ranks, d.a_ranks == 1 ? "" : "s", d.a_units,
                d.per_step ? "steps" : "s", d.b_source.c_str(), d.b_ranks,
                d.b_ranks == 1 ? "" : "s", d.b_units, d.per_step ? "steps" : "s",
                d.per_step ? "step" : "second of the dump", u);
  out += line;
  std::snprintf(line, sizeof(line), "%-22s %-9s %-30s %9s %10s %10s %9s %10s %10s %11s %7s\n", "op",
                "dtype", "shape", "A calls", "A mean us", "A ms", "B calls", "B mean us", "B ms",
                "change ms", "ratio");
  out += line;
  for (const DiffRow& r : d.rows) {
    std::snprintf(
        line, sizeof(line), "%-22s %-9s %-30s %9.2f %10s %10.3f %9.2f %10s %10.3f %+11.3f %7s\n",
        r.op.c_str(), r.dtype.c_str(), r.shape.c_str(), r.a.calls_per_unit,
        num(r.a.mean_ns() / 1e3, r.a.timed > 0, "%.1f").c_str(), r.a.unit_ns() / 1e6,
        r.b.calls_per_unit, num(r.b.mean_ns() / 1e3, r.b.timed > 0, "%.1f").c_str(),
        r.b.unit_ns() / 1e6, r.change_ns() / 1e6, num(r.ratio(), r.ratio() > 0, "%.2f").c_str());
    out += line;
  }
  if (d.rows.empty()) out += "(no operations on either side)\n";
  return out;
}

nlohmann::json diff_json(const TimelineDiff& d) {
  using nlohmann::json;
  auto side = [](const DiffStats& s) {
    json j = {{"calls", s.calls},
              {"timed", s.timed},
              {"calls_per_rank", s.calls_per_rank},
              {"calls_per_unit", s.calls_per_unit}};
    j["mean_us"] = s.timed > 0 ? json(s.mean_ns() / 1e3) : json(nullptr);
    j["total_us_per_rank"] = s.total_ns() / 1e3;
    j["us_per_unit"] = s.unit_ns() / 1e3;
    return j;
  };
  json rows = json::array();
  for (const DiffRow& r : d.rows) {
    rows.push_back({{"op", r.op},
                    {"dtype", r.dtype},
                    {"shape", r.shape},
                    {"a", side(r.a)},
                    {"b", side(r.b)},
                    {"change_us_per_unit", r.change_ns() / 1e3},
                    {"ratio", r.ratio() > 0 ? json(r.ratio()) : json(nullptr)}});
  }
  return {{"unit", d.unit()},
          {"a", {{"source", d.a_source}, {"ranks", d.a_ranks}, {"units_per_rank", d.a_units}}},
          {"b", {{"source", d.b_source}, {"ranks", d.b_ranks}, {"units_per_rank", d.b_units}}},
          {"rows", std::move(rows)}};
}

}  // namespace xpu_timer::timeline
