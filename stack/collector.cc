#include "stack/collector.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "common/unique_fd.h"
#include "stack/mixed_stack.h"
#include "stack/native_unwinder.h"
#include "stack/proc_info.h"
#include "stack/proc_maps.h"
#include "stack/ptrace_session.h"
#include "stack/python_reader.h"
#include "stack/remote_memory.h"
#include "stack/stack_file.h"

namespace xpu_timer::stack {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What the tracer thread brings back.
struct StoppedCapture {
  AttachStatus status = AttachStatus::kFailed;
  std::vector<std::string> errors;
  double stopped_ms = 0;
  std::map<pid_t, std::vector<RawFrame>> raw;  // tids with registers
  std::map<pid_t, uint64_t> fs_base;
  std::vector<pid_t> attached_tids;
  PythonSnapshot python;
  bool have_python = false;
};

void capture_while_stopped(pid_t pid, const CollectOptions& opt, NativeUnwinder* unwinder,
                           PythonReader* python, const RemoteMemory& mem, StoppedCapture* out) {
  PtraceSession session;
  out->status = session.attach(pid, opt.stop_timeout);
  if (out->status == AttachStatus::kOk) {
    std::map<pid_t, user_regs_struct> regs;
    for (const auto& t : session.threads()) {
      out->attached_tids.push_back(t.tid);
      if (!t.stopped) continue;
      regs[t.tid] = t.regs;
      out->fs_base[t.tid] = t.regs.fs_base;
    }
    if (python) {
      out->python = python->read(mem);
      out->have_python = true;
    }
    if (unwinder) {
      std::string err;
      if (!unwinder->set_threads(regs, &err)) {
        out->errors.push_back(err);
      } else {
        for (const auto& [tid, r] : regs) {
          std::vector<RawFrame> frames;
          if (!unwinder->unwind(tid, &frames, &err)) out->errors.push_back(err);
          out->raw[tid] = std::move(frames);
        }
      }
    }
  }
  session.detach_all();
  out->stopped_ms = session.stopped_ms();
  for (const auto& e : session.errors()) out->errors.push_back(e);
  // Leaving this function ends the tracer thread: the kernel detaches any
  // thread that never reached its stop.
}

}  // namespace

CollectResult collect_stacks(pid_t pid, const CollectOptions& opt) {
  CollectResult result;
  ProcessStack& s = result.stack;
  s.pid = pid;
  s.rank = opt.rank;
  s.world_size = opt.world_size;
  s.host = host_name();
  s.collected_at = unix_now();
  auto state = read_process_state(pid);
  if (!state) {
    s.errors.push_back("process " + std::to_string(pid) + " does not exist");
    return result;
  }
  s.process_state = *state;

  // Before stopping: thread names and states, maps, interpreter, modules.
  std::map<pid_t, std::pair<std::string, char>> thread_info;
  for (pid_t tid : list_tasks(pid))
    thread_info[tid] = {read_thread_name(pid, tid), read_thread_state(pid, tid)};
  RemoteMemory mem(pid);
  std::unique_ptr<PythonReader> python;
  if (opt.python) {
    auto maps = read_maps(pid);
    std::string note;
    if (maps) python = PythonReader::find(pid, *maps, mem, &note);
    if (!python && state->front() != 'Z')
      s.errors.push_back(note.empty() ? "cannot read maps" : note);
    if (python) s.python_version = python->version();
  }
  std::unique_ptr<NativeUnwinder> unwinder;
  if (opt.native && state->front() != 'Z') {
    std::string err;
    unwinder = NativeUnwinder::create(pid, &err);
    if (!unwinder) s.errors.push_back(err);
  }

  StoppedCapture cap;
  std::thread tracer(
      [&] { capture_while_stopped(pid, opt, unwinder.get(), python.get(), mem, &cap); });
  tracer.join();
  s.stopped_ms = cap.stopped_ms;
  if (cap.status != AttachStatus::kOk) {
    // The attach error first: it is the one line a user needs.
    s.errors.insert(s.errors.begin(), cap.errors.begin(), cap.errors.end());
    for (const auto& [tid, info] : thread_info) {
      ThreadStack t;
      t.tid = tid;
      t.name = info.first;
      t.state = info.second;
      s.threads.push_back(std::move(t));
    }
    return result;
  }
  result.attached = true;
  s.errors.insert(s.errors.end(), cap.errors.begin(), cap.errors.end());
  s.errors.insert(s.errors.end(), cap.python.errors.begin(), cap.python.errors.end());
  if (unwinder) unwinder->drop_memory_cache();

  // Threads: those we attached to plus any listed before (which may have
  // exited since: they keep their name and state, with no frames).
  std::vector<pid_t> tids = cap.attached_tids;
  for (const auto& [tid, info] : thread_info)
    if (std::find(tids.begin(), tids.end(), tid) == tids.end() &&
        read_thread_state(pid, tid) != '?')
      tids.push_back(tid);
  std::sort(tids.begin(), tids.end(), [pid](pid_t a, pid_t b) {
    if ((a == pid) != (b == pid)) return a == pid;
    return a < b;
  });

  for (pid_t tid : tids) {
    ThreadStack t;
    t.tid = tid;
    auto info = thread_info.find(tid);
    if (info != thread_info.end()) {
      t.name = info->second.first;
      t.state = info->second.second;
    } else {
      t.name = read_thread_name(pid, tid);
      t.state = 'R';  // created during attach: it was running
    }
    auto raw = cap.raw.find(tid);
    if (unwinder && raw != cap.raw.end()) t.native = unwinder->symbolize(raw->second);
    if (cap.have_python) {
      const PythonThreadState* match = nullptr;
      for (const auto& ts : cap.python.threads) {
        if (ts.native_tid >= 0 ? ts.native_tid == tid
                               : (cap.fs_base.count(tid) && cap.fs_base[tid] == ts.thread_id)) {
          match = &ts;
          break;
        }
      }
      if (match) t.python = match->frames;
      if (cap.python.gil_holder)
        t.holds_gil = match != nullptr && *cap.python.gil_holder != 0 &&
                      *cap.python.gil_holder == match->tstate;
    }
    if (!opt.python) t.python.clear();
    t.mixed = build_mixed_stack(t.native, t.python);
    s.threads.push_back(std::move(t));
  }
  return result;
}

