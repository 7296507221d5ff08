#include "supervisor/incidents/crash_python_stacks.h"

#include <algorithm>

#include "supervisor/incidents/signal_free_thread.h"

namespace xpu_timer::supervisor {

CrashPythonStacks python_stacks_of(const stack::CollectResult& collected, pid_t crashed_tid) {
  CrashPythonStacks out;
  const stack::ProcessStack& s = collected.stack;
  out.python_version = s.python_version;
  out.errors = s.errors;
  out.stopped_ms = s.stopped_ms;
  for (const stack::ThreadStack& t : s.threads) {
    const bool crashed = t.tid == crashed_tid;
    if (!crashed && t.python.empty()) continue;
    CrashPythonThread p;
    p.tid = t.tid;
    p.name = t.name;
    p.crashed = crashed;
    p.holds_gil = t.holds_gil;
    p.frames = t.python;
    out.threads.push_back(std::move(p));
  }
  for (const CrashPythonThread& t : out.threads) out.read_ok = out.read_ok || !t.frames.empty();
  for (const std::string& e : out.errors) {
    if (collected.attached && e.rfind("no Python interpreter found", 0) == 0) {
      out.python_process = false;
    }
  }
  if (!out.read_ok) {
    // Frameless threads of a read that failed say nothing: none are listed.
    out.threads.clear();
    if (out.errors.empty()) out.errors.push_back("no Python frames found in any thread");
    return out;
  }
  // The crashed thread first: the one a reader looks for.
  std::stable_partition(out.threads.begin(), out.threads.end(),
                        [](const CrashPythonThread& t) { return t.crashed; });
  return out;
}

CrashStackReader::CrashStackReader(std::function<void()> ready, CollectFn collect)
    : ready_(std::move(ready)), collect_(std::move(collect)) {}

CrashStackReader::~CrashStackReader() { wait_all(); }

void CrashStackReader::join_done() {
  for (auto it = reads_.begin(); it != reads_.end();) {
    if (it->done->load(std::memory_order_acquire)) {
      it->thread.join();
      it = reads_.erase(it);
    } else {
      ++it;
    }
  }
}

bool CrashStackReader::start(uint64_t key, pid_t pid, pid_t crashed_tid, UniqueFd release) {
  join_done();
  if (reads_.size() >= kMaxReads) return false;  // `release` closes here: the rank goes on
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto fd = std::make_shared<UniqueFd>(std::move(release));
  std::thread t = spawn_without_signals([this, key, pid, crashed_tid, done, fd] {
    stack::CollectOptions opt;
    opt.native = false;  // the handler sent the native stack; Python is what it cannot read
    opt.python = true;
    opt.child_timeout = kReadTimeout;
    CrashPythonStacks result = python_stacks_of(collect_(pid, opt), crashed_tid);
    fd->reset();  // the rank may die now
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.emplace_back(key, std::move(result));
    }
    done->store(true, std::memory_order_release);
    if (ready_) ready_();
  });
  reads_.push_back(Read{std::move(t), std::move(done)});
  return true;
}

std::vector<std::pair<uint64_t, CrashPythonStacks>> CrashStackReader::take_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(finished_, {});
}

void CrashStackReader::wait_all() {
  for (Read& r : reads_) r.thread.join();
  reads_.clear();
}

}  // namespace xpu_timer::supervisor
