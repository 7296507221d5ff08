// libFuzzer entry for the OOM kill counters' readers (oom_evidence.h): the
// input is the text of /proc/PID/cgroup, memory.events, memory.oom_control or
// /proc/vmstat, read from files the supervisor does not control. Every
// outcome is a value or nothing; a path is absolute and never climbs out of
// the mount, a count is the digits that follow "oom_kill " in the input;
// never a sanitizer report (ASan/UBSan in this build).
// Seeds: supervisor/incidents/fuzz/corpus/oom_counters_fuzz/.
// Run: oom_counters_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <string>

#include "supervisor/incidents/oom_evidence.h"

namespace sup = xpu_timer::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto v = sup::parse_oom_kill(text)) {
    if (text.find("oom_kill " + std::to_string(*v)) == std::string::npos &&
        text.find("oom_kill 0") == std::string::npos) {  // leading zeros read as the same value
      __builtin_trap();
    }
  }
  for (auto path : {sup::cgroup_v2_path(text), sup::cgroup_v1_memory_path(text)}) {
    if (!path) continue;
    if (path->empty() || (*path)[0] != '/' || path->find("/..") != std::string::npos) {
      __builtin_trap();
    }
    if (text.find(*path) == std::string::npos) __builtin_trap();
  }
  return 0;
}
