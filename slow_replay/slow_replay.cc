#include "slow_replay/slow_replay.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/op_names.h"
#include "supervisor/analysis/straggler_feed.h"

namespace xpu_timer::slow_replay {
namespace {

struct Item {
  uint64_t final_ns;  // when the record became final: the supervisor could see it then
  int rank;
  const recorder::RecordData* d;
};

// When the live ring feed could have handed this record over: once it
// completed (its end), or for a host range once it ended.
uint64_t final_time(const recorder::RecordData& d) {
  if (const uint64_t end = recorder::span_end_ns(d)) return end;
  return std::max(d.launch_ns, d.ready_ns);
}

}  // namespace

ReplayResult replay(const std::vector<timeline::LoadedDumps>& dumps,
                    const supervisor::StragglerOptions& options, uint64_t period_ns) {
  ReplayResult out;
  supervisor::StragglerAnalyzer analyzer(options);
  std::vector<Item> items;
  // A record seen in two dumps (overlapping rings) is one operation: the
  // same rank, ring position and launch.
  std::set<std::tuple<int, uint64_t, uint64_t>> seen;
  int64_t mono_to_unix = 0;
  for (const timeline::LoadedDumps& folder : dumps) {
    for (const std::string& w : folder.warnings) out.warnings.push_back(w);
    for (const timeline::RankTimeline& rt : folder.ranks) {
      if (mono_to_unix == 0 && rt.ring.created_realtime_ns != 0) {
        mono_to_unix = static_cast<int64_t>(rt.ring.created_realtime_ns) -
                       static_cast<int64_t>(rt.ring.created_mono_ns);
      }
      for (const recorder::RecordData& d : rt.ring.records) {
        if (d.kind == static_cast<uint8_t>(proto::OpKind::kNccl) && d.comm_hash != 0) {
          analyzer.note_member(d.comm_hash, rt.rank, -1);
        }
        if (!seen.insert({rt.rank, d.op_id, d.launch_ns}).second) continue;
        const uint64_t t = final_time(d);
        if (t != 0) items.push_back(Item{t, rt.rank, &d});
      }
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.final_ns < b.final_ns; });
  out.records = items.size();
  if (items.empty()) return out;
  auto verdict = [&](uint64_t at) {
    ReplayVerdict v;
    v.at_ns = at;
    v.at_unix_s = static_cast<double>(static_cast<int64_t>(at) + mono_to_unix) / 1e9;
    v.report = analyzer.analyze(at);
    out.verdicts.push_back(std::move(v));
  };
  uint64_t next = items.front().final_ns + period_ns;
  for (const Item& it : items) {
    if (it.final_ns >= next) {
      verdict(next);
      next += period_ns;
      // A stretch no dump covers (between two dumps): skipped, not judged.
      if (it.final_ns >= next) next = it.final_ns + period_ns;
    }
    supervisor::feed_straggler_record(&analyzer, it.rank, *it.d, it.final_ns);
  }
  // Once after the last record, past the settling time, so that every
  // collective the dumps hold complete is judged.
  verdict(items.back().final_ns + options.settle_ns);
  return out;
}

}  // namespace xpu_timer::slow_replay
