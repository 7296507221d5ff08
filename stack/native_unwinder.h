// Native unwinding and symbolization of one process with elfutils libdwfl.
//
// One NativeUnwinder per collected process: the Dwfl (module list from
// /proc/PID/maps, ELF/DWARF/CFI of every library, which for the CUDA
// libraries is hundreds of MB) is loaded lazily once and reused for every
// thread; symbolized frames are cached by pc. Threads are handed in with the
// registers the PtraceSession read, and memory is read with process_vm_readv
// through a page cache, so this class issues no ptrace request and may run on
// any thread (unwinding must still happen while the threads are stopped;
// symbolize() may run after detach).
//
// Across ranks: a Dwfl is bound to one address space, so it cannot be shared.
// Ranks running the same binaries would share the symbolization work through
// a cache keyed by (module path, offset) -> frames; symbolize() is the place
// for it (not done yet: each rank is collected in its own process/thread).
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "stack/stack_types.h"

typedef struct Dwfl Dwfl;

namespace xpu_timer::stack {

struct RawFrame {
  uint64_t pc = 0;
  bool activation = false;  // the innermost frame (pc not a return address)
};

class NativeUnwinder {
 public:
  // Reports the modules of pid (reads /proc/PID/maps; ELF files are opened
  // lazily). nullptr and *error on failure.
  static std::unique_ptr<NativeUnwinder> create(pid_t pid, std::string* error);
  ~NativeUnwinder();
  NativeUnwinder(const NativeUnwinder&) = delete;
  NativeUnwinder& operator=(const NativeUnwinder&) = delete;

  // Registers the stopped threads (call once, before unwind()).
  bool set_threads(const std::map<pid_t, user_regs_struct>& regs, std::string* error);

  // Raw pcs of one stopped thread, innermost first (at most max_frames).
  // Returns false (with *error) only if no frame at all could be found.
  bool unwind(pid_t tid, std::vector<RawFrame>* frames, std::string* error,
              size_t max_frames = 256);

  // Names, modules, source lines and inlined frames for raw pcs.
  std::vector<NativeFrame> symbolize(const std::vector<RawFrame>& frames);

  // Drops the memory cache (call after the process is resumed: it is stale).
  void drop_memory_cache() { pages_.clear(); }

 private:
  NativeUnwinder() = default;
  static bool memory_read_cb(Dwfl* dwfl, uint64_t addr, uint64_t* result, void* arg);
  static int next_thread_cb(Dwfl* dwfl, void* arg, void** thread_arg);
  static bool get_thread_cb(Dwfl* dwfl, pid_t tid, void* arg, void** thread_arg);
  bool read_word(uint64_t addr, uint64_t* out);
  const std::vector<NativeFrame>& symbolize_pc(uint64_t pc, bool activation);

  pid_t pid_ = 0;
  Dwfl* dwfl_ = nullptr;
  std::map<pid_t, user_regs_struct> regs_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;             // page address -> bytes
  std::unordered_map<uint64_t, std::vector<NativeFrame>> symbol_cache_;  // pc*2+activation
};

}  // namespace xpu_timer::stack
