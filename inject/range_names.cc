#include "inject/range_names.h"

#include <cstring>

namespace xpu_timer::inject {
namespace {

constexpr size_t kMaxLen = proto::kRangeNameBytes - 1;

uint64_t hash_of(const char* s, size_t len, proto::RangeKind kind) {
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(kind);  // FNV-1a
  for (size_t i = 0; i < len; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 1099511628211ull;
  }
  return h | 1;  // never 0: 0 marks an empty slot
}

}  // namespace

RangeNames::RangeNames() {
  std::memcpy(names_[kOther], "(other)", sizeof("(other)"));
  size_.store(1, std::memory_order_release);
}

int RangeNames::find(uint64_t key, const char* name, size_t len, proto::RangeKind kind) const {
  for (uint32_t i = 0; i < kSlots; ++i) {
    const Slot& s = slots_[(key + i) & (kSlots - 1)];
    const uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0) return -1;
    if (k != key) continue;
    const uint16_t id = s.id.load(std::memory_order_relaxed);
    if (kinds_[id] == kind && std::strncmp(names_[id], name, len) == 0 && names_[id][len] == '\0') {
      return id;
    }
  }
  return -1;
}

uint16_t RangeNames::intern(const char* name, size_t len, proto::RangeKind kind) {
  if (len > kMaxLen) len = kMaxLen;
  const uint64_t key = hash_of(name, len, kind);
  if (const int id = find(key, name, len, kind); id >= 0) return static_cast<uint16_t>(id);
  std::lock_guard<std::mutex> lock(mu_);
  if (const int id = find(key, name, len, kind); id >= 0) return static_cast<uint16_t>(id);
  const uint32_t id = size_.load(std::memory_order_relaxed);
  if (id >= kCapacity) return kOther;
  std::memcpy(names_[id], name, len);
  names_[id][len] = '\0';
  kinds_[id] = kind;
  for (uint32_t i = 0; i < kSlots; ++i) {
    Slot& s = slots_[(key + i) & (kSlots - 1)];
    if (s.key.load(std::memory_order_relaxed) != 0) continue;
    s.id.store(static_cast<uint16_t>(id), std::memory_order_relaxed);
    s.key.store(key, std::memory_order_release);  // publishes id and the name
    break;
  }
  size_.store(id + 1, std::memory_order_release);
  return static_cast<uint16_t>(id);
}

}  // namespace xpu_timer::inject
