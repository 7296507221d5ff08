// Maps frame labels to dense ids so that the merge compares integers, not
// strings. Labels live in a deque, so the string_views used as keys stay valid
// as it grows. Not thread-safe: each loader worker owns one per file, and the
// merging thread owns the global one.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace xpu_timer::flamegraph {

class StringInterner {
 public:
  uint32_t intern(std::string_view text);
  const std::string& text(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;
};

}  // namespace xpu_timer::flamegraph
