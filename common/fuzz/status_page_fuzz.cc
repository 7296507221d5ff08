// libFuzzer entry for the status page reader (the supervisor's side of a file
// a rank writes): a valid page in a memory file, attached, then changed by
// the input, read, and attached afresh. Every outcome must be a refusal with
// a reason or a snapshot whose counts are within their tables; never a crash
// or a sanitizer report (ASan/UBSan in the same build).
//
// Input: records of 5 bytes, a little-endian offset (uint32) and a byte
// written there; an offset with its top bit set instead cuts the file to
// (offset & 0x7fffffff) % sizeof(StatusPage) bytes. Guided by coverage,
// 5-byte records reach the counts, enums and header checks far sooner than
// raw 72 KB pages would.
// Run: status_page_fuzz -max_total_time=60 [corpus dir]
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "common/status_page.h"

namespace {

using xpu_timer::proto::StatusPage;
using xpu_timer::proto::StatusPageFile;
using xpu_timer::proto::StatusSnapshot;

constexpr int kRank = 2;

void check(const StatusSnapshot& snap, bool ok) {
  if (!ok) {
    if (snap.error().empty() || snap.page_ok()) __builtin_trap();  // a refusal says why
    return;
  }
  const StatusPage& p = snap.page();
  if (p.ncomms > xpu_timer::proto::kMaxComms || p.nmetrics > xpu_timer::proto::kMaxMetrics) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("xpu_status_page_fuzz", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, sizeof(StatusPage)) != 0) return 0;
  void* mem = mmap(nullptr, sizeof(StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) return 0;
  auto* page = static_cast<StatusPage*>(mem);
  std::memset(mem, 0, sizeof(StatusPage));
  page->magic = xpu_timer::proto::kStatusPageMagic;
  page->version = xpu_timer::proto::kStatusPageVersion;
  page->page_bytes = sizeof(StatusPage);
  page->pid = getpid();
  page->rank = kRank;

  std::string error;
  auto attached = StatusPageFile::attach_fd(fd, "fuzz", getpid(), kRank, &error);
  if (attached == nullptr) __builtin_trap();  // the valid page must attach

  auto* bytes = static_cast<unsigned char*>(mem);
  off_t cut = 0;
  for (size_t i = 0; i + 5 <= size; i += 5) {
    uint32_t offset;
    std::memcpy(&offset, data + i, sizeof(offset));
    if (offset & 0x80000000u) {
      cut = static_cast<off_t>((offset & 0x7fffffffu) % sizeof(StatusPage));
    } else if (cut == 0) {  // writing past a cut would fault here, not in the reader
      bytes[offset % sizeof(StatusPage)] = data[i + 4];
    }
  }
  if (cut != 0 && ftruncate(fd, cut) != 0) __builtin_trap();

  StatusSnapshot snap;
  check(snap, attached->read(&snap));
  error.clear();
  auto fresh = StatusPageFile::attach_fd(fd, "fuzz", getpid(), kRank, &error);
  if (fresh == nullptr) {
    if (error.empty()) __builtin_trap();
  } else {
    check(snap, fresh->read(&snap));
  }
  munmap(mem, sizeof(StatusPage));
  return 0;
}
