#include "inject/comm_registry.h"

namespace xpu_timer::inject {

uint32_t CommRegistry::slot_for(const void* comm) {
  uint64_t x = reinterpret_cast<uintptr_t>(comm);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x & (kMapSlots - 1));
}

uint32_t CommRegistry::add(const void* comm, uint64_t hash, int nranks, int rank, int device,
                           uint32_t flags, bool replace) {
  if (comm == nullptr) return kNone;
  std::lock_guard<std::mutex> lock(add_mu_);
  if (!replace) {
    const uint32_t existing = find(comm);
    if (existing != kNone) return existing;
  }
  const uint32_t index = count_.load(std::memory_order_relaxed);
  if (index >= kCapacity) return kNone;
  CommEntry& e = entries_[index];
  e.hash.store(hash, std::memory_order_relaxed);
  e.nranks.store(nranks, std::memory_order_relaxed);
  e.rank.store(rank, std::memory_order_relaxed);
  e.device.store(device, std::memory_order_relaxed);
  e.flags.store(flags, std::memory_order_relaxed);
  e.issued_seq.store(0, std::memory_order_relaxed);
  e.split_count.store(0, std::memory_order_relaxed);
  count_.store(index + 1, std::memory_order_release);

  const auto key = reinterpret_cast<uintptr_t>(comm);
  for (uint32_t i = 0, s = slot_for(comm); i < kMapSlots; ++i, s = (s + 1) & (kMapSlots - 1)) {
    const uintptr_t k = map_keys_[s].load(std::memory_order_relaxed);
    if (k == key || k == 0) {
      // Value before key: a lock-free reader that sees the key sees a valid index.
      map_values_[s].store(index, std::memory_order_release);
      if (k == 0) map_keys_[s].store(key, std::memory_order_release);
      return index;
    }
  }
  return index;  // unreachable: at most kCapacity keys in 2*kCapacity slots
}

uint32_t CommRegistry::find(const void* comm) const {
  if (comm == nullptr) return kNone;
  const auto key = reinterpret_cast<uintptr_t>(comm);
  for (uint32_t i = 0, s = slot_for(comm); i < kMapSlots; ++i, s = (s + 1) & (kMapSlots - 1)) {
    const uintptr_t k = map_keys_[s].load(std::memory_order_acquire);
    if (k == key) return map_values_[s].load(std::memory_order_acquire);
    if (k == 0) return kNone;
  }
  return kNone;
}

void CommRegistry::mark_destroyed(const void* comm) {
  const uint32_t index = find(comm);
  if (index != kNone) entries_[index].flags.fetch_or(CommEntry::kDestroyed);
}

namespace {
// Constant-initialised: usable before any constructor and after destructors.
CommRegistry g_registry;
}  // namespace

CommRegistry& comm_registry() { return g_registry; }

}  // namespace xpu_timer::inject
