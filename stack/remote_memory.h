// Reads another process's memory: process_vm_readv, falling back to
// /proc/PID/mem when the syscall is unavailable or refused. Every read is
// bounded by its caller's buffer and fully checked: a short read is a failure.
// Not thread-safe (the fallback fd is opened lazily); one per collection.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/unique_fd.h"

namespace xpu_timer::stack {

class RemoteMemory {
 public:
  explicit RemoteMemory(pid_t pid) : pid_(pid) {}
  RemoteMemory(const RemoteMemory&) = delete;
  RemoteMemory& operator=(const RemoteMemory&) = delete;

  bool read(uint64_t addr, void* dst, size_t len) const;

  template <typename T>
  bool read_value(uint64_t addr, T* out) const {
    return read(addr, out, sizeof(T));
  }
  // Pointer-sized read; 0 on failure (never a valid object address).
  uint64_t read_ptr(uint64_t addr) const {
    uint64_t v = 0;
    return read_value(addr, &v) ? v : 0;
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
  mutable UniqueFd mem_fd_;
  mutable bool vm_readv_broken_ = false;
};

}  // namespace xpu_timer::stack
