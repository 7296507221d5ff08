#include "supervisor/ranks/rank_registry.h"

#include <algorithm>
#include <set>

namespace xpu_timer::supervisor {

pid_t RankRegistry::add(RankRecord record) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int rank = record.reg.rank;
  pid_t replaced = 0;
  if (auto it = ranks_.find(rank); it != ranks_.end()) replaced = it->second.reg.pid;
  ranks_[rank] = std::move(record);
  return replaced;
}

std::optional<RankRecord> RankRegistry::on_disconnect(uint64_t connection_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<RankRecord> closed;
  for (auto& [rank, rec] : ranks_) {
    if (rec.connection_id != connection_id) continue;
    rec.connected = false;
    closed = rec;
  }
  return closed;
}

std::vector<RankRecord> RankRegistry::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<RankRecord> out;
  out.reserve(ranks_.size());
  for (const auto& [rank, rec] : ranks_) out.push_back(rec);
  return out;
}

size_t RankRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ranks_.size();
}

std::vector<int> expected_ranks(const std::vector<RankRecord>& records) {
  std::set<int> ranks;
  std::set<std::pair<int, int>> groups;  // (group_rank, local_world_size)
  for (const RankRecord& r : records) {
    ranks.insert(r.reg.rank);
    groups.emplace(r.reg.group_rank, r.reg.local_world_size);
  }
  for (const auto& [group, local] : groups) {
    const long long first = static_cast<long long>(group) * local;
    for (int i = 0; i < local; ++i) {
      if (first + i <= kMaxWorldSize) ranks.insert(static_cast<int>(first + i));
    }
  }
  return std::vector<int>(ranks.begin(), ranks.end());
}

}  // namespace xpu_timer::supervisor