CollectResult collect_stacks_in_child(pid_t pid, const CollectOptions& opt) {
  CollectResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.stack.pid = pid;
    result.stack.errors.push_back(std::string("pipe2 failed: ") + strerror(errno));
    return result;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  pid_t child = fork();
  if (child < 0) {
    result.stack.pid = pid;
    result.stack.errors.push_back(std::string("fork failed: ") + strerror(errno));
    return result;
  }
  if (child == 0) {
    read_end.reset();
    CollectResult r = collect_stacks(pid, opt);
    // One byte for `attached`, then the stack file's text: the parent decodes
    // it with the stack file's own reader.
    std::string text = (r.attached ? "1" : "0") + stack_file_text(r.stack, -1);
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      ssize_t n = write(write_end.get(), p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(1);
      p += n;
      left -= static_cast<size_t>(n);
    }
    _exit(0);
  }
  write_end.reset();  // the child's copy is then the only writer: EOF when it exits
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + opt.child_timeout;
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{read_end.get(), POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(left.count()));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    char buf[65536];
    ssize_t n = read(read_end.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  read_end.reset();
  if (timed_out) kill(child, SIGKILL);  // a dead tracer releases the target
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::string err = "nothing written";
  std::optional<ProcessStack> parsed;
  if (!text.empty()) parsed = parse_stack_file(std::string_view(text).substr(1), &err);
  if (parsed) {
    result.stack = std::move(*parsed);
    result.attached = text[0] == '1';
    return result;
  }
  result.stack.pid = pid;
  result.stack.rank = opt.rank;
  result.stack.world_size = opt.world_size;
  result.stack.host = host_name();
  result.stack.collected_at = unix_now();
  if (auto st = read_process_state(pid)) result.stack.process_state = *st;
  if (timed_out) {
    result.stack.errors.push_back("stack collector timed out after " +
                                  std::to_string(opt.child_timeout.count()) +
                                  " ms and was killed; the target was released by the kernel");
  } else if (WIFSIGNALED(status)) {
    result.stack.errors.push_back("stack collector crashed (signal " +
                                  std::to_string(WTERMSIG(status)) +
                                  "); the target was released by the kernel");
  } else {
    result.stack.errors.push_back("stack collector returned no result (" + err + ")");
  }
  return result;
}

}  // namespace xpu_timer::stack
