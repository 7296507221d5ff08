// Parser of /proc/PID/maps. The text is untrusted (paths may hold spaces or
// " (deleted)"), so the parser never assumes well-formed lines: bad lines are
// skipped. Fuzzed by proc_maps_test.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::stack {

struct MapEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // file offset of start
  std::string perms;    // "r-xp"
  std::string path;     // may be empty or a pseudo name like "[stack]"
};

std::vector<MapEntry> parse_maps(const std::string& text);
std::optional<std::vector<MapEntry>> read_maps(pid_t pid);

// Load base of a mapped file: start of its mapping with file offset 0, or
// nullopt if the file is not mapped that way.
std::optional<uint64_t> mapping_base(const std::vector<MapEntry>& maps, const std::string& path);

}  // namespace xpu_timer::stack
