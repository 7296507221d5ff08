#include "supervisor/incidents/crash_tracker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/clock.h"
#include "common/parse_number.h"
#include "common/status_page.h"
#include "common/unique_fd.h"
#include "supervisor/analysis/op_json.h"
#include "supervisor/incidents/dump_files.h"
#include "supervisor/job/exit_status.h"
#include "supervisor/job/process_table.h"
#include "supervisor/log_tee.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {
namespace {

const RankRecord* find_by_pid(const std::vector<RankRecord>& records, pid_t pid) {
  for (const RankRecord& r : records) {
    if (r.reg.pid == pid) return &r;
  }
  return nullptr;
}

// Deaths by these shortly after a crash are the launcher's tear-down.
constexpr double kTearDownWindowS = 30.0;

// A report's own time when it is plausible (a rank shares this machine's
// clock and reports as it dies); a report without one (0) or far from now
// (a broken or forged one) takes the time it arrived. The tear-down window
// after a crash is measured from it: a root cause at 0 would make every
// later death a crash of its own.
double report_time(double claimed_unix_s) {
  const double now = unix_now_s();
  return claimed_unix_s > 0 && std::fabs(claimed_unix_s - now) <= kTearDownWindowS ? claimed_unix_s
                                                                                   : now;
}
// A stop's terminations trickle in over the launcher's kill grace: their
// line waits until none came for this long (or the job ended).
constexpr double kTerminatedQuietS = 5.0;

// The end of a termination cause whose sender is not known.
constexpr char kSenderUnknown[] = " (sender unknown)";

bool is_stop_signal(int sig) {
  return sig == SIGTERM || sig == SIGKILL || sig == SIGINT || sig == SIGHUP;
}

// "0,2-3" of sorted ranks.
std::string rank_ranges(const std::set<int>& ranks) {
  std::string out;
  for (auto it = ranks.begin(); it != ranks.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != ranks.end() && *it == last + 1; ++it) last = *it;
    out += (out.empty() ? "" : ",") + std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

// What a crash was, for the terminated line: "SIGSEGV", "RuntimeError".
std::string crash_what(const CrashRecord& r) {
  if (r.kind == CrashKind::kSignal && r.signal) return signal_name(r.signal->signal);
  if (r.kind == CrashKind::kPythonException && r.exception) return r.exception->type_qualname;
  if (!r.exit_known) return "died without a report";
  return r.exit_by_signal ? signal_name(r.exit_value) : "exit code " + std::to_string(r.exit_value);
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
  std::string_view exit_code = p;
  const std::optional<int64_t> v = take_int(&exit_code);
  if (!v) return false;
  *wait_status = static_cast<int>(*v);
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

CrashTracker::CrashTracker(std::string dump_dir, CrashPluginRunner* plugins,
                           boost::asio::io_context* io, CrashStackReader::CollectFn collect)
    : dump_dir_(std::move(dump_dir)), plugins_(plugins), identity_(plugin_identity_from_env()) {
  if (io != nullptr) {
    reader_ = std::make_unique<CrashStackReader>(
        [this, io] { boost::asio::post(*io, [this] { conclude_reads(); }); }, std::move(collect));
  }
}

// The reads hold `this` in their callbacks: they end before the tracker does.
CrashTracker::~CrashTracker() {
  if (reader_) reader_->wait_all();
}

void CrashTracker::conclude_reads() {
  if (!reader_) return;
  for (auto& [key, stacks] : reader_->take_finished()) {
    auto it = reading_.find(key);
    if (it == reading_.end()) continue;
    CrashRecord r = std::move(it->second);
    reading_.erase(it);
    r.python = std::move(stacks);
    add(std::move(r));
  }
}

void CrashTracker::finish_pending() {
  if (!reader_) return;
  reader_->wait_all();
  conclude_reads();
}

void CrashTracker::fill_page_state(const RankRecord* rec, CrashRecord* out) {
  if (rec == nullptr) return;
  out->host = rec->reg.host;
  if (rec->page == nullptr) return;
  proto::StatusSnapshot snap;  // rare (a crash): a fresh one
  if (!rec->page->read(&snap)) return;
  const proto::StatusPage& page = snap.page();
  out->page_ok = true;
  out->inflight_count = page.inflight_count;
  out->oldest_inflight = page.oldest_inflight;
  out->completed_total = page.completed_total;
  out->last_completed = page.last_completed;
}

void CrashTracker::on_signal_report(SignalReport report, const std::vector<RankRecord>& records,
                                    UniqueFd release) {
  if (concluded_.count(report.pid) != 0) return;  // one report per process (`release` closes)
  CrashRecord r;
  r.kind = CrashKind::kSignal;
  r.rank = report.rank;
  r.pid = report.pid;
  r.time_unix_s = report_time(report.time_unix_s);
  fill_page_state(find_by_pid(records, report.pid), &r);
  bool launcher_sender = false;
  if (report.si_code <= 0 && report.sender_pid > 0) {
    const std::string comm = process_comm(report.sender_pid);
    r.sender = "pid " + std::to_string(report.sender_pid) + (comm.empty() ? "" : " (" + comm + ")");
    launcher_sender = is_launcher(report.sender_pid, records);
  }
  r.signal = std::move(report);
  if (r.signal->caller) {  // the handler that called ours: named from its file too
    std::vector<NativeFrame> one{*r.signal->caller};
    symbolizer_.symbolize(&one);
    r.signal->caller = std::move(one.front());
  }
  r.terminated_cause = termination_cause(r, launcher_sender);
  r.terminated = !r.terminated_cause.empty();
  // Symbolizing costs; a termination's frames say nothing about a failure.
  if (!r.terminated) symbolizer_.symbolize(&r.signal->frames);
  if (!r.terminated && release.valid() && reader_) {
    const uint64_t key = next_read_++;
    const pid_t pid = r.pid;
    const pid_t tid = r.signal->tid;
    concluded_.insert(pid);  // its death, seen while reading, is this crash
    reading_.emplace(key, std::move(r));
    if (reader_->start(key, pid, tid, std::move(release))) return;
    CrashRecord busy = std::move(reading_[key]);
    reading_.erase(key);
    busy.python = CrashPythonStacks{};
    busy.python->errors.push_back("not read: " + std::to_string(CrashStackReader::kMaxReads) +
                                  " crashes were being read already");
    add(std::move(busy));
    return;
  }
  add(std::move(r));
}

void CrashTracker::on_python_exception(PythonExceptionReport report,
                                       const std::vector<RankRecord>& records) {
  if (concluded_.count(report.pid) != 0) return;
  CrashRecord r;
  r.kind = CrashKind::kPythonException;
  r.rank = report.rank;
  r.pid = report.pid;
  r.time_unix_s = report_time(report.time_unix_s);
  fill_page_state(find_by_pid(records, report.pid), &r);
  r.exception = std::move(report);
  r.terminated_cause = termination_cause(r, false);
  r.terminated = !r.terminated_cause.empty();
  add(std::move(r));
}

void CrashTracker::on_link_closed(const std::optional<RankRecord>& closed) {
  if (!closed) return;
  const pid_t pid = closed->reg.pid;
  struct stat st {};
  if (concluded_.count(pid) != 0 || reaped_.count(pid) != 0 ||
      ::stat(closed->reg.status_path.c_str(), &st) != 0) {
    return;
  }
  // The socket closes in the kernel's exit path a moment before the process
  // becomes a zombie: a short, bounded wait for that.
  const timespec pause{0, 1000 * 1000};
  for (int i = 0; i < kExitReadMs; ++i) {
    int status = 0;
    if (zombie_exit_status(pid, &status)) {
      on_reaped(pid, status);
      return;
    }
    if (!process_alive(pid, closed->start_time)) return;  // reaped already
    nanosleep(&pause, nullptr);
  }
}

void CrashTracker::on_reaped(pid_t pid, int wait_status) {
  if (reaped_.size() > 100000) reaped_.clear();  // bounded; only recent pids matter
  reaped_[pid] = wait_status;
}

void CrashTracker::check_deaths(const std::vector<RankRecord>& records) {
  for (const RankRecord& rec : records) {
    const pid_t pid = rec.reg.pid;
    if (concluded_.count(pid) != 0) continue;
    if (process_alive(pid, rec.start_time)) {
      oom_.note_rank(pid);  // the baseline of its OOM kill counter
      continue;
    }
    struct stat st {};
    if (::stat(rec.reg.status_path.c_str(), &st) != 0) {
      concluded_.insert(pid);  // its exit handler removed the page: a normal exit
      oom_.forget(pid);
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
    r.oom_evidence = oom_.growth_since_noted(pid);
    r.terminated_cause = termination_cause(r, false);
    r.terminated = !r.terminated_cause.empty();
    add(std::move(r));
  }
}

bool CrashTracker::is_launcher(pid_t sender, const std::vector<RankRecord>& records) const {
  if (sender == job_pid_) return true;
  if (find_by_pid(records, sender) != nullptr) return false;  // a rank killing a rank
  for (pid_t p : descendants_of(getpid())) {
    if (p == sender) return true;
  }
  return false;
}

std::string CrashTracker::termination_cause(const CrashRecord& r, bool launcher_sender) const {
  // Once we asked the job to end, its deaths are that stop's, however they look.
  if (!stop_cause_.empty()) return stop_cause_;
  const std::string after = root_cause_.empty() ? "" : " after " + root_cause_;
  if (r.kind == CrashKind::kSignal && r.signal && !r.signal->siginfo_from_kernel &&
      is_stop_signal(r.signal->signal)) {
    // Who sent it is unknown (another handler called ours without the
    // kernel's siginfo), but a stop signal is a request to end, never a
    // failure of the rank's own.
    return "ended by " + signal_name(r.signal->signal) +
           (after.empty() ? std::string(kSenderUnknown) : after);
  }
  if (r.kind == CrashKind::kSignal && r.signal && r.signal->si_code <= 0 &&
      is_stop_signal(r.signal->signal)) {
    const std::string sig = signal_name(r.signal->signal);
    if (r.signal->sender_pid == getpid()) {
      // The clean-up of what the job's main process left behind.
      return "ended by the supervisor's clean-up" +
             (after.empty() ? " (" + sig + ") after the job's main process ended" : after);
    }
    if (launcher_sender) return "ended by the launcher" + (after.empty() ? " (" + sig + ")" : after);
    return "";
  }
  if (r.kind == CrashKind::kNoReport && !root_cause_.empty() &&
      r.time_unix_s - root_cause_time_s_ <= kTearDownWindowS &&
      (!r.exit_known || (r.exit_by_signal && is_stop_signal(r.exit_value)))) {
    return "ended by the launcher" + after;
  }
  return "";
}

void CrashTracker::on_job_stop(std::string cause) {
  if (stop_cause_.empty()) stop_cause_ = std::move(cause);
}

void CrashTracker::flush_terminated(bool force) {
  if (pending_terminated_.empty()) return;
  if (!force && unix_now_s() - last_terminated_s_ < kTerminatedQuietS) return;
  // A launcher's SIGTERM may be read before the crash that caused it (the
  // ranks' sockets are drained in turn): name the root cause known by now.
  std::map<std::string, std::set<int>> lines;
  const std::string plain = "ended by the launcher (";
  for (const auto& [cause, ranks] : pending_terminated_) {
    std::string line = cause;
    if (!root_cause_.empty() && cause.rfind(plain, 0) == 0) {
      line = "ended by the launcher after " + root_cause_;
    } else if (const size_t unknown = cause.find(kSenderUnknown);
               !root_cause_.empty() && unknown != std::string::npos) {
      line = cause.substr(0, unknown) + " after " + root_cause_;
    }
    lines[line].insert(ranks.begin(), ranks.end());
  }
  for (const auto& [cause, ranks] : lines) {
    SUP_LOG_INFO("terminated: %s %s %s", ranks.size() == 1 ? "rank" : "ranks",
                 rank_ranges(ranks).c_str(), cause.c_str());
  }
  pending_terminated_.clear();
}

void CrashTracker::add(CrashRecord record) {
  concluded_.insert(record.pid);
  if (record.terminated) {
    pending_terminated_[record.terminated_cause].insert(record.rank);
    last_terminated_s_ = unix_now_s();
    std::lock_guard<std::mutex> lock(mutex_);
    by_rank_[record.rank] = std::move(record);
    return;
  }
  if (root_cause_.empty()) {
    root_cause_ = "rank " + std::to_string(record.rank) + "'s crash (" + crash_what(record) + ")";
    root_cause_time_s_ = record.time_unix_s;
  }
  ++incidents_;
  const std::string summary = crash_summary(record);
  latest_crash_rank_ = record.rank;
  latest_crash_what_ = crash_description(record);
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

std::map<pid_t, std::string> CrashTracker::outcomes_by_pid() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<pid_t, std::string> out;
  for (const auto& [rank, rec] : by_rank_) out[rec.pid] = rec.terminated ? "terminated" : "crashed";
  return out;
}

}  // namespace xpu_timer::supervisor
