#include "inject/status_page_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "inject/clock.h"

namespace xpu_timer::inject {

bool StatusPageWriter::create(const char* run_dir, const RankIdentity& id, int pid) {
  const int n = std::snprintf(path_, sizeof(path_), "%s/rank-%d-%d.page", run_dir, id.rank, pid);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(path_)) {
    XPU_TIMER_LOG_WARN("status page path under %s is longer than %zu bytes; timing is off", run_dir,
                       sizeof(path_) - 1);
    path_[0] = '\0';
    return false;
  }
  // A stale file of the same name (pid reuse) may still be mapped by the
  // supervisor: never truncate it (its reader would get SIGBUS), replace it.
  ::unlink(path_);
  fd_ = ::open(path_, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    XPU_TIMER_LOG_WARN("open(%s) failed: %s; timing is off", path_, std::strerror(errno));
    return false;
  }
  if (::ftruncate(fd_, sizeof(proto::StatusPage)) != 0) {
    XPU_TIMER_LOG_WARN("ftruncate(%s) failed: %s; timing is off", path_, std::strerror(errno));
    unlink_file();
    return false;
  }
  void* mem =
      ::mmap(nullptr, sizeof(proto::StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mem == MAP_FAILED) {
    XPU_TIMER_LOG_WARN("mmap(%s) failed: %s; timing is off", path_, std::strerror(errno));
    unlink_file();
    return false;
  }
  page_ = static_cast<proto::StatusPage*>(mem);  // ftruncate zero-filled it
  page_->version = proto::kProtocolVersion;
  page_->page_bytes = sizeof(proto::StatusPage);
  page_->pid = pid;
  page_->rank = id.rank;
  page_->local_rank = id.local_rank;
  page_->world_size = id.world_size;
  page_->local_world_size = id.local_world_size;
  page_->group_rank = id.group_rank;
  page_->created_mono_ns = monotonic_ns();
  page_->created_realtime_ns = realtime_ns();
  page_->heartbeat_ns.store(page_->created_mono_ns, std::memory_order_relaxed);
  // Magic last: a reader that sees it sees a complete header.
  std::atomic_thread_fence(std::memory_order_release);
  page_->magic = proto::kStatusPageMagic;
  return true;
}

void StatusPageWriter::begin_write() {
  const uint64_t s = page_->seq.load(std::memory_order_relaxed);
  page_->seq.store(s + 1, std::memory_order_relaxed);
  // Orders the odd seq before the data stores that follow.
  std::atomic_thread_fence(std::memory_order_release);
}

void StatusPageWriter::end_write() {
  const uint64_t s = page_->seq.load(std::memory_order_relaxed);
  page_->seq.store(s + 1, std::memory_order_release);
}

void StatusPageWriter::heartbeat(uint64_t now_ns) {
  page_->heartbeat_ns.store(now_ns, std::memory_order_release);
}

void StatusPageWriter::unlink_file() {
  if (unlinked_ || path_[0] == '\0') return;
  unlinked_ = true;
  ::unlink(path_);
}

}  // namespace xpu_timer::inject
