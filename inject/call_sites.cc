#include "inject/call_sites.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/parse_number.h"
#include "inject/bench_parts.h"
#include "inject/settings.h"
#include "stack/line_table.h"
#include "stack/python_layouts.h"

namespace xpu_timer::inject {
namespace {

using stack::kNoField;
using stack::PyLayout;

// Frames followed from the innermost, at most: a site deeper in library
// code than this is not found (the innermost frame is named instead).
constexpr int kMaxWalk = 64;
// Characters of a name or path read out of a string object, at most.
constexpr int64_t kMaxChars = 4096;
// Bytes of a line table read, at most (a function of thousands of lines).
constexpr int64_t kMaxLineTable = 1 << 20;

struct Interpreter {
  PyLayout layout;
  bool interp_frames = false;
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
  uintptr_t code_type = 0;                 // &PyCode_Type
  std::vector<std::string> skip;           // library path fragments
};

enum : int { kUnknown = 0, kReady = 1, kOff = 2 };
std::atomic<int> g_state{kUnknown};
std::once_flag g_once;
Interpreter g_interp;

template <typename T>
T at(uintptr_t base, int64_t offset) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void*>(base + static_cast<uintptr_t>(offset)), sizeof(v));
  return v;
}

std::vector<std::string> skip_fragments() {
  // Empty: nothing is library code.
  const std::string list = settings().call_site_skip;
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const size_t end = comma == std::string::npos ? list.size() : comma;
    if (end > start) out.push_back(list.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The running interpreter's layout, or false (not a Python process, a
// version whose layout we do not know): the sites stay off.
bool find_interpreter(Interpreter* out) {
  if (!settings().call_sites) return false;
  const auto version_fn = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
  out->this_thread_state =
      reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  out->code_type = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "PyCode_Type"));
  if (version_fn == nullptr || out->this_thread_state == nullptr || out->code_type == 0) {
    return false;
  }
  const char* version = version_fn();  // "3.12.1 (main, ...) [GCC ...]"
  if (version == nullptr) return false;
  std::string_view text = version;
  const std::optional<int64_t> major_number = take_int(&text);
  if (!major_number || text.empty() || text.front() != '.') return false;
  text.remove_prefix(1);
  const std::optional<int64_t> minor_number = take_int(&text);
  if (!minor_number) return false;
  const int major = static_cast<int>(*major_number);
  const int minor = static_cast<int>(*minor_number);
  std::optional<PyLayout> layout = stack::layout_for_version(major, minor);
  if (!layout && major == 3 && minor >= 13) {
    const auto* runtime = static_cast<const uint8_t*>(dlsym(RTLD_DEFAULT, "_PyRuntime"));
    uint64_t hex = 0;
    std::string error;
    if (runtime != nullptr) {
      layout =
          stack::layout_from_debug_offsets(runtime, stack::kDebugOffsetsReadSize, &hex, &error);
    }
    if (!layout) {
      XPU_TIMER_LOG_INFO("Python %d.%d: collectives' call sites are not recorded (%s)", major,
                         minor, error.empty() ? "no _PyRuntime" : error.c_str());
      return false;
    }
  }
  if (!layout) return false;
  out->layout = *layout;
  out->interp_frames = layout->frame_model == stack::FrameModel::kInterpreterFrame;
  out->skip = skip_fragments();
  return true;
}

const Interpreter* interpreter() {
  const int s = g_state.load(std::memory_order_acquire);
  if (s == kReady) return &g_interp;
  if (s == kOff) return nullptr;
  std::call_once(g_once, [] {
    g_state.store(find_interpreter(&g_interp) ? kReady : kOff, std::memory_order_release);
  });
  return g_state.load(std::memory_order_acquire) == kReady ? &g_interp : nullptr;
}

// A str object's text, characters outside ASCII as '?'; "" when it is not a
// compact string (never the case for a code object's names).
std::string text_of(const PyLayout& l, uintptr_t str) {
  if (str == 0) return {};
  const uint32_t state = at<uint32_t>(str, l.unicode_state);
  const int64_t length = at<int64_t>(str, 16);
  const unsigned kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact || length < 0 || length > kMaxChars) return {};
  if (ascii) return std::string(reinterpret_cast<const char*>(str + l.unicode_ascii_size), length);
  if (kind != 1 && kind != 2 && kind != 4) return {};
  std::string out(static_cast<size_t>(length), '?');
  const auto* data = reinterpret_cast<const uint8_t*>(str + l.unicode_compact_size);
  for (int64_t i = 0; i < length; ++i) {
    uint32_t cp = 0;
    std::memcpy(&cp, data + i * kind, kind);  // little endian
    if (cp >= 0x20 && cp < 0x7f) out[static_cast<size_t>(i)] = static_cast<char>(cp);
  }
  return out;
}

bool is_library(const Interpreter& in, const std::string& file) {
  for (const std::string& f : in.skip) {
    if (file.find(f) != std::string::npos) return true;
  }
  return false;
}

// Per-thread caches, direct-mapped by code object (and offset). An entry
// also keeps the code's file object and first line: a code object freed and
// another made at its address is a miss, not a wrong answer.
struct CodeSlot {
  uintptr_t code = 0;
  uintptr_t file = 0;
  bool library = false;
};
struct SiteSlot {
  uintptr_t code = 0;
  uintptr_t file = 0;
  int64_t addrq = 0;
  int32_t firstlineno = 0;
  int id = -1;
};
constexpr size_t kSlots = 256;
thread_local CodeSlot t_codes[kSlots];
thread_local SiteSlot t_sites[kSlots];

