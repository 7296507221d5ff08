#include "tests/simgpu/rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "common/env_config.h"
#include "common/log.h"

namespace xpu_timer::simgpu {

size_t segment_bytes(int nranks) {
  const auto n = static_cast<size_t>(nranks);
  return sizeof(SegmentHeader) + n * sizeof(RankSlot) + n * n * sizeof(std::atomic<uint64_t>) +
         n * n * kSendTimes * sizeof(SendTime);
}

SharedSegment::SharedSegment(std::string name, void* base, int nranks)
    : name_(std::move(name)), base_(base), nranks_(nranks), bytes_(segment_bytes(nranks)) {
  auto* at = static_cast<char*>(base) + sizeof(SegmentHeader);
  slots_ = reinterpret_cast<RankSlot*>(at);
  at += static_cast<size_t>(nranks) * sizeof(RankSlot);
  sent_ = reinterpret_cast<std::atomic<uint64_t>*>(at);
  at += static_cast<size_t>(nranks) * static_cast<size_t>(nranks) * sizeof(std::atomic<uint64_t>);
  send_times_ = reinterpret_cast<SendTime*>(at);
}

SharedSegment* SharedSegment::open(const std::string& name, int nranks, std::string* error) {
  const std::string path = "/" + name;
  const int fd = shm_open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "shm_open(" + path + "): " + strerror(errno);
    return nullptr;
  }
  const size_t size = segment_bytes(nranks);
  // Every rank of the communicator grows it to the same size: idempotent,
  // and it zero-fills a new segment (sparse: pages come when touched).
  struct stat st {};
  if (fstat(fd, &st) != 0 ||
      (static_cast<size_t>(st.st_size) < size && ftruncate(fd, static_cast<off_t>(size)) != 0)) {
    *error = "ftruncate(" + path + "): " + strerror(errno);
    close(fd);
    return nullptr;
  }
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  if (close(fd) != 0) {
    XPU_TIMER_LOG_WARN("simgpu: close(%s): %s", path.c_str(), strerror(errno));
  }
  if (addr == MAP_FAILED) {
    *error = "mmap(" + path + "): " + strerror(mmap_errno);
    return nullptr;
  }
  return new SharedSegment(name, addr, nranks);
}

SharedSegment::~SharedSegment() {
  if (munmap(base_, bytes_) != 0) {
    XPU_TIMER_LOG_WARN("simgpu: munmap(/%s): %s", name_.c_str(), strerror(errno));
  }
}

void SharedSegment::unlink() {
  const std::string path = "/" + name_;
  if (shm_unlink(path.c_str()) != 0 && errno != ENOENT) {
    XPU_TIMER_LOG_WARN("simgpu: shm_unlink(%s): %s", path.c_str(), strerror(errno));
  }
}

uint64_t hash_bytes(const void* data, size_t size, uint64_t seed) {
  // FNV-1a, 64 bit.
  uint64_t h = 1469598103934665603ull ^ seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string segment_name(uint64_t comm_hash) {
  std::string job = env_string("XPU_TIMER_SIM_JOB_ID", "nojob");
  std::string clean;
  for (char c : job) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    clean.push_back(ok ? c : '_');
    if (clean.size() == 100) break;
  }
  if (clean.empty()) clean = "nojob";
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(comm_hash));
  return "xpu_sim_" + clean + "_" + hex;
}

}  // namespace xpu_timer::simgpu
