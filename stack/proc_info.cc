#include "stack/proc_info.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/file_reader.h"
#include "common/parse_number.h"

namespace xpu_timer::stack {
namespace {

// The /proc files we read are far smaller (maps of a large process run to a
// few MiB).
constexpr size_t kMaxSmallFileBytes = 16u << 20;

}  // namespace

std::optional<std::string> read_small_file(const std::string& path) {
  std::string out, error;
  if (!read_regular_file_ok(path, kMaxSmallFileBytes, &out, &error)) return std::nullopt;
  return out;
}

std::optional<std::string> read_process_state(pid_t pid) {
  auto status = read_small_file("/proc/" + std::to_string(pid) + "/status");
  if (!status) return std::nullopt;
  size_t pos = status->find("\nState:");
  if (pos == std::string::npos) return std::nullopt;
  pos += 7;
  while (pos < status->size() && ((*status)[pos] == ' ' || (*status)[pos] == '\t')) ++pos;
  size_t end = status->find('\n', pos);
  return status->substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

char parse_stat_state(const std::string& stat_line) {
  size_t paren = stat_line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat_line.size()) return '?';
  return stat_line[paren + 2];
}

char read_thread_state(pid_t pid, pid_t tid) {
  auto stat =
      read_small_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  return stat ? parse_stat_state(*stat) : '?';
}

std::string read_thread_name(pid_t pid, pid_t tid) {
  auto comm =
      read_small_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  if (!comm) return "";
  while (!comm->empty() && comm->back() == '\n') comm->pop_back();
  return *comm;
}

std::vector<pid_t> list_tasks(pid_t pid) {
  std::vector<pid_t> tids;
  std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(path.c_str());
  if (!dir) return tids;
  while (dirent* ent = readdir(dir)) {
    const std::optional<int64_t> tid = parse_int(ent->d_name, 1, INT32_MAX);
    if (tid) tids.push_back(static_cast<pid_t>(*tid));
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

int read_yama_ptrace_scope() {
  auto text = read_small_file("/proc/sys/kernel/yama/ptrace_scope");
  if (!text || text->empty()) return -1;
  std::string_view scope = *text;  // "1\n"
  return static_cast<int>(take_int(&scope).value_or(0));
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace xpu_timer::stack
