// NVTX's injection entry point and the range callbacks (inject/nvtx_ranges.h).
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <initializer_list>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "common/clock.h"
#include "common/log.h"
#include "inject/hook_export.h"
#include "inject/nvtx_ranges.h"
#include "inject/runtime.h"
#include "inject/settings.h"

namespace xpu_timer::inject {
namespace {

// ---- where finished ranges go ----

__attribute__((tls_model("initial-exec"))) thread_local uint32_t t_tid = 0;

uint32_t this_tid() { return this_thread_id(); }
void emit(const RangeRecord& r) { emit_host_event(r); }

void count_dropped() {
  if (mode() != Mode::kActive) return;
  if (RuntimeState* st = runtime_state(); st != nullptr) {
    st->counters.ranges_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

// ---- names ----

constexpr char kUnnamed[] = "(unnamed)";

// A registered string's handle: its name id + 1, as a pointer; kIgnoredString
// for strings of an ignored domain.
nvtxStringHandle_t handle_of(uint16_t id) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id) + 1);
}
const auto kIgnoredString = reinterpret_cast<nvtxStringHandle_t>(~uintptr_t{0});

// A wide name as printable ASCII (others '?') into `buf`, cut to size - 1.
size_t narrow(const wchar_t* w, char* buf, size_t size) {
  size_t n = 0;
  for (; w != nullptr && w[n] != L'\0' && n < size - 1; ++n) {
    buf[n] = (w[n] >= 0x20 && w[n] < 0x7f) ? static_cast<char>(w[n]) : '?';
  }
  buf[n] = '\0';
  return n;
}

uint16_t intern_wide(const wchar_t* w) {
  char buf[proto::kRangeNameBytes];
  return range_names().intern(buf, narrow(w, buf, sizeof(buf)));
}

uint16_t intern_ascii(const char* s) {
  if (s == nullptr) return range_names().intern(kUnnamed, sizeof(kUnnamed) - 1);
  return range_names().intern(s, strnlen(s, proto::kRangeNameBytes - 1));
}

uint16_t name_of(const nvtxEventAttributes_t* a) {
  // The attributes' size tells which fields the caller filled in.
  const size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof(a->message);
  if (a == nullptr || a->size < need) return intern_ascii(nullptr);
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return intern_ascii(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return a->message.unicode != nullptr ? intern_wide(a->message.unicode)
                                           : intern_ascii(nullptr);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const auto h = reinterpret_cast<uintptr_t>(a->message.registered);
      if (h != 0 && h - 1 < range_names().size()) return static_cast<uint16_t>(h - 1);
      return intern_ascii(nullptr);
    }
    default:
      return intern_ascii(nullptr);
  }
}

// ---- domains ----

// Our handle for a named domain: whether its ranges are recorded.
struct Domain {
  bool enabled;
};

bool domain_listed(const char* name) {
  const char* list = settings().nvtx_domains;
  if (name == nullptr) return false;
  const size_t n = std::strlen(name);
  for (const char* p = list; *p != '\0';) {
    const char* end = std::strchr(p, ',');
    const size_t len = end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p);
    if ((len == 1 && *p == '*') || (len == n && std::strncmp(p, name, n) == 0)) return true;
    if (end == nullptr) break;
    p = end + 1;
  }
  return false;
}

// The default domain (a null handle) is always recorded.
bool recorded(nvtxDomainHandle_t d) {
  return d == nullptr || reinterpret_cast<const Domain*>(d)->enabled;
}

// ---- push/pop: per thread ----

