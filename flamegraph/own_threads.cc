#include "flamegraph/own_threads.h"

#include <string_view>

namespace xpu_timer::flamegraph {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Modules every thread's stack passes through whoever started it: the thread
// start (start_thread, clone3), std::thread's trampoline, syscall wrappers.
bool is_thread_plumbing(std::string_view module) {
  for (std::string_view p : {"libc.so", "libc-", "libpthread", "ld-linux", "libstdc++"}) {
    if (starts_with(module, p)) return true;
  }
  return false;
}

}  // namespace

bool is_xpu_timer_thread(const stack::ThreadStack& thread) {
  if (starts_with(thread.name, "xpu_timer_")) return true;
  bool ours = false;
  for (const stack::NativeFrame& f : thread.native) {
    const std::string_view module = basename(f.module);
    if (starts_with(module, "libxpu_timer_inject")) {
      ours = true;
    } else if (!is_thread_plumbing(module)) {
      return false;
    }
  }
  return ours;
}

}  // namespace xpu_timer::flamegraph
