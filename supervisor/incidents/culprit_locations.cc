#include "supervisor/incidents/culprit_locations.h"

#include "stack/stack_file.h"
#include "stack/user_frames.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

// A stack file of one rank is a few tens of KB: a handful of culprits are
// read on the asio thread in milliseconds, once per verdict.
std::map<int, std::vector<CodeFrame>> places_in_dump(const StackDumpReport& dump,
                                                     const std::set<int>& ranks,
                                                     const std::map<int, pid_t>& pids,
                                                     std::vector<std::string>* errors) {
  std::map<int, std::vector<CodeFrame>> out;
  for (const RankStackResult& r : dump.ranks) {
    if (ranks.count(r.rank) == 0 || r.file.empty()) continue;
    const auto pid = pids.find(r.rank);
    if (pid != pids.end() && pid->second != r.pid) continue;  // restarted since
    std::string error;
    const std::optional<stack::ProcessStack> stacks = stack::load_stack_file(r.file, &error);
    if (!stacks) {
      errors->push_back(error);
      continue;
    }
    std::vector<CodeFrame> where = stack::user_frames(*stacks);
    if (!where.empty()) out[r.rank] = std::move(where);
  }
  return out;
}

bool is_culprit(const RankVerdict& v) {
  return v.state == RankState::kMissing || v.state == RankState::kUnresponsive ||
         v.state == RankState::kStalled;
}

size_t CulpritLocations::learn(const StackDumpReport& dump, const HangReport& verdict) {
  std::set<int> culprits;
  std::map<int, pid_t> pids;
  for (const RankVerdict& v : verdict.ranks) {
    if (!(is_culprit(v) || is_root_rank(verdict, v.rank)) || !v.registered) continue;
    culprits.insert(v.rank);
    pids[v.rank] = v.pid;
  }
  std::vector<std::string> errors;
  const std::map<int, std::vector<CodeFrame>> found = places_in_dump(dump, culprits, pids, &errors);
  for (const std::string& e : errors) SUP_LOG_WARN("where the culprit is: %s", e.c_str());
  for (const auto& [rank, where] : found) places_[rank] = Place{pids[rank], where};
  return found.size();
}

void CulpritLocations::annotate(Snapshot* snap) const {
  if (places_.empty()) return;
  for (RankSample& s : snap->ranks) {
    const auto it = places_.find(s.rank);
    if (it != places_.end() && it->second.pid == s.pid) s.where = it->second.where;
  }
}

}  // namespace xpu_timer::supervisor
