#include "stack/ptrace_session.h"

#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "stack/proc_info.h"

namespace xpu_timer::stack {
namespace {

// Bound on re-listing /proc/PID/task: a process spawning threads faster than
// we can stop them is given a partial result rather than an endless loop.
constexpr int kMaxListRounds = 50;

void short_sleep() {
  timespec ts{0, 200 * 1000};  // 200 us
  nanosleep(&ts, nullptr);
}

std::string permission_message(pid_t pid) {
  int scope = read_yama_ptrace_scope();
  return "cannot attach to " + std::to_string(pid) +
         ": operation not permitted (Yama ptrace_scope=" +
         (scope < 0 ? std::string("absent") : std::to_string(scope)) +
         "; needs CAP_SYS_PTRACE or being an ancestor)";
}

}  // namespace

bool PtraceSession::seize_and_interrupt(pid_t tid, AttachStatus* fatal) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    if (errno == ESRCH) return false;  // thread vanished: fine
    if (errno == EPERM) {
      // EPERM on a zombie thread is not a permission problem.
      char st = read_thread_state(pid_, tid);
      if (st == 'Z' || st == 'X' || st == '?') return false;
      *fatal = AttachStatus::kPermission;
      errors_.insert(errors_.begin(), permission_message(pid_));
      return false;
    }
    errors_.push_back("PTRACE_SEIZE of thread " + std::to_string(tid) +
                      " failed: " + strerror(errno));
    return false;
  }
  StoppedThread t;
  t.tid = tid;
  if (!stop_started_) {
    stop_started_ = true;
    stop_begin_ = std::chrono::steady_clock::now();
  }
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 && errno != ESRCH) {
    errors_.push_back("PTRACE_INTERRUPT of thread " + std::to_string(tid) +
                      " failed: " + strerror(errno));
  }
  threads_.push_back(t);
  return true;
}

void PtraceSession::wait_for_stops(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool pending = false;
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (it->stopped) {
        ++it;
        continue;
      }
      int status = 0;
      if (it->tid == pid_) {
        // The leader's exit status belongs to its parent (which may be our
        // own process): wait for stops only (WSTOPPED), detect exit via /proc.
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(it->tid), &info, WSTOPPED | WNOHANG | __WALL) != 0) {
          it = threads_.erase(it);
          continue;
        }
        if (info.si_pid == 0) {
          char st = read_thread_state(pid_, it->tid);
          if (st == 'Z' || st == 'X' || st == '?') {
            it = threads_.erase(it);
            continue;
          }
          pending = true;
          ++it;
          continue;
        }
        // waitid's si_status holds what waitpid puts in bits 8-23.
        status = (info.si_status << 8) | 0x7f;
      } else {
        pid_t r = waitpid(it->tid, &status, __WALL | WNOHANG);
        if (r < 0) {  // ECHILD: gone (or no longer ours)
          it = threads_.erase(it);
          continue;
        }
        if (r == 0) {
          pending = true;
          ++it;
          continue;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
          it = threads_.erase(it);
          continue;
        }
      }
      if (WIFSTOPPED(status)) {
        int event = status >> 16;
        int sig = WSTOPSIG(status);
        // PTRACE_EVENT_STOP: our interrupt (or a group stop). Anything else
        // is a signal-delivery stop: the thread is stopped too, and the
        // signal must be given back at detach or it would be lost.
        if (event == 0 && sig != SIGTRAP) it->pending_signal = sig;
        it->stopped = true;
        if (ptrace(PTRACE_GETREGS, it->tid, nullptr, &it->regs) != 0) {
          errors_.push_back("cannot read registers of thread " + std::to_string(it->tid) + ": " +
                            strerror(errno));
        }
      }
      ++it;
    }
    if (!pending) return;
    if (std::chrono::steady_clock::now() >= deadline) return;
    short_sleep();
  }
}

AttachStatus PtraceSession::attach(pid_t pid, std::chrono::milliseconds stop_timeout) {
  pid_ = pid;
  auto state = read_process_state(pid);
  if (!state) {
    errors_.push_back("process " + std::to_string(pid) + " does not exist");
    return AttachStatus::kNoProcess;
  }
  std::vector<pid_t> tids = list_tasks(pid);
  bool all_dead = !tids.empty();
  for (pid_t tid : tids) {
    char st = read_thread_state(pid, tid);
    if (st != 'Z' && st != 'X' && st != '?') all_dead = false;
  }
  if (tids.empty() || all_dead) {
    errors_.push_back("process " + std::to_string(pid) + " is a zombie (" + *state +
                      "): no thread to attach to");
    return AttachStatus::kZombie;
  }
  auto deadline = std::chrono::steady_clock::now() + stop_timeout;
  std::set<pid_t> seen;
  bool stable = false;
  for (int round = 0; round < kMaxListRounds && !stable; ++round) {
    stable = true;
    for (pid_t tid : list_tasks(pid)) {
      if (!seen.insert(tid).second) continue;
      stable = false;
      char st = read_thread_state(pid, tid);
      if (st == 'Z' || st == 'X' || st == '?') continue;  // exited thread: nothing to stop
      AttachStatus fatal = AttachStatus::kOk;
      seize_and_interrupt(tid, &fatal);
      if (fatal != AttachStatus::kOk) {
        detach_all();
        return fatal;
      }
    }
    // Only stopped threads cannot create new ones: wait, then list again.
    wait_for_stops(deadline);
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  if (!stable)
    errors_.push_back("thread list still changing after attach; result may miss threads");
  if (threads_.empty()) {
    if (!read_process_state(pid)) {
      errors_.push_back("process " + std::to_string(pid) + " exited during attach");
      return AttachStatus::kNoProcess;
    }
    errors_.push_back("could not stop any thread of " + std::to_string(pid));
    return AttachStatus::kFailed;
  }
  for (const auto& t : threads_) {
    if (t.stopped) continue;
    char st = read_thread_state(pid, t.tid);
    errors_.push_back("thread " + std::to_string(t.tid) + " did not stop within " +
                      std::to_string(stop_timeout.count()) + " ms (state " + std::string(1, st) +
                      (st == 'D' ? ": uninterruptible sleep" : "") + "); no native stack");
  }
  return AttachStatus::kOk;
}

void PtraceSession::detach_all() {
  if (detached_) return;
  detached_ = true;
  for (const auto& t : threads_) {
    if (t.stopped) {
      ptrace(PTRACE_DETACH, t.tid, nullptr,
             reinterpret_cast<void*>(static_cast<intptr_t>(t.pending_signal)));
    } else {
      // Not stopped: PTRACE_DETACH fails with ESRCH while it runs. Try anyway
      // (it may have stopped just now); otherwise the kernel detaches it when
      // this tracer thread exits, dropping the pending interrupt.
      if (ptrace(PTRACE_DETACH, t.tid, nullptr, nullptr) != 0) {
        int status = 0;
        if (waitpid(t.tid, &status, __WALL | WNOHANG) == t.tid && WIFSTOPPED(status))
          ptrace(PTRACE_DETACH, t.tid, nullptr, nullptr);
      }
    }
  }
  if (stop_started_) stop_end_ = std::chrono::steady_clock::now();
}

double PtraceSession::stopped_ms() const {
  if (!stop_started_) return 0;
  auto end = detached_ ? stop_end_ : std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(end - stop_begin_).count();
}

}  // namespace xpu_timer::stack
