#include "stack/user_frames.h"

#include <string_view>

namespace xpu_timer::stack {
namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_own_thread(const ThreadStack& t) { return starts_with(t.name, "xpu_timer_"); }

// The main thread (tid == pid; the writer lists it first), else the first
// thread that is not ours and has a frame.
const ThreadStack* chosen_thread(const ProcessStack& stack) {
  for (const ThreadStack& t : stack.threads) {
    if (t.tid == stack.pid && !is_own_thread(t) && (!t.python.empty() || !t.native.empty())) {
      return &t;
    }
  }
  for (const ThreadStack& t : stack.threads) {
    if (!is_own_thread(t) && (!t.python.empty() || !t.native.empty())) return &t;
  }
  return nullptr;
}

CodeFrame code_frame(const PythonFrame& f) { return CodeFrame{f.func, f.file, f.line, true}; }

CodeFrame code_frame(const NativeFrame& f) {
  return f.file.empty() ? CodeFrame{f.func, f.module, 0, false}
                        : CodeFrame{f.func, f.file, f.line, false};
}

// The frame at `pick` and the next one outwards.
template <typename Frame>
std::vector<CodeFrame> frame_and_caller(const std::vector<Frame>& frames, size_t pick) {
  std::vector<CodeFrame> out{code_frame(frames[pick])};
  if (pick + 1 < frames.size()) out.push_back(code_frame(frames[pick + 1]));
  return bounded_where(std::move(out));
}

}  // namespace

bool is_library_python_file(const std::string& file) {
  // "<frozen runpy>", and "<string>": the code the injected library runs in
  // the rank (its probes and excepthook) has no file.
  if (starts_with(file, "<")) return true;
  const bool installed = contains(file, "/site-packages/") || contains(file, "/dist-packages/");
  if (installed) return contains(file, "-packages/torch/");
  // The standard library: .../lib/python3.12/threading.py (not a venv's
  // site-packages, handled above).
  return contains(file, "/lib/python3") || contains(file, "/lib64/python3");
}

bool is_library_module(const std::string& module) {
  const std::string_view name = base_name(module);
  for (std::string_view p :
       {"libc.so", "libc-", "libpthread", "ld-linux", "ld-2.", "libstdc++", "libgcc_s", "libm.so",
        "linux-vdso", "libxpu_timer_inject", "libpython", "libcuda", "libcudart", "libcublas",
        "libnccl"}) {
    if (starts_with(name, p)) return true;
  }
  return false;
}

std::vector<CodeFrame> user_frames(const ProcessStack& stack) {
  const ThreadStack* t = chosen_thread(stack);
  if (t == nullptr) return {};
  if (!t->python.empty()) {
    for (size_t i = 0; i < t->python.size(); ++i) {
      if (!is_library_python_file(t->python[i].file)) return frame_and_caller(t->python, i);
    }
    return frame_and_caller(t->python, 0);
  }
  size_t named = t->native.size();
  for (size_t i = 0; i < t->native.size(); ++i) {
    const NativeFrame& f = t->native[i];
    if (f.func.empty() || f.func == "??") continue;
    if (named == t->native.size()) named = i;
    if (!is_library_module(f.module)) return frame_and_caller(t->native, i);
  }
  if (named == t->native.size()) return {};
  return frame_and_caller(t->native, named);
}

}  // namespace xpu_timer::stack
