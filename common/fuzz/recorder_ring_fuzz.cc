// libFuzzer entry for the flight-recorder ring reader (common/recorder_ring.h)
// on a frozen ring image: the input is a dump file (RRRRR-WWWWW.timeline) as
// the timeline's loader reads one, or a ring file the supervisor maps. It is
// read twice, as the two readers do: RingReader::read_image on the bytes
// (the timeline loader, a dump being written) and RingReader::attach + read
// on the same bytes in a file (the supervisor's mapping of a live ring). Each
// must refuse with a reason or return a snapshot that keeps the format's
// promises, and on a file nobody changes both must return the same snapshot;
// never a crash or a sanitizer report (ASan/UBSan in the same build).
// Seeds: corpus/recorder_ring_fuzz, small rings written by write_ring_image.
// Run: recorder_ring_fuzz -max_total_time=60 [corpus dir]
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "common/recorder_ring.h"

namespace {

using xpu_timer::recorder::kMaxCapacity;
using xpu_timer::recorder::kRingNameBytes;
using xpu_timer::recorder::kRingNames;
using xpu_timer::recorder::RecordData;
using xpu_timer::recorder::RingReader;
using xpu_timer::recorder::RingSnapshot;

// The promises of a snapshot read from any bytes at all.
void check(const RingSnapshot& s) {
  const uint32_t cap = s.capacity;
  if (cap == 0 || cap > kMaxCapacity || (cap & (cap - 1)) != 0) __builtin_trap();
  const uint64_t window = s.head < cap ? s.head : cap;
  if (s.records.size() + s.skipped != window) __builtin_trap();
  if (s.skipped > 0 && (s.first_skipped < s.head - window || s.first_skipped >= s.head)) {
    __builtin_trap();
  }
  uint64_t next = s.head - window;  // records come oldest first, each position once
  for (const RecordData& r : s.records) {
    if (r.op_id < next || r.op_id >= s.head) __builtin_trap();
    next = r.op_id + 1;
  }
  if (s.names.size() > kRingNames) __builtin_trap();
  for (const std::string& name : s.names) {
    if (name.size() >= kRingNameBytes) __builtin_trap();
    for (const char c : name) {
      if (c < 0x20 || c >= 0x7f) __builtin_trap();  // cleaned: printable ASCII only
    }
  }
  if (s.sites.size() > xpu_timer::recorder::kRingSites) __builtin_trap();
  for (const xpu_timer::CodeFrame& f : s.sites) {
    if (f.line < 0) __builtin_trap();
    for (const std::string* text : {&f.function, &f.file}) {
      for (const char c : *text) {
        if (c < 0x20 || c >= 0x7f) __builtin_trap();
      }
    }
  }
  for (const RecordData& r : s.records) {
    const int site = xpu_timer::recorder::call_site_of(r);
    if (site >= static_cast<int>(xpu_timer::recorder::kRingSites)) __builtin_trap();
  }
}

bool same(const RingSnapshot& a, const RingSnapshot& b) {
  if (a.pid != b.pid || a.rank != b.rank || a.local_rank != b.local_rank ||
      a.world_size != b.world_size || a.capacity != b.capacity ||
      a.created_mono_ns != b.created_mono_ns || a.created_realtime_ns != b.created_realtime_ns ||
      a.head != b.head || a.skipped != b.skipped || a.first_skipped != b.first_skipped ||
      a.names != b.names || a.sites != b.sites || a.records.size() != b.records.size()) {
    return false;
  }
  for (size_t i = 0; i < a.records.size(); ++i) {
    if (std::memcmp(&a.records[i], &b.records[i], sizeof(RecordData)) != 0) return false;
  }
  return true;
}

// A private folder for the one ring file the mapped reader attaches: under
// $TMPDIR (the runner's temporary folder), removed at exit.
const std::string& ring_file() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/recorder_ring_fuzz.XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) __builtin_trap();
    static std::string removed_dir = dir;
    std::atexit([] { ::rmdir(removed_dir.c_str()); });
    return dir + "/00000-00001.timeline";
  }();
  return path;
}

// The bytes as a file, attached and read the way the supervisor reads a
// ring; false when attach refused (with a reason).
bool read_mapped(const uint8_t* data, size_t size, RingSnapshot* out) {
  const std::string& path = ring_file();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) __builtin_trap();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  std::string error;
  auto reader = RingReader::attach(path, -1, -1, &error);
  ::unlink(path.c_str());  // the mapping keeps the file
  if (reader == nullptr) {
    if (error.empty()) __builtin_trap();  // a refusal says why
    return false;
  }
  error.clear();
  if (!reader->read(out, &error)) __builtin_trap();  // nobody changed or cut this file
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  RingSnapshot image;
  std::string error;
  const bool image_ok = RingReader::read_image(data, size, &image, &error);
  if (image_ok) {
    check(image);
  } else if (error.empty()) {
    __builtin_trap();  // a refusal says why
  }
  RingSnapshot mapped;
  const bool mapped_ok = read_mapped(data, size, &mapped);
  if (mapped_ok) check(mapped);
  // read_image also refuses an image larger than any ring; below that the
  // two readers judge the same header the same way.
  if (size <= xpu_timer::recorder::ring_file_bytes(kMaxCapacity) && image_ok != mapped_ok) {
    __builtin_trap();
  }
  if (image_ok && mapped_ok && !same(image, mapped)) __builtin_trap();
  return 0;
}
