#include "common/comm_names.h"

#include <cstdio>
#include <cstring>

#include "common/rank_set.h"

namespace xpu_timer {

std::string comm_hex(uint64_t comm_hash) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(comm_hash));
  return buf;
}

std::string comm_slot_name(const proto::CommSlot& c) {
  return std::string(c.name, strnlen(c.name, sizeof(c.name)));
}

std::string comm_phrase(uint64_t comm_hash, const std::string& name) {
  return "comm " + comm_hex(comm_hash) + (name.empty() ? "" : " (" + name + ")");
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  return "ranks " + (ranks.size() <= 8 ? join_ranks(ranks) : fold_ranks(ranks));
}

std::string folded_ranks_phrase(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + fold_ranks(ranks);
}

}  // namespace xpu_timer
