#include "stack/proc_maps.h"

#include <cstdlib>
#include <optional>
#include <string_view>

#include "common/parse_number.h"
#include "stack/proc_info.h"

namespace xpu_timer::stack {
namespace {

bool parse_hex(const std::string& s, size_t* pos, char stop, uint64_t* out) {
  const size_t end = s.find(stop, *pos);
  if (end == std::string::npos || end - *pos > 16) return false;
  const std::optional<uint64_t> value =
      parse_uint(std::string_view(s).substr(*pos, end - *pos), 16);
  if (!value) return false;
  *pos = end + 1;  // past the stop character
  *out = *value;
  return true;
}

size_t skip_field(const std::string& s, size_t pos) {
  while (pos < s.size() && s[pos] != ' ') ++pos;
  while (pos < s.size() && s[pos] == ' ') ++pos;
  return pos;
}

}  // namespace

std::vector<MapEntry> parse_maps(const std::string& text) {
  std::vector<MapEntry> out;
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t nl = text.find('\n', line_start);
    std::string line =
        text.substr(line_start, nl == std::string::npos ? std::string::npos : nl - line_start);
    line_start = nl == std::string::npos ? text.size() : nl + 1;
    // start-end perms offset dev inode path
    MapEntry e;
    size_t pos = 0;
    if (!parse_hex(line, &pos, '-', &e.start) || !parse_hex(line, &pos, ' ', &e.end)) continue;
    size_t perms_end = line.find(' ', pos);
    if (perms_end == std::string::npos) continue;
    e.perms = line.substr(pos, perms_end - pos);
    pos = perms_end + 1;
    if (!parse_hex(line, &pos, ' ', &e.offset)) continue;
    pos = skip_field(line, pos);  // dev
    pos = skip_field(line, pos);  // inode (and the padding before the path)
    if (pos < line.size()) e.path = line.substr(pos);
    if (e.end < e.start) continue;
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::vector<MapEntry>> read_maps(pid_t pid) {
  auto text = read_small_file("/proc/" + std::to_string(pid) + "/maps");
  if (!text) return std::nullopt;
  return parse_maps(*text);
}

std::optional<uint64_t> mapping_base(const std::vector<MapEntry>& maps, const std::string& path) {
  for (const auto& e : maps)
    if (e.path == path && e.offset == 0) return e.start;
  return std::nullopt;
}

}  // namespace xpu_timer::stack
