// Reads CPython's thread states and frames out of a target's memory.
//
// find() locates the interpreter before the target is stopped: the
// _PyRuntime symbol in the executable or a mapped libpython3*, the version
// (Py_Version on 3.11+, PY_VERSION in .rodata or the file name before) and
// the layout (python_layouts.h). read() must run while the target is stopped
// so the linked lists do not change under us; every pointer it follows is
// bounded (kMaxFrames, kMaxThreads, cycle checks) and every read is checked.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "stack/proc_maps.h"
#include "stack/python_layouts.h"
#include "stack/remote_memory.h"
#include "stack/stack_types.h"

namespace xpu_timer::stack {

struct PythonThreadState {
  uint64_t tstate = 0;
  uint64_t thread_id = 0;           // pthread_t (== fs_base of that thread on x86_64 glibc)
  int64_t native_tid = -1;          // -1 when the version has no native_thread_id
  std::vector<PythonFrame> frames;  // innermost first
};

struct PythonSnapshot {
  std::vector<PythonThreadState> threads;
  // Thread state holding the GIL: 0 = nobody; nullopt = could not tell.
  std::optional<uint64_t> gil_holder;
  std::vector<std::string> errors;
};

class PythonReader {
 public:
  static constexpr size_t kMaxFrames = 1024;
  static constexpr size_t kMaxThreads = 4096;

  // nullptr and *note ("no Python interpreter found ...") if pid is not a
  // (supported) CPython process.
  static std::unique_ptr<PythonReader> find(pid_t pid, const std::vector<MapEntry>& maps,
                                            const RemoteMemory& mem, std::string* note);

  const std::string& version() const { return version_; }
  const std::string& binary() const { return binary_; }

  PythonSnapshot read(const RemoteMemory& mem);

 private:
  struct CodeInfo {
    std::string name;
    std::string file;
    int firstlineno = 0;
    std::string linetable;
    bool ok = false;
  };

  PythonReader() = default;
  std::optional<std::string> read_unicode(const RemoteMemory& mem, uint64_t addr) const;
  std::optional<std::string> read_bytes(const RemoteMemory& mem, uint64_t addr) const;
  const CodeInfo& code_info(const RemoteMemory& mem, uint64_t code);
  int line_for(const CodeInfo& info, int64_t addrq) const;
  void read_frames(const RemoteMemory& mem, uint64_t tstate, PythonThreadState* out,
                   std::vector<std::string>* errors);
  std::optional<uint64_t> read_gil_holder(const RemoteMemory& mem, uint64_t interp) const;

  PyLayout layout_;
  uint64_t runtime_ = 0;
  std::string version_;
  std::string binary_;
  std::unordered_map<uint64_t, CodeInfo> codes_;
};

}  // namespace xpu_timer::stack
