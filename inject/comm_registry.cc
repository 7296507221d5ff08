#include "inject/comm_registry.h"

#include <cstddef>
#include <cstring>

namespace xpu_timer::inject {

bool copy_comm_name(const char* name, char (&out)[kCommNameBytes]) {
  size_t n = 0;
  if (name != nullptr) {
    // Byte by byte up to the NUL: never reads past the caller's string.
    for (; n + 1 < kCommNameBytes && name[n] != '\0'; ++n) {
      const auto c = static_cast<unsigned char>(name[n]);
      out[n] = c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
    }
  }
  std::memset(out + n, 0, kCommNameBytes - n);
  return n > 0;
}

bool comm_name_from_config(const ncclConfig_t* config, char (&out)[kCommNameBytes]) {
  std::memset(out, 0, kCommNameBytes);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  constexpr size_t kEnd = offsetof(ncclConfig_t, commName) + sizeof(config->commName);
  constexpr unsigned int kConfigMagic = 0xcafebeef;  // NCCL_CONFIG_INITIALIZER's
  if (config == nullptr || config->size < kEnd || config->magic != kConfigMagic ||
      config->version < static_cast<unsigned int>(NCCL_VERSION(2, 27, 0))) {
    return false;
  }
  return copy_comm_name(config->commName, out);
#else
  (void)config;
  return false;
#endif
}

namespace {

struct PluginNameWindow {
  bool open;
  bool named;
  char name[kCommNameBytes];
};
__attribute__((tls_model("initial-exec"))) thread_local PluginNameWindow t_plugin_name = {};

}  // namespace

void plugin_name_window_open() {
  t_plugin_name.open = true;
  t_plugin_name.named = false;
}

void plugin_name_note(const char* name) {
  if (!t_plugin_name.open) return;
  t_plugin_name.named = copy_comm_name(name, t_plugin_name.name);
}

bool plugin_name_window_take(char (&out)[kCommNameBytes]) {
  const bool named = t_plugin_name.open && t_plugin_name.named;
  t_plugin_name.open = false;
  t_plugin_name.named = false;
  if (named) {
    std::memcpy(out, t_plugin_name.name, kCommNameBytes);
  } else {
    std::memset(out, 0, kCommNameBytes);
  }
  return named;
}

uint32_t CommRegistry::slot_for(const void* comm) {
  uint64_t x = reinterpret_cast<uintptr_t>(comm);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x & (kMapSlots - 1));
}

uint32_t CommRegistry::add(const void* comm, uint64_t hash, int nranks, int rank, int device,
                           uint32_t flags, bool replace, const char* name) {
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
  copy_comm_name(name, e.name);  // published with the entry by count_ below
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

bool CommRegistry::name_later(const void* comm, const char* name) {
  std::lock_guard<std::mutex> lock(add_mu_);  // one writer of late_name
  const uint32_t index = find(comm);
  if (index == kNone) return false;
  CommEntry& e = entries_[index];
  if (e.name[0] != '\0' || e.late_named.load(std::memory_order_relaxed)) return false;
  if (!copy_comm_name(name, e.late_name)) return false;
  e.late_named.store(true, std::memory_order_release);
  return true;
}

namespace {
// Constant-initialised: usable before any constructor and after destructors.
CommRegistry g_registry;
}  // namespace

CommRegistry& comm_registry() { return g_registry; }

}  // namespace xpu_timer::inject
