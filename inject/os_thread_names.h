// OS names (/proc/self/task/TID/comm) for the threading.Threads of a Python
// rank, so that a stack file and `xpu_timer_stack --pid` name each Python
// thread by its Python name, as CPython 3.14 does natively. Called by the
// Python probes (inject/python_probes.py, through python_probes.cc's
// exported xpu_timer_python_name_thread) with the GIL held: never on the hot
// path. Thread-safe (one mutex) all the same.
//
// A thread that named itself (PyTorch names its threads "pt_autograd_0")
// keeps its name: only a thread whose name is still one it inherited is
// renamed, that is the process's own name (now, or when first called: the
// main thread may rename itself later) or a name this file gave another
// thread (a thread started by a renamed thread inherits its name).
#pragma once

#include <sys/types.h>

#include <string_view>

namespace xpu_timer::inject {

enum class OsThreadNaming {
  kNamed,    // its comm now holds `name` (cut to 15 bytes)
  kOwnName,  // it named itself: left alone
  kFailed,   // /proc could not be read or written (errno set), or a bad argument
};

// Gives thread `tid` of this process the OS name `name` (its first 15 bytes,
// the kernel's limit, up to a NUL) unless it named itself.
OsThreadNaming name_os_thread(pid_t tid, std::string_view name);

}  // namespace xpu_timer::inject
