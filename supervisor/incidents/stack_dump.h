// Collects the stacks of the local ranks into `<dump-dir>/stacks-<time>/`
// (one RRRRR-WWWWW.stacktrace per rank) and renders the rank-merged flame
// graphs there (cpp_stack, py_stack, mixed_stack and their .svg), in the
// background: on a hang and on POST /dump/stacks.
//
// Threads: start(), running() and latest() may be called from any thread (the
// asio thread on a hang, an HTTP thread on a request). A dump runs on a
// coordinator thread owned by the dumper, which spreads the ranks over a
// bounded pool of worker threads (min(ranks, max_workers)), so the ranks are
// stopped at about the same time and the poll loop and HTTP never wait. Every
// thread of the dumper blocks all signals: they belong to the asio thread.
//
// Each rank is collected with stack::collect_stacks_in_child: the ptrace work
// happens in a forked child, so a crash of ours, or the job controller's
// waitpid(-1) on the asio thread (which would steal ptrace stops of a tracee
// traced by a thread of this process), can never leave a rank stopped. Hazard:
// under Yama ptrace_scope=1 that child is not an ancestor of the ranks, so
// attaching then needs CAP_SYS_PTRACE (logged once, with the library's line).
// One dump at a time; `done` is called on the coordinator thread when the
// report is final, and must not call start() itself (post it elsewhere).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stack/collector.h"
#include "supervisor/incidents/stack_dump_report.h"

namespace xpu_timer::supervisor {

struct StackTarget {
  int rank = 0;
  int world_size = 1;
  pid_t pid = 0;
};

struct StackDumpSettings {
  std::string dump_dir;  // the supervisor's --dump-dir; must exist
  unsigned max_workers = 8;
  // Bound on waiting for a rank's threads to stop (the stack library's).
  std::chrono::milliseconds stop_timeout{500};
  // Bound on one rank's whole collection (its forked collector is killed after).
  std::chrono::milliseconds rank_timeout{15000};
  bool render = true;  // merge and draw the flame graphs after collecting
};

class StackDumper {
 public:
  using CollectFn =
      std::function<stack::CollectResult(pid_t, const stack::CollectOptions& options)>;
  using DoneFn = std::function<void(std::shared_ptr<const StackDumpReport>)>;

  // `collect` is replaceable for tests; the default forks a collector per rank.
  explicit StackDumper(StackDumpSettings settings,
                       CollectFn collect = stack::collect_stacks_in_child);
  // Waits for a running dump (bounded by rank_timeout and the render).
  ~StackDumper();
  StackDumper(const StackDumper&) = delete;
  StackDumper& operator=(const StackDumper&) = delete;

  enum class StartStatus { kStarted, kBusy, kNoTargets, kFailed };
  struct Started {
    StartStatus status = StartStatus::kFailed;
    std::string dir;    // kStarted: the folder being written; kBusy: the running one
    std::string error;  // kFailed, kNoTargets: one line
  };
  // Creates the folder and starts collecting `targets` (reason "hang" or
  // "request"); never blocks on the ranks. A non-empty `hang_json` (the hang
  // report, as GET /hang) is written into the folder as hang.json first, so
  // that the flame graphs rendered there name the hang and the folder carries
  // its verdict wherever it is copied.
  Started start(std::vector<StackTarget> targets, const std::string& reason, DoneFn done,
                const std::string& hang_json = "");

  bool running() const;
  // The running or last dump; nullptr before the first.
  std::shared_ptr<const StackDumpReport> latest() const;

 private:
  struct Job {
    std::vector<StackTarget> targets;
    std::shared_ptr<StackDumpReport> report;  // owned by the coordinator until published
    DoneFn done;
  };
  void run(Job job);
  RankStackResult collect_one(const StackTarget& target, const std::string& dir);
  void render(StackDumpReport* report);
  bool make_folder(double now_unix_s, std::string* dir, std::string* error) const;

  const StackDumpSettings settings_;
  const CollectFn collect_;
  std::atomic<bool> permission_logged_{false};

  std::mutex start_mutex_;  // held through start(); never by the coordinator
  mutable std::mutex mutex_;
  bool running_ = false;
  std::shared_ptr<const StackDumpReport> latest_;
  // The newest coordinator; start() joins a finished one before replacing it.
  std::thread thread_;
};

}  // namespace xpu_timer::supervisor
