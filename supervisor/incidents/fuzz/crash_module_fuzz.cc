// libFuzzer entry for the crash symbolizer's reading of module files
// (crash_symbolizer.h): the input is the ELF file a crashed rank's frame
// names, which may be any file at all (replaced after the crash, truncated,
// not ELF). Symbols and the GNU build-id note are read bounds-checked: every
// outcome is a frame with or without a name and build-id, the build-id even
// lower-case hex; never a sanitizer report (ASan/UBSan in this build).
// Seeds: supervisor/incidents/fuzz/corpus/crash_module_fuzz/.
// Run: crash_module_fuzz -max_total_time=60 [corpus dir]
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/incidents/crash_symbolizer.h"

namespace sup = xpu_timer::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("crash_module_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  const bool written = size == 0 || write(fd, data, size) == static_cast<ssize_t>(size);
  if (written) {
    std::vector<sup::NativeFrame> frames(3);
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const uint64_t offsets[] = {0, 0x1000, size / 2};
    for (size_t i = 0; i < frames.size(); ++i) {
      frames[i].module = path;
      frames[i].module_offset = offsets[i];
    }
    sup::CrashSymbolizer symbolizer;
    symbolizer.symbolize(&frames);
    for (const sup::NativeFrame& f : frames) {
      if (f.build_id.size() % 2 != 0 || f.build_id.size() > 128) __builtin_trap();
      if (f.build_id.find_first_not_of("0123456789abcdef") != std::string::npos) __builtin_trap();
      if (sup::frame_label(f).empty()) __builtin_trap();
    }
  }
  close(fd);
  return 0;
}
