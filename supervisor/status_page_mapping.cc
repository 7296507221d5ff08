#include "supervisor/status_page_mapping.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstddef>

#include "supervisor/page_read_guard.h"
#include "supervisor/unique_fd.h"

namespace xpu_timer::supervisor {
namespace {

// The part of the page written once before registration.
constexpr size_t kHeaderBytes = offsetof(proto::StatusPage, heartbeat_ns);

}  // namespace

std::unique_ptr<StatusPageMapping> StatusPageMapping::open(const std::string& path,
                                                           pid_t expected_pid, int expected_rank,
                                                           std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error != nullptr) *error = "status page " + path + ": " + why;
    return nullptr;
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return fail(std::string("cannot open: ") + strerror(errno));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return fail(std::string("cannot stat: ") + strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<size_t>(st.st_size) < sizeof(proto::StatusPage)) {
    return fail("too small (" + std::to_string(st.st_size) + " bytes, expected " +
                std::to_string(sizeof(proto::StatusPage)) + ")");
  }
  void* addr = mmap(nullptr, sizeof(proto::StatusPage), PROT_READ, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) return fail(std::string("cannot mmap: ") + strerror(errno));
  std::unique_ptr<StatusPageMapping> mapping(
      new StatusPageMapping(static_cast<const proto::StatusPage*>(addr), path));

  alignas(proto::StatusPage) unsigned char header_bytes[kHeaderBytes];
  if (!guarded_copy(header_bytes, addr, kHeaderBytes)) return fail("truncated while reading");
  uint64_t magic;
  uint32_t version, page_bytes;
  int32_t pid, rank;
  memcpy(&magic, header_bytes + offsetof(proto::StatusPage, magic), sizeof(magic));
  memcpy(&version, header_bytes + offsetof(proto::StatusPage, version), sizeof(version));
  memcpy(&page_bytes, header_bytes + offsetof(proto::StatusPage, page_bytes), sizeof(page_bytes));
  memcpy(&pid, header_bytes + offsetof(proto::StatusPage, pid), sizeof(pid));
  memcpy(&rank, header_bytes + offsetof(proto::StatusPage, rank), sizeof(rank));
  if (magic != proto::kStatusPageMagic) return fail("bad magic");
  if (version != proto::kProtocolVersion) {
    return fail("protocol version " + std::to_string(version) + ", supervisor speaks " +
                std::to_string(proto::kProtocolVersion) + " (stale libxpu_timer_inject.so?)");
  }
  if (page_bytes != sizeof(proto::StatusPage)) {
    return fail("page_bytes " + std::to_string(page_bytes) +
                " != " + std::to_string(sizeof(proto::StatusPage)));
  }
  if (pid != expected_pid) {
    return fail("pid " + std::to_string(pid) + " != registered pid " +
                std::to_string(expected_pid));
  }
  if (rank != expected_rank) {
    return fail("rank " + std::to_string(rank) + " != registered rank " +
                std::to_string(expected_rank));
  }
  return mapping;
}

StatusPageMapping::~StatusPageMapping() {
  munmap(const_cast<proto::StatusPage*>(page_), sizeof(proto::StatusPage));
}

bool StatusPageMapping::read(proto::StatusPage* out) const {
  return guarded_read_status_page(page_, out);
}

bool StatusPageMapping::heartbeat(uint64_t* out) const {
  return guarded_load_heartbeat(page_, out);
}

}  // namespace xpu_timer::supervisor
