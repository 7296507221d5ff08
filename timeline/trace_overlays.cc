// What the trace draws over the slices: flow arrows joining a collective
// across ranks, and the hang's marks (trace_slices.h).
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/last_arrival.h"
#include "timeline/op_describe.h"
#include "timeline/trace_builder.h"
#include "timeline/trace_slices.h"

namespace xpu_timer::timeline {
namespace {

using nlohmann::json;

// Where a flow event binds: inside its slice (viewers bind "s" and "f" with
// bp "e" to the slice enclosing their timestamp), near the start so that the
// arrows of one collective line up across ranks.
int64_t bind_point(const Slice& s) {
  return s.start + static_cast<int64_t>(std::min<uint64_t>(s.span() / 2, 1000));
}

json flow_event(const TraceContext& ctx, const Slice& s, const char* ph, uint64_t id,
                const std::string& name) {
  json e = {{"name", name},
            {"cat", "collective"},
            {"ph", ph},
            {"id", id},
            {"pid", ctx.pid(s.rank_index)},
            {"tid", s.tid},
            {"ts", ctx.us(bind_point(s))}};
  if (ph[0] == 'f') e["bp"] = "e";
  return e;
}

// The rank the others waited for at a collective: the last to arrive (its
// slice starts at its arrival, the start marker's GPU time), drawn as a
// counter of its rank, "arrived last (ms late)", spiking to its margin over
// the next latest for the collective's duration (docs/usage.md "Slow ranks").
// Ranks of several nodes compare through their wall clocks.
void append_lateness(const TraceContext& ctx, const std::map<int, const Slice*>& ranks,
                     TraceSink* sink) {
  std::vector<std::pair<int, const Slice*>> members;
  for (const auto& [rank, s] : ranks) {
    if (s->place == Place::kPending) return;  // not arrived everywhere
    members.emplace_back(rank, s);
  }
  const LastArrival la = last_arrival(
      members.size(), [&](size_t i) { return members[i].first; },
      [&](size_t i) { return members[i].second->start; });
  if (!la.valid) return;
  const Slice* last = members[la.last].second;
  const int64_t margin = la.margin_ns;
  if (margin <= 0) return;
  auto counter = [&](int64_t at, double ms) {
    sink->add({{"name", "arrived last (ms late)"},
               {"cat", "lateness"},
               {"ph", "C"},
               {"pid", ctx.pid(last->rank_index)},
               {"ts", ctx.us(at)},
               {"args", {{"ms", ms}}}});
  };
  counter(last->start, static_cast<double>(margin) / 1e6);
  counter(std::max(last->end, last->start + 1), 0);
}

}  // namespace

size_t append_flows(const TraceContext& ctx, TraceSink* sink) {
  // (comm, seq, op) -> rank -> its slice. The op name is part of the key so
  // that point-to-point operations, whose sequence numbers need not line up
  // across ranks, are never joined to a collective by accident.
  std::map<std::tuple<uint64_t, uint64_t, uint16_t>, std::map<int, const Slice*>> groups;
  for (const Slice& s : ctx.slices) {
    const recorder::RecordData& r = *s.record;
    if (s.place == Place::kHost || !is_nccl(r) || r.comm_hash == 0 || r.seq == 0) continue;
    groups[{r.comm_hash, r.seq, r.name}].emplace(ctx.dumps.ranks[s.rank_index].rank, &s);
  }
  uint64_t id = 0;
  for (const auto& [key, ranks] : groups) {
    append_lateness(ctx, ranks, sink);
    const Slice* prev = nullptr;
    for (const auto& [rank, s] : ranks) {
      if (prev != nullptr) {
        const std::string name = op_label(*s->record);
        ++id;
        sink->add(flow_event(ctx, *prev, "s", id, name));
        sink->add(flow_event(ctx, *s, "f", id, name));
      }
      prev = s;
    }
  }
  return id;
}

void append_hang_overlays(const TraceContext& ctx, TraceSink* sink) {
  const int first_pid = ctx.dumps.ranks.empty() ? 1 : ctx.pid(0);
  int64_t verdict_at = ctx.end;
  for (size_t f = 0; f < ctx.dumps.folders.size(); ++f) {
    const auto& v = ctx.dumps.folders[f].verdict;
    if (!v || !v->hung) continue;
    int64_t at = ctx.end;
    if (v->detected_at_unix_s) {
      if (const auto t = ctx.clock.from_unix_s(f, *v->detected_at_unix_s)) at = *t;
    }
    verdict_at = at;
    json args = {
        {"summary", v->summary}, {"timeout_s", v->timeout_s}, {"folder", ctx.dumps.folders[f].dir}};
    if (v->detected_at_unix_s) args["detected_at"] = *v->detected_at_unix_s;
    sink->add({{"name", "hang verdict: " + (v->summary.empty() ? "hung" : v->summary)},
               {"cat", "hang"},
               {"ph", "i"},
               {"s", "g"},
               {"pid", first_pid},
               {"tid", kHostTid},
               {"ts", ctx.us(at)},
               {"args", std::move(args)}});
  }
  // The slices of the records the marks point at, found in one pass.
  std::unordered_map<const recorder::RecordData*, const Slice*> marked;
  for (const MissingMark& m : ctx.marks.missing) {
    if (m.last_completed != nullptr) marked.emplace(m.last_completed, nullptr);
  }
  for (const Slice& s : ctx.slices) {
    if (const auto it = marked.find(s.record); it != marked.end()) it->second = &s;
  }
  for (const MissingMark& m : ctx.marks.missing) {
    int pid = trace_pid(m.rank), tid = kHostTid;
    int64_t at = verdict_at;
    const auto it = marked.find(m.last_completed);
    if (it != marked.end() && it->second != nullptr) {
      tid = it->second->tid;
      at = it->second->end;
    } else {
      // Named here, where it is known to be used: an empty track named
      // beside the streams would only be noise.
      sink->add(metadata_event("thread_name", pid, kHostTid, {{"name", "hang marks"}}));
      sink->add(metadata_event("thread_sort_index", pid, kHostTid, {{"sort_index", kHostTid}}));
    }
    json args = {{"reason", m.reason}};
    if (m.comm) args["comm"] = comm_hex(*m.comm);
    if (m.seq) args["missing_seq"] = *m.seq;
    if (m.last_completed != nullptr) {
      args["last_completed"] = op_label(*m.last_completed);
      args["last_completed_op_id"] = m.last_completed->op_id;
    }
    sink->add({{"name", m.name},
               {"cat", "hang"},
               {"ph", "i"},
               {"s", "t"},
               {"pid", pid},
               {"tid", tid},
               {"ts", ctx.us(at)},
               {"args", std::move(args)}});
  }
}

}  // namespace xpu_timer::timeline
