// NCCL's profiler-plugin entry points, exported by libxpu_timer_inject.so
// (the supervisor sets NCCL_PROFILER_PLUGIN to this library for the job).
// NCCL dlopens the path, finds the newest ncclProfiler_vN it knows and calls
// it on its own threads; see nccl_profiler_abi.h for the versions.
//
// We ask only for Coll events (the cheapest level that names the algorithm
// and protocol), return a null handle for every event so that NCCL never
// calls stopEvent/recordEventState for them, and hand what a Coll event says
// to the hooked call running on the same thread (nccl_profiler_tags.h).
// Only a benchmark's probe (nccl_kernel_ch_probe.h) asks for more: KernelCh
// events under ABI v5, for which Coll events then get a handle.
// Hazards: these functions run inside NCCL, so they never fail, never throw,
// never block and never allocate except in init (a small per-communicator
// context, freed by finalize). If anything is off the plugin stays silent
// (activation mask 0) and NCCL runs on unchanged.
#include <atomic>
#include <new>

#include "common/op_names.h"
#include "inject/bench_parts.h"
#include "inject/comm_registry.h"
#include "inject/hook_export.h"
#include "inject/nccl_kernel_ch_probe.h"
#include "inject/nccl_profiler_abi.h"
#include "inject/nccl_profiler_tags.h"
#include "inject/runtime.h"
#include "inject/settings.h"

