// Each rank's process in the trace (trace_slices.h): its name says its part in
// the hang and its sort index puts the culprits first. Only what Perfetto's
// JSON importer honours carries this: process_name and process_sort_index
// (lowest first); it ignores process_labels and cname, so a role told only
// there would be lost in the viewer the trace is meant for.
#include <algorithm>
#include <set>
#include <tuple>

#include "timeline/op_describe.h"
#include "timeline/trace_builder.h"
#include "timeline/trace_slices.h"

namespace xpu_timer::timeline {
namespace {

using nlohmann::json;

// Lower tiers sort first: the rank the others wait for, then those waiting.
enum Tier { kCulprit = 0, kStuck = 1, kOther = 2 };

struct Process {
  Tier tier = kOther;
  int rank = 0;
  std::string name;
};

// The pending operation that names a rank's role: the one hang.json says it
// is stuck in, else its earliest pending one.
const Slice* role_slice(const TraceContext& ctx, size_t ri) {
  const int rank = ctx.dumps.ranks[ri].rank;
  const Slice* best = nullptr;
  for (const Slice& s : ctx.slices) {
    if (s.rank_index != ri || s.place != Place::kPending) continue;
    const recorder::RecordData& r = *s.record;
    if (ctx.marks.stuck.count({rank, r.comm_hash, r.seq}) != 0) return &s;
    if (best == nullptr || s.start < best->start) best = &s;
  }
  return best;
}

std::string process_name(int rank, const std::string& label, const std::string& role) {
  std::string s = "rank " + std::to_string(rank);
  if (!label.empty()) s += " (" + label + ")";
  if (!role.empty()) s += " - " + role;
  return s;
}

}  // namespace

json metadata_event(const char* name, int pid, int tid, json args) {
  json e = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
  if (tid != 0) e["tid"] = tid;
  return e;
}

void append_processes(const TraceContext& ctx, const std::vector<std::string>& labels,
                      TraceSink* sink) {
  std::set<int> missing;
  for (const MissingMark& m : ctx.marks.missing) missing.insert(m.rank);
  std::vector<Process> processes;
  for (size_t ri = 0; ri < ctx.dumps.ranks.size(); ++ri) {
    Process p;
    p.rank = ctx.dumps.ranks[ri].rank;
    std::string role;
    if (missing.count(p.rank) != 0) {
      p.tier = kCulprit;
      role = "MISSING";
    }
    if (auto c = ctx.marks.crashed.find(p.rank); c != ctx.marks.crashed.end()) {
      p.tier = kCulprit;
      role = "CRASHED" + (c->second.empty() ? "" : ": " + c->second);
    }
    if (const Slice* s = role_slice(ctx, ri)) {
      const std::string op = op_label(*s->record);
      if (ctx.no_hang_said) {
        role += (role.empty() ? "" : ", ") + op + " in flight at dump";
      } else {
        role += (role.empty() ? "stuck in " : ", stuck in ") + op;
        p.tier = std::min(p.tier, kStuck);
      }
    }
    p.name = process_name(p.rank, labels.empty() ? "" : labels[ri], role);
    processes.push_back(std::move(p));
  }
  for (const MissingMark& m : ctx.marks.missing) {
    if (m.timeline == nullptr) {
      processes.push_back(Process{kCulprit, m.rank, process_name(m.rank, "", "MISSING (no dump)")});
    }
  }
  std::stable_sort(processes.begin(), processes.end(), [](const Process& a, const Process& b) {
    return std::tie(a.tier, a.rank) < std::tie(b.tier, b.rank);
  });
  for (size_t i = 0; i < processes.size(); ++i) {
    const int pid = trace_pid(processes[i].rank);
    sink->add(metadata_event("process_name", pid, 0, {{"name", processes[i].name}}));
    sink->add(metadata_event("process_sort_index", pid, 0, {{"sort_index", i}}));
  }
}

}  // namespace xpu_timer::timeline
