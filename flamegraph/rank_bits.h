// The set of ranks passing through one merged frame. A frame shared by most of a
// 1024-rank job holds a bitset (128 bytes); a frame seen by a handful of ranks
// (a rank-specific leaf) holds a short sorted list, so that a dump whose stacks
// are all different does not cost world_size bits per frame. Not thread-safe:
// owned by the single thread that merges.
#pragma once

#include <cstdint>
#include <vector>

namespace xpu_timer::flamegraph {

class RankBits {
 public:
  void add(uint32_t rank);
  bool contains(uint32_t rank) const;
  uint32_t count() const { return count_; }
  // Ascending ranks.
  std::vector<int> to_vector() const;
  // Ascending ranks in [0, world_size) that are NOT in the set.
  std::vector<int> complement(uint32_t world_size) const;

 private:
  // Above this many members the list turns into a bitset.
  static constexpr uint32_t kMaxListSize = 32;
  uint32_t count_ = 0;
  std::vector<uint32_t> list_;  // sorted, used while bits_ is empty
  std::vector<uint64_t> bits_;  // grows to the highest rank seen
};

}  // namespace xpu_timer::flamegraph
