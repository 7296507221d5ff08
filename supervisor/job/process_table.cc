#include "supervisor/job/process_table.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>

#include <cstdint>
#include <map>
#include <string_view>

#include "common/file_reader.h"
#include "common/parse_number.h"

namespace xpu_timer::supervisor {
namespace {

// /proc/<pid>/stat is one line of well under 1 KiB.
constexpr size_t kMaxStatBytes = 8192;

bool read_small_file(const std::string& path, std::string* out) {
  std::string error;
  return read_regular_file_ok(path, kMaxStatBytes, out, &error);
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& text) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat st;
  std::string_view pid_text = text;
  const std::optional<int64_t> pid = take_int(&pid_text);
  if (!pid) return std::nullopt;
  st.pid = static_cast<pid_t>(*pid);
  // After ") ": state(3) ppid(4) pgrp(5) session(6) tty(7) tpgid(8) flags(9)
  // minflt(10) cminflt(11) majflt(12) cmajflt(13) utime(14) stime(15)
  // cutime(16) cstime(17) priority(18) nice(19) threads(20) itreal(21) start(22)
  std::string_view p = std::string_view(text).substr(close + 1);
  const auto skip_spaces = [&p] {
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
  };
  skip_spaces();
  if (p.empty()) return std::nullopt;
  st.state = p.front();
  p.remove_prefix(1);
  for (int field = 4; field <= 22; ++field) {
    skip_spaces();
    // Negative numbers (priority, nice) are fields we only step over.
    std::optional<uint64_t> v = take_uint(&p);
    if (!v && !take_int(&p)) return std::nullopt;
    if (field == 4) st.ppid = static_cast<pid_t>(v.value_or(0));
    if (field == 5) st.pgrp = static_cast<pid_t>(v.value_or(0));
    if (field == 22) st.start_time = v.value_or(0);
  }
  return st;
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::string text;
  if (!read_small_file("/proc/" + std::to_string(pid) + "/stat", &text)) return std::nullopt;
  return parse_proc_stat(text);
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  std::string text, error;
  const ReadFileStatus read = read_regular_file("/proc/" + std::to_string(pid) + "/stat",
                                                kMaxStatBytes, &text, &error);
  if (read == ReadFileStatus::kMissing) return false;  // no /proc/PID: no such process
  if (read == ReadFileStatus::kOk) {
    if (const std::optional<ProcStat> st = parse_proc_stat(text)) {
      if (st->state == 'Z' || st->state == 'X') return false;
      return start_time == 0 || st->start_time == start_time;
    }
  }
  // The read failed for another reason (out of descriptors, EACCES) or gave
  // nonsense: that proves nothing. Only ESRCH proves death; anything else is
  // a process that may well be training on, and unknown is never dead.
  return !(::kill(pid, 0) != 0 && errno == ESRCH);
}

std::vector<pid_t> descendants_of(pid_t root) {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return {};
  while (const dirent* ent = ::readdir(dir)) {
    const std::optional<int64_t> pid = parse_int(ent->d_name, 1, INT32_MAX);
    if (!pid) continue;
    const auto st = read_proc_stat(static_cast<pid_t>(*pid));
    if (!st || st->state == 'Z' || st->state == 'X') continue;
    children.emplace(st->ppid, st->pid);
  }
  ::closedir(dir);
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    auto range = children.equal_range(p);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == root) continue;
      out.push_back(it->second);
      frontier.push_back(it->second);
      if (out.size() > 1000000) return out;  // a /proc race cannot loop us forever
    }
  }
  return out;
}

}  // namespace xpu_timer::supervisor
