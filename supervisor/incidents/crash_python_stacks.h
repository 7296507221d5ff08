// The Python stacks of a rank that crashed, read from outside while its
// signal handler waits (proto::kCrashFlagAwaitsRelease): the same forked
// collector as the hang stacks (stack::collect_stacks_in_child, Python only),
// then the descriptor the report carried is closed, which lets the rank die.
// docs/architecture.md "Crash forensics".
//
// Bounds: the collector child is killed after kReadTimeout (below the rank's
// default wait, XPU_TIMER_CRASH_WAIT_MS), and the rank's handler stops
// waiting at its own bound whatever happens here, so a slow or broken read
// (a corrupted interpreter, a collector that crashed) costs the report its
// Python stacks, never the report itself or the rank's death.
//
// Threads: start(), take_finished() and wait_all() on the asio thread; each
// read runs on a thread of its own (crashes are rare; at most kMaxReads at
// once), which calls `ready` when its result can be taken (the caller posts
// it back to the asio thread).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/unique_fd.h"
#include "stack/collector.h"

namespace xpu_timer::supervisor {

struct CrashPythonThread {
  pid_t tid = 0;
  std::string name;
  bool crashed = false;                    // the thread the signal hit
  std::optional<bool> holds_gil;           // nullopt: unknown
  std::vector<stack::PythonFrame> frames;  // innermost first
};

// What the read found: the Python threads (the crashed thread always, with
// no frames when it runs no Python), or why there are none.
struct CrashPythonStacks {
  std::vector<CrashPythonThread> threads;
  std::optional<std::string> python_version;
  std::vector<std::string> errors;  // one line each; a partial or failed read
  // The interpreter was read: some thread's Python frames came back. Only
  // then may a thread without frames be said to run no Python.
  bool read_ok = false;
  // False when the collector found no interpreter at all (a C++ program):
  // then there is nothing to say about Python.
  bool python_process = true;
  double stopped_ms = 0;  // how long the rank was stopped by the read
};

// The threads worth reporting of a collected process: every thread with
// Python frames and the crashed one, the crashed one first.
CrashPythonStacks python_stacks_of(const stack::CollectResult& collected, pid_t crashed_tid);

class CrashStackReader {
 public:
  using CollectFn =
      std::function<stack::CollectResult(pid_t, const stack::CollectOptions& options)>;
  static constexpr std::chrono::milliseconds kReadTimeout{4000};
  static constexpr size_t kMaxReads = 4;

  // `ready` runs on the reading thread once a result can be taken.
  explicit CrashStackReader(std::function<void()> ready,
                            CollectFn collect = stack::collect_stacks_in_child);
  ~CrashStackReader();  // wait_all()
  CrashStackReader(const CrashStackReader&) = delete;
  CrashStackReader& operator=(const CrashStackReader&) = delete;

  // Reads `pid`'s Python stacks, then closes `release`. False, with `release`
  // closed at once, when kMaxReads reads are running.
  bool start(uint64_t key, pid_t pid, pid_t crashed_tid, UniqueFd release);
  // The results finished so far, by the key given to start().
  std::vector<std::pair<uint64_t, CrashPythonStacks>> take_finished();
  // Joins every read (each bounded by kReadTimeout).
  void wait_all();

 private:
  struct Read {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void join_done();

  const std::function<void()> ready_;
  const CollectFn collect_;
  std::vector<Read> reads_;  // asio thread
  std::mutex mutex_;
  std::vector<std::pair<uint64_t, CrashPythonStacks>> finished_;  // mutex_
};

}  // namespace xpu_timer::supervisor
