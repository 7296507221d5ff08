#include "supervisor/incidents/oom_evidence.h"

#include <fstream>
#include <sstream>

#include "common/parse_number.h"

namespace xpu_timer::supervisor {
namespace {

std::optional<std::string> read_small(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  std::string text = s.str();
  if (text.size() > 1 << 20) text.resize(1 << 20);  // procfs and cgroupfs files are small
  return text;
}

std::string_view trim_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  return line;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The first line of `text` (without its line break) that `matches`.
template <typename Matches>
std::optional<std::string_view> first_line(std::string_view text, Matches matches) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim_line(text.substr(at, end - at));
    at = end + 1;
    if (matches(line)) return line;
  }
  return std::nullopt;
}

// The path of the first "ID:CONTROLLERS:PATH" line whose fields `wants`
// accepts. Absolute, and never out of the mount ("/.." would be).
template <typename Wants>
std::optional<std::string> cgroup_path(std::string_view text, Wants wants) {
  const auto line = first_line(text, [&](std::string_view l) {
    const size_t first = l.find(':');
    const size_t second = first == std::string_view::npos ? first : l.find(':', first + 1);
    return second != std::string_view::npos &&
           wants(l.substr(0, first), l.substr(first + 1, second - first - 1));
  });
  if (!line) return std::nullopt;
  const std::string_view path = line->substr(line->find(':', line->find(':') + 1) + 1);
  if (path.empty() || path[0] != '/' || path.find("/..") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(path);
}

}  // namespace

std::optional<uint64_t> parse_oom_kill(std::string_view text) {
  constexpr std::string_view kKey = "oom_kill ";
  const auto line =
      first_line(text, [&](std::string_view l) { return l.substr(0, kKey.size()) == kKey; });
  if (!line) return std::nullopt;
  return parse_uint(line->substr(kKey.size()));
}

std::optional<std::string> cgroup_v2_path(std::string_view text) {
  return cgroup_path(text, [](std::string_view id, std::string_view controllers) {
    return id == "0" && controllers.empty();
  });
}

std::optional<std::string> cgroup_v1_memory_path(std::string_view text) {
  return cgroup_path(text, [](std::string_view, std::string_view controllers) {
    const std::string list = "," + std::string(controllers) + ",";
    return list.find(",memory,") != std::string::npos;
  });
}

OomEvidence::OomEvidence(std::string cgroup_root, std::string proc)
    : cgroup_root_(std::move(cgroup_root)), proc_(std::move(proc)) {}

std::string OomEvidence::counter_file(pid_t pid) const {
  if (auto text = read_small(proc_ + "/" + std::to_string(pid) + "/cgroup")) {
    if (auto path = cgroup_v2_path(*text)) {
      // The root cgroup has no memory.events; a nested one does when the
      // memory controller is enabled for it.
      const std::string file =
          cgroup_root_ + (*path == "/" ? std::string() : *path) + "/memory.events";
      if (auto events = read_small(file); events && parse_oom_kill(*events)) return file;
    }
    if (auto path = cgroup_v1_memory_path(*text)) {
      const std::string file =
          cgroup_root_ + "/memory" + (*path == "/" ? std::string() : *path) + "/memory.oom_control";
      if (auto control = read_small(file); control && parse_oom_kill(*control)) return file;
    }
  }
  const std::string vmstat = proc_ + "/vmstat";
  if (auto text = read_small(vmstat); text && parse_oom_kill(*text)) return vmstat;
  return "";
}

void OomEvidence::note_rank(pid_t pid) {
  if (file_of_.count(pid) != 0) return;
  if (file_of_.size() > 100000) file_of_.clear();  // bounded; only live ranks matter
  const std::string file = counter_file(pid);
  file_of_[pid] = file;
  if (file.empty() || baseline_.count(file) != 0) return;
  if (auto text = read_small(file)) {
    if (auto v = parse_oom_kill(*text)) baseline_[file] = *v;
  }
}

std::string OomEvidence::growth_since_noted(pid_t pid) {
  auto it = file_of_.find(pid);
  if (it == file_of_.end() || it->second.empty()) return "";
  const std::string file = it->second;
  file_of_.erase(it);
  auto base = baseline_.find(file);
  const auto text = read_small(file);
  const std::optional<uint64_t> now = text ? parse_oom_kill(*text) : std::nullopt;
  if (base == baseline_.end() || !now) return "";
  const uint64_t before = base->second;
  base->second = *now;
  if (*now <= before) return "";
  const std::string name = base_name(file);
  const std::string what =
      name == "vmstat" ? "the machine's /proc/vmstat oom_kill" : name + " oom_kill";
  return what + " went " + std::to_string(before) + "->" + std::to_string(*now);
}

}  // namespace xpu_timer::supervisor