size_t slot_of(uintptr_t code, int64_t addrq) {
  return ((code >> 4) ^ (code >> 12) ^ static_cast<uintptr_t>(addrq) * 0x9e3779b1u) & (kSlots - 1);
}

bool library_code(const Interpreter& in, uintptr_t code) {
  const uintptr_t file = at<uintptr_t>(code, in.layout.code_filename);
  CodeSlot& slot = t_codes[slot_of(code, 0)];
  if (slot.code != code || slot.file != file) {
    slot.code = code;
    slot.file = file;
    slot.library = is_library(in, text_of(in.layout, file));
  }
  return slot.library;
}

// The byte offset of a frame's current instruction in its code (what
// PyCode_Addr2Line takes); -1 when unknown.
int64_t addrq_of(const Interpreter& in, uintptr_t frame, uintptr_t code) {
  const PyLayout& l = in.layout;
  if (!in.interp_frames) {
    const int32_t lasti = at<int32_t>(frame, l.frame_lasti);
    return l.lasti_in_code_units ? int64_t{lasti} * 2 : lasti;
  }
  const uintptr_t instr = at<uintptr_t>(frame, l.frame_instr);
  const uintptr_t start = code + static_cast<uintptr_t>(l.code_code_adaptive);
  return instr >= start ? static_cast<int64_t>(instr - start) : -1;
}

int line_of(const PyLayout& l, uintptr_t code, int32_t firstlineno, int64_t addrq) {
  const uintptr_t table = at<uintptr_t>(code, l.code_linetable);
  if (table == 0 || addrq > (1 << 30)) return 0;
  const int64_t size = at<int64_t>(table, l.bytes_size);
  if (size < 0 || size > kMaxLineTable) return 0;
  const std::string bytes(reinterpret_cast<const char*>(table + l.bytes_sval),
                          static_cast<size_t>(size));
  const int a = static_cast<int>(addrq);
  int line = -1;
  switch (l.line_table) {
    case stack::LineTableFormat::kLnotab:
      line = stack::lnotab_line(bytes, firstlineno, a);
      break;
    case stack::LineTableFormat::kLinetable310:
      line = stack::linetable310_line(bytes, firstlineno, a);
      break;
    case stack::LineTableFormat::kLocations:
      line = stack::location_table_line(bytes, firstlineno, a);
      break;
  }
  return line > 0 ? line : 0;
}

}  // namespace

int CallSites::capture() {
  if (bench_part_off(BenchPart::kCallSites)) return -1;
  const Interpreter* in = interpreter();
  if (in == nullptr) return -1;
  const PyLayout& l = in->layout;
  const auto tstate = reinterpret_cast<uintptr_t>(in->this_thread_state());
  if (tstate == 0) return -1;  // no Python thread state on this thread
  uintptr_t frame = 0;
  if (l.tstate_cframe != kNoField) {
    const uintptr_t cframe = at<uintptr_t>(tstate, l.tstate_cframe);
    frame = cframe != 0 ? at<uintptr_t>(cframe, l.cframe_current_frame) : 0;
  } else {
    frame = at<uintptr_t>(tstate, l.tstate_frame);
  }
  uintptr_t site_frame = 0, site_code = 0;
  for (int depth = 0; frame != 0 && depth < kMaxWalk;
       ++depth, frame = at<uintptr_t>(frame, l.frame_back)) {
    if (in->interp_frames && l.frame_owner != kNoField &&
        at<uint8_t>(frame, l.frame_owner) == stack::kFrameOwnedByCStack) {
      continue;  // the shim of a C call into the interpreter
    }
    const uintptr_t code = at<uintptr_t>(frame, l.frame_code);
    if (code == 0 || at<uintptr_t>(code, 8) != in->code_type) continue;  // not a code object
    const bool library = library_code(*in, code);
    if (site_frame == 0 || !library) {
      site_frame = frame;
      site_code = code;
    }
    if (!library) break;
  }
  if (site_frame == 0) return -1;
  const int64_t addrq = addrq_of(*in, site_frame, site_code);
  const uintptr_t file = at<uintptr_t>(site_code, l.code_filename);
  const int32_t firstlineno = at<int32_t>(site_code, l.code_firstlineno);
  SiteSlot& slot = t_sites[slot_of(site_code, addrq)];
  if (slot.code == site_code && slot.addrq == addrq && slot.file == file &&
      slot.firstlineno == firstlineno) {
    return slot.id;
  }
  recorder::SiteEntry e;
  e.line = line_of(l, site_code, firstlineno, addrq);
  const std::string name = text_of(l, at<uintptr_t>(site_code, l.code_name));
  std::snprintf(e.function, sizeof(e.function), "%s", name.c_str());
  const std::string path = text_of(l, file);
  const size_t keep = std::min(path.size(), sizeof(e.file) - 1);
  std::memcpy(e.file, path.data() + (path.size() - keep), keep);
  const int id = intern(e);
  slot = SiteSlot{site_code, file, addrq, firstlineno, id};
  return id;
}

int CallSites::intern(const recorder::SiteEntry& e) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t n = size_.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    const recorder::SiteEntry& k = entries_[i];
    if (k.line == e.line && std::strcmp(k.function, e.function) == 0 &&
        std::strcmp(k.file, e.file) == 0) {
      return static_cast<int>(i);
    }
  }
  if (n >= kCapacity) return -1;
  entries_[n] = e;
  size_.store(n + 1, std::memory_order_release);
  return static_cast<int>(n);
}

CallSites& call_sites() {
  static CallSites* const table = new CallSites();  // never destroyed: hooks may run at exit
  return *table;
}

}  // namespace xpu_timer::inject
