#include "supervisor/crash_tracker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <fstream>

#include "supervisor/dump_files.h"
#include "supervisor/log_tee.h"
#include "supervisor/op_json.h"
#include "supervisor/process_table.h"
#include "supervisor/rank_sampler.h"
#include "supervisor/unique_fd.h"

namespace xpu_timer::supervisor {
namespace {

const RankRecord* find_by_pid(const std::vector<RankRecord>& records, pid_t pid) {
  for (const RankRecord& r : records) {
    if (r.reg.pid == pid) return &r;
  }
  return nullptr;
}

std::string process_comm(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(f, comm);
  return comm;
}

}  // namespace

bool zombie_exit_status(pid_t pid, int* wait_status) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(f, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z') {
    return false;
  }
  // Fields after the command: 3 (state) .. 52 (exit_code, a wait status).
  const char* p = text.c_str() + close + 2;
  for (int field = 3; field < 52; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return false;
    ++p;
  }
  char* end = nullptr;
  const long v = std::strtol(p, &end, 10);
  if (end == p) return false;
  *wait_status = static_cast<int>(v);
  return true;
}

std::string kernel_line_about(pid_t pid) {
  UniqueFd fd(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return "";
  const std::string killed = "Killed process " + std::to_string(pid) + " ";
  const std::string oom = "pid=" + std::to_string(pid) + ",";
  std::string found;
  char record[2048];
  for (int i = 0; i < 100000; ++i) {  // the ring holds far fewer records
    const ssize_t n = ::read(fd.get(), record, sizeof(record) - 1);
    if (n < 0 && errno == EPIPE) continue;  // overwritten while reading: skip
    if (n <= 0) break;
    std::string line(record, static_cast<size_t>(n));
    if (line.find(killed) == std::string::npos &&
        (line.find(oom) == std::string::npos || line.find("oom") == std::string::npos)) {
      continue;
    }
    const size_t semi = line.find(';');
    found = semi == std::string::npos ? line : line.substr(semi + 1);
    while (!found.empty() && (found.back() == '\n')) found.pop_back();
  }
  return found;
}

CrashTracker::CrashTracker(std::string dump_dir, CrashPluginRunner* plugins)
    : dump_dir_(std::move(dump_dir)), plugins_(plugins), identity_(plugin_identity_from_env()) {}

void CrashTracker::fill_page_state(const RankRecord* rec, CrashRecord* out) {
  if (rec == nullptr) return;
  out->host = rec->reg.host;
  if (rec->page == nullptr) return;
  auto page = std::make_unique<proto::StatusPage>();
  if (!rec->page->read(page.get())) return;
  out->page_ok = true;
  out->inflight_count = page->inflight_count;
  out->oldest_inflight = page->oldest_inflight;
  out->completed_total = page->completed_total;
  out->last_completed = page->last_completed;
}

void CrashTracker::on_signal_report(SignalReport report, const std::vector<RankRecord>& records) {
  if (concluded_.count(report.pid) != 0) return;  // one report per process
  CrashRecord r;
  r.kind = CrashKind::kSignal;
  r.rank = report.rank;
  r.pid = report.pid;
  r.time_unix_s = report.time_unix_s;
  fill_page_state(find_by_pid(records, report.pid), &r);
  if (report.si_code <= 0 && report.sender_pid > 0) {
    const std::string comm = process_comm(report.sender_pid);
    r.sender = "pid " + std::to_string(report.sender_pid) + (comm.empty() ? "" : " (" + comm + ")");
  }
  symbolizer_.symbolize(&report.frames);
  r.signal = std::move(report);
  add(std::move(r));
}

void CrashTracker::on_python_exception(PythonExceptionReport report,
                                       const std::vector<RankRecord>& records) {
  if (concluded_.count(report.pid) != 0) return;
  CrashRecord r;
  r.kind = CrashKind::kPythonException;
  r.rank = report.rank;
  r.pid = report.pid;
  r.time_unix_s = report.time_unix_s;
  fill_page_state(find_by_pid(records, report.pid), &r);
  r.exception = std::move(report);
  add(std::move(r));
}

void CrashTracker::on_reaped(pid_t pid, int wait_status) {
  if (reaped_.size() > 100000) reaped_.clear();  // bounded; only recent pids matter
  reaped_[pid] = wait_status;
}

void CrashTracker::check_deaths(const std::vector<RankRecord>& records) {
  for (const RankRecord& rec : records) {
    const pid_t pid = rec.reg.pid;
    if (concluded_.count(pid) != 0 || process_alive(pid, rec.start_time)) continue;
    struct stat st {};
    if (::stat(rec.reg.status_path.c_str(), &st) != 0) {
      concluded_.insert(pid);  // its exit handler removed the page: a normal exit
      continue;
    }
    CrashRecord r;
    r.kind = CrashKind::kNoReport;
    r.rank = rec.reg.rank;
    r.pid = pid;
    r.time_unix_s = unix_now_s();
    fill_page_state(&rec, &r);
    int status = 0;
    auto it = reaped_.find(pid);
    if (it != reaped_.end()) {
      status = it->second;
      r.exit_known = true;
    } else {
      r.exit_known = zombie_exit_status(pid, &status);
    }
    if (r.exit_known) {
      r.exit_by_signal = WIFSIGNALED(status);
      r.exit_value = r.exit_by_signal ? WTERMSIG(status) : WEXITSTATUS(status);
    }
    r.kernel = kernel_line_about(pid);
    add(std::move(r));
  }
}

void CrashTracker::add(CrashRecord record) {
  concluded_.insert(record.pid);
  const std::string summary = crash_summary(record);
  SUP_LOG_WARN("crash: %s", summary.c_str());
  const nlohmann::json doc = crash_json(record);
  if (!dump_dir_.empty()) {
    std::string error;
    const std::string path = dump_dir_ + "/crash-rank" + std::to_string(record.rank) + "-" +
                             std::to_string(record.pid) + ".json";
    if (!write_file_atomically(path, json_text(doc, 2) + "\n", &error)) {
      SUP_LOG_WARN("%s", error.c_str());
    }
  }
  if (plugins_ != nullptr && plugins_->enabled()) {
    plugins_->run(json_text(plugin_input_json(record, identity_)),
                  "rank " + std::to_string(record.rank) + " pid " + std::to_string(record.pid));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  by_rank_[record.rank] = std::move(record);
}

std::map<int, nlohmann::json> CrashTracker::crash_json_by_rank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<int, nlohmann::json> out;
  for (const auto& [rank, rec] : by_rank_) out[rank] = crash_json(rec);
  return out;
}

}  // namespace xpu_timer::supervisor