namespace xpu_timer::inject {
namespace {

namespace abi = nccl_abi;

struct CommContext {
  uint8_t transport;  // proto::NcclTransport of the communicator
};

// v1-v3 do not say which communicator: one shared context, never freed.
CommContext g_unknown_comm{0};

// Whether NCCL took our ncclProfiler_v5, the one version whose KernelCh
// descriptor the probe reads.
std::atomic<bool> g_v5{false};

bool kernel_ch_asked() { return kernel_ch_on() && g_v5.load(std::memory_order_relaxed); }

// The events we want, or none when timing is off in this process.
int activation_mask() {
  if (settings().disable) return 0;
  if (mode() == Mode::kPassThrough) return 0;
  return abi::kProfileColl | (kernel_ch_asked() ? abi::kProfileKernelCh : 0);
}

uint8_t transport_of(int nnodes) {
  if (nnodes <= 0) return static_cast<uint8_t>(proto::NcclTransport::kUnknown);
  return static_cast<uint8_t>(nnodes == 1 ? proto::NcclTransport::kIntraNode
                                          : proto::NcclTransport::kInterNode);
}

// NCCL's own mask word, which it reads (atomically) for every task: a
// benchmark switches NCCL's profiler path off and on through it
// (nccl_profiler_switch).
std::atomic<int*> g_nccl_mask{nullptr};

ncclResult_t init_with_nodes(void** context, int* mask, int nnodes) noexcept {
  if (context == nullptr || mask == nullptr) return ncclSuccess;
  *mask = activation_mask();
  g_nccl_mask.store(mask, std::memory_order_relaxed);
  auto* ctx = new (std::nothrow) CommContext{transport_of(nnodes)};
  *context = ctx != nullptr ? ctx : &g_unknown_comm;
  return ncclSuccess;
}

// v4/v5 name the communicator (NCCL >= 2.27: config.commName): handed to
// the constructor hook running this init (comm_registry.h), which keeps it
// when the config it saw had none.
ncclResult_t init_v5(void** context, uint64_t /*comm_id*/, int* mask, const char* name, int nnodes,
                     int /*nranks*/, int /*rank*/, abi::DebugLogger /*log*/) noexcept {
  g_v5.store(true, std::memory_order_relaxed);
  plugin_name_note(name);
  return init_with_nodes(context, mask, nnodes);
}

ncclResult_t init_v4(void** context, int* mask, const char* name, uint64_t /*comm_hash*/,
                     int nnodes, int /*nranks*/, int /*rank*/, abi::DebugLogger /*log*/) noexcept {
  plugin_name_note(name);
  return init_with_nodes(context, mask, nnodes);
}

ncclResult_t init_v1(void** context, int* mask) noexcept {
  if (context == nullptr || mask == nullptr) return ncclSuccess;
  *mask = activation_mask();
  g_nccl_mask.store(mask, std::memory_order_relaxed);
  *context = &g_unknown_comm;
  return ncclSuccess;
}

uint8_t transport_of_context(void* context) {
  return context != nullptr ? static_cast<CommContext*>(context)->transport : 0;
}

// v2 to v5: algo and proto are NCCL's names.
template <typename Descr, typename ChannelsOf>
ncclResult_t start_named(void* context, void** handle, Descr* d, ChannelsOf channels) noexcept {
  if (handle != nullptr) *handle = nullptr;
  if (d == nullptr || d->type != abi::kProfileColl) return ncclSuccess;
  if (bench_part_off(BenchPart::kProfilerPlugin)) return ncclSuccess;
  nccl_tag_note_coll(nccl_algo_from_name(d->coll.algo), nccl_proto_from_name(d->coll.proto),
                     transport_of_context(context), channels(*d));
  return ncclSuccess;
}

// The probe's handles: NCCL only needs them non-null to report a Coll's
// KernelCh children and a KernelCh's stop; it never reads through them.
// A KernelCh's handle is its channel's byte, so that its stop names the channel.
char g_coll_handle;
char g_kernel_ch_handles[256];

ncclResult_t start_v5(void* context, void** handle, abi::EventDescrV5* d) noexcept {
  if (d != nullptr && d->type == abi::kProfileKernelCh) {
    if (handle != nullptr) *handle = &g_kernel_ch_handles[d->kernelCh.channelId];
    kernel_ch_note(false, d->kernelCh.channelId, d->kernelCh.pTimer);
    return ncclSuccess;
  }
  const ncclResult_t r =
      start_named(context, handle, d, [](const abi::EventDescrV5& e) { return e.coll.nChannels; });
  if (kernel_ch_asked() && d != nullptr && d->type == abi::kProfileColl && handle != nullptr) {
    *handle = &g_coll_handle;
  }
  return r;
}
ncclResult_t start_v4(void* context, void** handle, abi::EventDescrV4* d) noexcept {
  return start_named(context, handle, d,
                     [](const abi::EventDescrV4& e) { return e.coll.nChannels; });
}
ncclResult_t start_v3(void* context, void** handle, abi::EventDescrV3* d) noexcept {
  return start_named(context, handle, d,
                     [](const abi::EventDescrV3& e) { return e.coll.nMaxChannels; });
}
ncclResult_t start_v2(void* context, void** handle, abi::EventDescrV2* d) noexcept {
  return start_named(context, handle, d,
                     [](const abi::EventDescrV2& e) { return e.coll.nMaxChannels; });
}
ncclResult_t start_v1(void* context, void** handle, abi::EventDescrV1* d) noexcept {
  if (handle != nullptr) *handle = nullptr;
  if (d == nullptr || d->type != abi::kProfileColl) return ncclSuccess;
  if (bench_part_off(BenchPart::kProfilerPlugin)) return ncclSuccess;
  nccl_tag_note_coll(nccl_algo_from_v1(d->coll.algo), nccl_proto_from_v1(d->coll.proto),
                     transport_of_context(context), d->coll.nMaxChannels);
  return ncclSuccess;
}

// Never called for our null handles; defined because NCCL may check them.
// The probe's handles come here too: a KernelCh's stop state is noted.
ncclResult_t stop_event(void* /*handle*/) noexcept { return ncclSuccess; }
ncclResult_t record_state(void* handle, abi::EventState state, void* args) noexcept {
  const uintptr_t channel =
      reinterpret_cast<uintptr_t>(handle) - reinterpret_cast<uintptr_t>(g_kernel_ch_handles);
  if (channel < sizeof(g_kernel_ch_handles) && state == abi::kProfilerKernelChStop &&
      args != nullptr) {
    kernel_ch_note(true, static_cast<uint32_t>(channel),
                   static_cast<abi::StateArgsV5*>(args)->kernelCh.pTimer);
  }
  return ncclSuccess;
}

ncclResult_t finalize(void* context) noexcept {
  if (context != nullptr && context != &g_unknown_comm) delete static_cast<CommContext*>(context);
  return ncclSuccess;
}

constexpr const char* kPluginName = "xpu-timer";

}  // namespace

void nccl_profiler_switch(bool on) {
  int* mask = g_nccl_mask.load(std::memory_order_relaxed);
  if (mask != nullptr) __atomic_store_n(mask, on ? activation_mask() : 0, __ATOMIC_RELAXED);
}

bool nccl_profiler_refresh_mask() {
  if (g_nccl_mask.load(std::memory_order_relaxed) == nullptr) return false;
  nccl_profiler_switch(!bench_part_off(BenchPart::kProfilerInNccl));
  return true;
}

}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: the exported objects below are extern "C"

// Not const: a const object at namespace scope would have internal linkage.
extern "C" {
__attribute__((visibility("default"))) nccl_abi::ProfilerV5 ncclProfiler_v5 = {
    kPluginName, init_v5, start_v5, stop_event, record_state, finalize};
__attribute__((visibility("default"))) nccl_abi::ProfilerV4 ncclProfiler_v4 = {
    kPluginName, init_v4, start_v4, stop_event, record_state, finalize};
__attribute__((visibility("default"))) nccl_abi::ProfilerV3 ncclProfiler_v3 = {
    kPluginName, init_v1, start_v3, stop_event, record_state, finalize};
__attribute__((visibility("default"))) nccl_abi::ProfilerV2 ncclProfiler_v2 = {
    kPluginName, init_v1, start_v2, stop_event, record_state, finalize};
__attribute__((visibility("default"))) nccl_abi::ProfilerV1 ncclProfiler_v1 = {
    kPluginName, init_v1, start_v1, stop_event, record_state, finalize};
}
