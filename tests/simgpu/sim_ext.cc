// The xpu_sim_* extension exported by the simulated libcudart.so.13 (see sim_ext.h).
#include "tests/simgpu/sim_ext.h"

#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "tests/simgpu/kernel_launch.h"
#include "tests/simgpu/sim_clock.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

namespace {
std::atomic<uint64_t> g_counted_calls[XPU_SIM_COUNTED_CALLS];

// The injected library's executable segments, found once: it is preloaded,
// so it is mapped before any entry point of ours runs.
struct Range {
  uintptr_t begin, end;
};
std::vector<Range> g_inject_code;
std::once_flag g_inject_once;

int find_inject(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name == nullptr ||
      std::strstr(info->dlpi_name, "libxpu_timer_inject") == nullptr) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) {
      g_inject_code.push_back(
          {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
    }
  }
  return 1;
}

bool from_inject(const void* address) {
  std::call_once(g_inject_once, [] { dl_iterate_phdr(&find_inject, nullptr); });
  const auto a = reinterpret_cast<uintptr_t>(address);
  return std::any_of(g_inject_code.begin(), g_inject_code.end(),
                     [a](const Range& r) { return a >= r.begin && a < r.end; });
}

// A thread of the injected library's own: its name begins "xpu_timer_"
// (read once per thread; the library names its threads before their first
// CUDA call).
bool on_library_thread() {
  thread_local int ours = -1;
  if (ours < 0) {
    char name[16] = {};
    ours = pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 &&
                   std::strncmp(name, "xpu_timer_", 10) == 0
               ? 1
               : 0;
  }
  return ours == 1;
}

// Counts by entry point: open addressing on the address of the entry
// point's __func__ (one per function), filled on first use.
constexpr size_t kEntrySlots = 512;
struct EntryCount {
  std::atomic<const char*> name{nullptr};
  std::atomic<uint64_t> count{0};
};
using EntryTable = EntryCount[kEntrySlots];
EntryTable g_user_entries;     // the injected library's calls on the user's threads
EntryTable g_library_entries;  // ... on its own threads (its Poller)

void count_entry(EntryTable& table, const char* name) {
  size_t i = (reinterpret_cast<uintptr_t>(name) >> 3) % kEntrySlots;
  for (size_t probes = 0; probes < kEntrySlots; ++probes, i = (i + 1) % kEntrySlots) {
    const char* seen = table[i].name.load(std::memory_order_acquire);
    if (seen == nullptr &&
        table[i].name.compare_exchange_strong(seen, name, std::memory_order_acq_rel)) {
      seen = name;
    }
    if (seen == name) {
      table[i].count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

size_t format_entries(const EntryTable& table, char* buf, size_t size) {
  std::vector<std::pair<std::string, uint64_t>> counts;
  for (const EntryCount& e : table) {
    const char* name = e.name.load(std::memory_order_acquire);
    if (name != nullptr) counts.emplace_back(name, e.count.load(std::memory_order_relaxed));
  }
  std::sort(counts.begin(), counts.end());
  std::string text;
  for (const auto& [name, n] : counts) text += name + " " + std::to_string(n) + "\n";
  if (buf != nullptr && size > 0) {
    const size_t n = std::min(size - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return text.size();
}
}  // namespace

extern "C" {

void xpu_sim_count_call(int which) {
  if (which >= 0 && which < XPU_SIM_COUNTED_CALLS) {
    g_counted_calls[which].fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t xpu_sim_call_count(int which) {
  return which >= 0 && which < XPU_SIM_COUNTED_CALLS
             ? g_counted_calls[which].load(std::memory_order_relaxed)
             : 0;
}

void xpu_sim_note_call(const char* entry_point, const void* return_address) {
  if (entry_point != nullptr && from_inject(return_address)) {
    count_entry(on_library_thread() ? g_library_entries : g_user_entries, entry_point);
  }
}

size_t xpu_sim_user_thread_calls(char* buf, size_t size) {
  return format_entries(g_user_entries, buf, size);
}

size_t xpu_sim_library_thread_calls(char* buf, size_t size) {
  return format_entries(g_library_entries, buf, size);
}

uint64_t xpu_sim_now_ns(void) { return sim::now_ns(); }

void xpu_sim_sleep_until_ns(uint64_t deadline_ns) { sim::sleep_until_ns(deadline_ns); }

cudaError_t xpu_sim_launch_kernel(cudaStream_t handle, uint64_t duration_ns) {
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  if (!stream) return cudaErrorInvalidResourceHandle;
  sim::launch_kernel(*stream, duration_ns);
  return cudaSuccess;
}

cudaError_t xpu_sim_enqueue_task(cudaStream_t handle, xpu_sim_task_fn fn, void* arg,
                                 void (*destroy)(void*), int* dropped) {
  if (dropped != nullptr) *dropped = 0;
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  if (!stream || fn == nullptr) {
    if (destroy != nullptr) destroy(arg);
    return stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle;
  }
  const bool queued = stream->enqueue([fn, arg, destroy](uint64_t start) {
    const uint64_t end = fn(arg, start);
    if (destroy != nullptr) destroy(arg);
    return end;
  });
  if (!queued) {
    if (destroy != nullptr) destroy(arg);
    if (dropped != nullptr) *dropped = 1;
  }
  return cudaSuccess;
}

int xpu_sim_stream_is_capturing(cudaStream_t handle) {
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  return stream && stream->capturing(nullptr) ? 1 : 0;
}

uint64_t xpu_sim_captured_kernel_count(void) { return sim::captured_kernel_count(); }

}  // extern "C"