struct ThreadStack {
  uint64_t start_ns[kMaxRangeDepth];
  uint16_t name[kMaxRangeDepth];
  int depth;  // may exceed kMaxRangeDepth: those levels are counted, not kept
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadStack t_stack{};

int push(uint16_t name) {
  ThreadStack& s = t_stack;
  const int level = s.depth++;
  if (level < kMaxRangeDepth) {
    s.name[level] = name;
    s.start_ns[level] = monotonic_ns();
  }
  return level;
}

int pop() {
  ThreadStack& s = t_stack;
  if (s.depth == 0) return -1;  // a pop without a push on this thread
  const int level = --s.depth;
  if (level >= kMaxRangeDepth) {
    count_dropped();
    return level;
  }
  RangeRecord r{};
  r.start_ns = s.start_ns[level];
  r.end_ns = monotonic_ns();
  r.tid = this_tid();
  r.depth = static_cast<int16_t>(level);
  r.name_id = s.name[level];
  emit(r);
  return level;
}

// ---- start/end: any thread ----

struct Open {
  uint64_t start_ns;
  uint32_t tid;
  uint16_t name;
};

struct OpenRanges {
  std::mutex mu;
  std::unordered_map<uint64_t, Open> open;
  uint64_t next_id = 1;
};
OpenRanges& open_ranges() {
  static auto* o = new OpenRanges;  // never destroyed: ranges may end during exit
  return *o;
}

nvtxRangeId_t start(uint16_t name) {
  const Open o{monotonic_ns(), this_tid(), name};
  OpenRanges& all = open_ranges();
  std::lock_guard<std::mutex> lock(all.mu);
  const uint64_t id = all.next_id++;
  if (all.open.size() >= static_cast<size_t>(kMaxOpenRanges)) {
    count_dropped();  // never ended ones pile up: stop growing
    return id;
  }
  try {
    all.open.emplace(id, o);
  } catch (...) {
    count_dropped();
  }
  return id;
}

void end(nvtxRangeId_t id) {
  Open o{};
  {
    OpenRanges& all = open_ranges();
    std::lock_guard<std::mutex> lock(all.mu);
    auto it = all.open.find(id);
    if (it == all.open.end()) return;  // not ours, already ended, or dropped
    o = it->second;
    all.open.erase(it);
  }
  RangeRecord r{};
  r.start_ns = o.start_ns;
  r.end_ns = monotonic_ns();
  r.tid = o.tid;
  r.depth = -1;
  r.name_id = o.name;
  emit(r);
}

// ---- the callbacks NVTX calls ----

int NVTX_API range_push_a(const char* message) { return push(intern_ascii(message)); }
int NVTX_API range_push_w(const wchar_t* message) {
  return push(message != nullptr ? intern_wide(message) : intern_ascii(nullptr));
}
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) { return push(name_of(a)); }
int NVTX_API range_pop() { return pop(); }
nvtxRangeId_t NVTX_API range_start_a(const char* message) { return start(intern_ascii(message)); }
nvtxRangeId_t NVTX_API range_start_w(const wchar_t* message) {
  return start(message != nullptr ? intern_wide(message) : intern_ascii(nullptr));
}
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* a) { return start(name_of(a)); }
void NVTX_API range_end(nvtxRangeId_t id) { end(id); }

int NVTX_API domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return recorded(d) ? push(name_of(a)) : NVTX_NO_PUSH_POP_TRACKING;
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t d) {
  return recorded(d) ? pop() : NVTX_NO_PUSH_POP_TRACKING;
}
nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return recorded(d) ? start(name_of(a)) : 0;
}
void NVTX_API domain_range_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  if (recorded(d)) end(id);
}
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t d, const char* s) {
  return recorded(d) ? handle_of(intern_ascii(s)) : kIgnoredString;
}
nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t d, const wchar_t* s) {
  if (!recorded(d)) return kIgnoredString;
  return handle_of(s != nullptr ? intern_wide(s) : intern_ascii(nullptr));
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new (std::nothrow) Domain{domain_listed(name)});
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  char buf[128];
  narrow(name, buf, sizeof(buf));
  return reinterpret_cast<nvtxDomainHandle_t>(new (std::nothrow) Domain{domain_listed(buf)});
}
// A destroyed domain's handle may still be used by a late call: it is kept.
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}

struct Entry {
  unsigned id;
  NvtxFunctionPointer fn;
};

