#include "flamegraph/string_interner.h"

namespace xpu_timer::flamegraph {

uint32_t StringInterner::intern(std::string_view text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  return id;
}

}  // namespace xpu_timer::flamegraph
