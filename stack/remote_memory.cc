#include "stack/remote_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace xpu_timer::stack {

bool RemoteMemory::read(uint64_t addr, void* dst, size_t len) const {
  if (len == 0) return true;
  if (addr == 0 || addr + len < addr) return false;
  if (!vm_readv_broken_) {
    iovec local{dst, len};
    iovec remote{reinterpret_cast<void*>(addr), len};
    ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n == static_cast<ssize_t>(len)) return true;
    // EFAULT / short read: the address is not mapped; /proc/PID/mem would not
    // do better. ENOSYS or EPERM (seccomp, some containers): use the fallback.
    if (n >= 0 || errno == EFAULT || errno == ESRCH) return false;
    vm_readv_broken_ = true;
  }
  if (!mem_fd_.valid()) {
    std::string path = "/proc/" + std::to_string(pid_) + "/mem";
    mem_fd_.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!mem_fd_.valid()) return false;
  }
  ssize_t n = pread(mem_fd_.get(), dst, len, static_cast<off_t>(addr));
  return n == static_cast<ssize_t>(len);
}

}  // namespace xpu_timer::stack