// Fills the entries of one module's function table that NVTX offers.
void install(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module,
             std::initializer_list<Entry> entries) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(module, &table, &size) || table == nullptr) return;
  for (const Entry& e : entries) {
    if (e.id < size && table[e.id] != nullptr) *table[e.id] = e.fn;
  }
}

template <typename F>
NvtxFunctionPointer fp(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

uint32_t this_thread_id() {
  if (t_tid == 0) t_tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  return t_tid;
}

void emit_host_event(const RangeRecord& r) {
  if (mode() != Mode::kActive) return;  // never starts the runtime
  RuntimeState* st = runtime_state();
  if (st == nullptr) return;
  if (!st->ranges.try_push(r)) st->counters.ranges_dropped.fetch_add(1, std::memory_order_relaxed);
}

RangeNames& range_names() {
  static auto* names = new RangeNames;  // never destroyed: see open_ranges()
  return *names;
}

int step_range_id() {
  static const int id = [] {
    const char* name = settings().step_range;
    if (name[0] == '\0') return -1;
    return static_cast<int>(range_names().intern(name, std::strlen(name)));
  }();
  return id;
}

}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: the C entry point below

// Called by every NVTX client module at its first NVTX call, when
// NVTX_INJECTION64_PATH names this library. 1: injected; 0: NVTX turns the
// module's calls into no-ops.
XPU_TIMER_HOOK int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    XPU_TIMER_LOG_WARN("NVTX gave no callback table: its ranges are not recorded");
    return 0;
  }
  step_range_id();  // interned first, so that a full table never swallows it
  install(callbacks, NVTX_CB_MODULE_CORE,
          {{NVTX_CBID_CORE_RangeStartEx, fp(&range_start_ex)},
           {NVTX_CBID_CORE_RangeStartA, fp(&range_start_a)},
           {NVTX_CBID_CORE_RangeStartW, fp(&range_start_w)},
           {NVTX_CBID_CORE_RangeEnd, fp(&range_end)},
           {NVTX_CBID_CORE_RangePushEx, fp(&range_push_ex)},
           {NVTX_CBID_CORE_RangePushA, fp(&range_push_a)},
           {NVTX_CBID_CORE_RangePushW, fp(&range_push_w)},
           {NVTX_CBID_CORE_RangePop, fp(&range_pop)}});
  install(callbacks, NVTX_CB_MODULE_CORE2,
          {{NVTX_CBID_CORE2_DomainRangeStartEx, fp(&domain_range_start_ex)},
           {NVTX_CBID_CORE2_DomainRangeEnd, fp(&domain_range_end)},
           {NVTX_CBID_CORE2_DomainRangePushEx, fp(&domain_range_push_ex)},
           {NVTX_CBID_CORE2_DomainRangePop, fp(&domain_range_pop)},
           {NVTX_CBID_CORE2_DomainRegisterStringA, fp(&domain_register_string_a)},
           {NVTX_CBID_CORE2_DomainRegisterStringW, fp(&domain_register_string_w)},
           {NVTX_CBID_CORE2_DomainCreateA, fp(&domain_create_a)},
           {NVTX_CBID_CORE2_DomainCreateW, fp(&domain_create_w)},
           {NVTX_CBID_CORE2_DomainDestroy, fp(&domain_destroy)}});
  return 1;
}

// Called by python_probes.py after every optimizer step (ctypes, GIL held):
// the time since the previous one is a step.
XPU_TIMER_HOOK void xpu_timer_python_step() {
  static std::atomic<uint64_t> last{0};
  const uint64_t now = xpu_timer::monotonic_ns();
  const uint64_t prev = last.exchange(now, std::memory_order_relaxed);
  if (prev == 0 || step_range_id() >= 0) return;  // the first one only starts the clock
  RangeRecord r{};
  r.start_ns = prev;
  r.end_ns = now;
  r.tid = this_tid();
  r.depth = 0;
  r.kind = HostEvent::kStep;
  emit(r);
}
