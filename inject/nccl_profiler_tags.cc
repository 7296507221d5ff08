#include "inject/nccl_profiler_tags.h"

#include <atomic>
#include <cctype>
#include <cstring>

#include "common/log.h"
#include "common/op_names.h"
#include "inject/event_pool.h"

namespace xpu_timer::inject {
namespace {

using proto::NcclAlgo;
using proto::NcclProto;

struct ThreadTag {
  bool open;
  bool seen;
  NcclTag tag;
};

// POD in static TLS: zero-initialised, no constructor, no allocation.
__attribute__((tls_model("initial-exec"))) thread_local ThreadTag t_tag;

std::atomic<uint64_t> g_uncorrelated{0};

// One slot per possible (device, pair): 1 MiB of zero pages, touched only
// for the pairs a process actually uses.
std::atomic<uint32_t> g_tags[EventPools::kMaxDevices][EventPool::kCapacity];

}  // namespace

uint32_t pack_nccl_tag(const NcclTag& t) {
  return static_cast<uint32_t>(t.algo) | static_cast<uint32_t>(t.proto) << 8 |
         static_cast<uint32_t>(t.transport) << 16 | static_cast<uint32_t>(t.nchannels) << 24;
}

NcclTag unpack_nccl_tag(uint32_t v) {
  return NcclTag{static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                 static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
}

void nccl_tag_call_begin() { t_tag = ThreadTag{true, false, NcclTag{}}; }

NcclTag nccl_tag_call_end() {
  const NcclTag t = t_tag.tag;
  t_tag = ThreadTag{};
  return t;
}

void nccl_tag_note_coll(uint8_t algo, uint8_t proto, uint8_t transport, uint8_t nchannels) {
  ThreadTag& tt = t_tag;
  if (!tt.open) {
    g_uncorrelated.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!tt.seen) {
    tt.tag = NcclTag{algo, proto, transport, nchannels};
    tt.seen = true;
    return;
  }
  // A group whose members NCCL ran differently.
  if (tt.tag.algo != algo) tt.tag.algo = static_cast<uint8_t>(NcclAlgo::kMixed);
  if (tt.tag.proto != proto) tt.tag.proto = static_cast<uint8_t>(NcclProto::kMixed);
  if (tt.tag.transport != transport) tt.tag.transport = 0;
  if (nchannels > tt.tag.nchannels) tt.tag.nchannels = nchannels;
}

uint64_t nccl_tag_uncorrelated_events() { return g_uncorrelated.load(std::memory_order_relaxed); }

void nccl_tag_store(int device, uint32_t pair_index, const NcclTag& tag) {
  if (device < 0 || device >= EventPools::kMaxDevices || pair_index >= EventPool::kCapacity) return;
  g_tags[device][pair_index].store(pack_nccl_tag(tag), std::memory_order_relaxed);
}

NcclTag nccl_tag_load(int device, uint32_t pair_index) {
  if (device < 0 || device >= EventPools::kMaxDevices || pair_index >= EventPool::kCapacity) {
    return NcclTag{};
  }
  return unpack_nccl_tag(g_tags[device][pair_index].load(std::memory_order_relaxed));
}

namespace {
// NCCL's spelling differs between releases ("Ring" from the tuning tables,
// "RING" and "NVLS_TREE" from ncclAlgoToString in 2.28): compare letters and
// digits only, ignoring case and underscores.
bool same_name(const char* got, const char* want) {
  for (;; ++got) {
    while (*got == '_') ++got;
    const char a = static_cast<char>(std::tolower(static_cast<unsigned char>(*got)));
    const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(*want)));
    if (a != b) return false;
    if (a == '\0') return true;
    ++want;
  }
}
}  // namespace

uint8_t nccl_algo_from_name(const char* name) {
  if (name == nullptr || *name == '\0') return static_cast<uint8_t>(NcclAlgo::kUnknown);
  struct Entry {
    const char* name;
    NcclAlgo algo;
  };
  static constexpr Entry kNames[] = {
      {"Tree", NcclAlgo::kTree},
      {"Ring", NcclAlgo::kRing},
      {"CollNetDirect", NcclAlgo::kCollNetDirect},
      {"CollNetChain", NcclAlgo::kCollNetChain},
      {"NVLS", NcclAlgo::kNvls},
      {"NVLSTree", NcclAlgo::kNvlsTree},
      {"PAT", NcclAlgo::kPat},
  };
  for (const Entry& e : kNames) {
    if (same_name(name, e.name)) return static_cast<uint8_t>(e.algo);
  }
  // Once per process: a name we do not know (a newer NCCL, symmetric kernels).
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) XPU_TIMER_LOG_INFO("NCCL algorithm '%.40s' shown as 'other'", name);
  return static_cast<uint8_t>(NcclAlgo::kOther);
}

uint8_t nccl_proto_from_name(const char* name) {
  if (name == nullptr || *name == '\0') return static_cast<uint8_t>(NcclProto::kUnknown);
  if (same_name(name, "LL")) return static_cast<uint8_t>(NcclProto::kLL);
  if (same_name(name, "LL128")) return static_cast<uint8_t>(NcclProto::kLL128);
  if (same_name(name, "Simple")) return static_cast<uint8_t>(NcclProto::kSimple);
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) XPU_TIMER_LOG_INFO("NCCL protocol '%.40s' shown as 'other'", name);
  return static_cast<uint8_t>(NcclProto::kOther);
}

uint8_t nccl_algo_from_v1(uint8_t v) {
  // NCCL_ALGO_TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5, PAT 6.
  return v <= 6 ? static_cast<uint8_t>(v + 1) : static_cast<uint8_t>(NcclAlgo::kOther);
}

uint8_t nccl_proto_from_v1(uint8_t v) {
  // NCCL_PROTO_LL 0, LL128 1, SIMPLE 2.
  return v <= 2 ? static_cast<uint8_t>(v + 1) : static_cast<uint8_t>(NcclProto::kOther);
}

}  // namespace xpu_timer::inject
