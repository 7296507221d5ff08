#include "inject/nccl_kernel_ch_probe.h"

#include <cinttypes>
#include <cstdio>

#include "common/clock.h"
#include "inject/hook_export.h"

namespace xpu_timer::inject {
namespace {

// 2^18 samples: two ranks' worth of about 40 s of a DDP job of 12 buckets
// on 32 channels at 30 ms steps, 7 MiB, touched only when the probe is on.
constexpr uint64_t kRing = uint64_t{1} << 18;
KernelChSample g_ring[kRing];
std::atomic<uint64_t> g_next{0};

}  // namespace

void kernel_ch_note(bool stop, uint32_t channel, uint64_t gpu_ns) {
  const uint64_t i = g_next.fetch_add(1, std::memory_order_relaxed);
  KernelChSample& s = g_ring[i % kRing];
  s.gpu_ns = gpu_ns;
  s.realtime_ns = realtime_ns();
  s.monotonic_ns = monotonic_ns();
  s.channel = channel;
  s.stop = stop ? 1 : 0;
}

long kernel_ch_dump(const char* path) {
  if (path == nullptr) return -1;
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) return -1;
  const uint64_t end = g_next.load(std::memory_order_acquire);
  const uint64_t begin = end > kRing ? end - kRing : 0;
  long n = 0;
  for (uint64_t i = begin; i < end; ++i, ++n) {
    const KernelChSample& s = g_ring[i % kRing];
    std::fprintf(f, "%s %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", s.stop != 0 ? "stop" : "start",
                 s.channel, s.gpu_ns, s.realtime_ns, s.monotonic_ns);
  }
  return std::fclose(f) == 0 ? n : -1;
}

}  // namespace xpu_timer::inject

// Switches the probe on (on != 0) or off: the plugin's activation mask gains
// or loses ncclProfileKernelCh at once (NCCL reads it for every collective).
// 0, or -1 when NCCL never initialised our plugin in this process.
XPU_TIMER_HOOK int xpu_timer_bench_set_kernel_ch(int on) {
  xpu_timer::inject::g_kernel_ch_on.store(on != 0, std::memory_order_relaxed);
  return xpu_timer::inject::nccl_profiler_refresh_mask() ? 0 : -1;
}

// The ring written to `path` (kernel_ch_dump): the count written, or -1.
XPU_TIMER_HOOK long xpu_timer_bench_kernel_ch_dump(const char* path) {
  return xpu_timer::inject::kernel_ch_dump(path);
}
