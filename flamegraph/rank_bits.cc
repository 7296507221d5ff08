#include "flamegraph/rank_bits.h"

#include <algorithm>

namespace xpu_timer::flamegraph {

void RankBits::add(uint32_t rank) {
  if (bits_.empty()) {
    // Ranks arrive mostly in ascending order (files are merged by name), so the
    // common case is an append or a repeat of the last member.
    if (!list_.empty() && list_.back() == rank) return;
    if (list_.empty() || list_.back() < rank) {
      list_.push_back(rank);
    } else {
      auto it = std::lower_bound(list_.begin(), list_.end(), rank);
      if (*it == rank) return;
      list_.insert(it, rank);
    }
    ++count_;
    if (list_.size() <= kMaxListSize) return;
    for (uint32_t r : list_) {
      if (bits_.size() <= r / 64) bits_.resize(r / 64 + 1, 0);
      bits_[r / 64] |= uint64_t{1} << (r % 64);
    }
    list_.clear();
    list_.shrink_to_fit();
    return;
  }
  if (bits_.size() <= rank / 64) bits_.resize(rank / 64 + 1, 0);
  uint64_t& word = bits_[rank / 64];
  const uint64_t bit = uint64_t{1} << (rank % 64);
  if (!(word & bit)) {
    word |= bit;
    ++count_;
  }
}

bool RankBits::contains(uint32_t rank) const {
  if (bits_.empty()) return std::binary_search(list_.begin(), list_.end(), rank);
  return rank / 64 < bits_.size() && (bits_[rank / 64] >> (rank % 64)) & 1;
}

std::vector<int> RankBits::to_vector() const {
  std::vector<int> out;
  out.reserve(count_);
  if (bits_.empty()) {
    for (uint32_t r : list_) out.push_back(static_cast<int>(r));
    return out;
  }
  for (size_t w = 0; w < bits_.size(); ++w) {
    for (uint64_t word = bits_[w]; word != 0; word &= word - 1) {
      out.push_back(static_cast<int>(w * 64 + static_cast<size_t>(__builtin_ctzll(word))));
    }
  }
  return out;
}

std::vector<int> RankBits::complement(uint32_t world_size) const {
  std::vector<int> out;
  for (uint32_t r = 0; r < world_size; ++r) {
    if (!contains(r)) out.push_back(static_cast<int>(r));
  }
  return out;
}

}  // namespace xpu_timer::flamegraph
