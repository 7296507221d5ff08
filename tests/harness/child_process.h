// The one harness for tests that run other programs (the supervisor, sim
// jobs, stack targets, probes). A Child runs in a process group of its own;
// its destructor SIGKILLs that group and reaps the child, so a failed
// assertion never leaves processes behind. Every wait is bounded, and the
// bound is only a bound: waits return on the event itself (the child's exit
// through a pidfd, a line on a readiness pipe), or poll where the event can
// only be polled (text in a log file, a thread's state in /proc).
//
// Readiness handshake: with ChildOptions::ready_fd the child gets the write
// end of a pipe as that fd ("{ready_fd}" in argv becomes its number) and says
// "ready" (or anything) on it; wait_ready_line() returns each line.
//
// Used by the test's main thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::testing {

// How a process ended, as waitpid reported it.
struct ExitStatus {
  bool exited = false;  // exited normally with `code`
  int code = 0;
  bool signaled = false;  // killed by `signal`
  int signal = 0;
  bool operator==(const ExitStatus& o) const {
    return exited == o.exited && code == o.code && signaled == o.signaled && signal == o.signal;
  }
  // As a shell reports it: the exit code, or 128 + the signal.
  int shell_code() const { return signaled ? 128 + signal : code; }
};
std::string describe(const ExitStatus& s);

struct ChildOptions {
  // stdout and stderr are appended to this file; empty: to an anonymous one.
  // Either way output() reads them back.
  std::string log_path;
  // false: stderr stays this process's (shown in the test log), so that
  // output() is the child's stdout alone.
  bool capture_stderr = true;
  // >= 0: the write end of a readiness pipe becomes this fd of the child (1:
  // its stdout goes to the pipe instead of the log).
  int ready_fd = -1;
};

class Child {
 public:
  // Starts argv (argv[0] a path or a name looked up in PATH) with `env`
  // applied to this process's environment: "NAME=value" sets NAME, "NAME="
  // removes it. stdin is a pipe that close_stdin() closes. A failure to
  // start is a test failure (ADD_FAILURE); pid() is then -1.
  Child(std::vector<std::string> argv, std::vector<std::string> env = {},
        ChildOptions options = {});
  // The same on the heap, for a braced argv (make_unique cannot deduce one).
  static std::unique_ptr<Child> start(std::vector<std::string> argv,
                                      std::vector<std::string> env = {}, ChildOptions options = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // Everything written to the child's stdout/stderr so far (its descendants' too).
  std::string output() const;
  // Waits until output() contains `needle`; false on timeout.
  bool wait_for_output(const std::string& needle, std::chrono::milliseconds timeout);
  // The next line on the readiness pipe, without its newline; "" on timeout or EOF.
  std::string wait_ready_line(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The child then reads EOF on stdin.
  void close_stdin();

  // Waits up to `timeout` for the child to end (and reaps it); nullopt while
  // it still runs. Once ended, returns the same status at once.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // The shell-style code of wait_for(timeout), -1 when it still runs.
  int wait_exit_code(std::chrono::milliseconds timeout);
  // Sends `sig` to the child only (SIGSTOP / SIGCONT included); false once it was reaped.
  bool signal(int sig);
  // SIGKILL to its whole process group, then reap.
  void kill_group();

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;      // readable once the child has ended; -1 without pidfd_open
  int stdin_fd_ = -1;   // write end of the child's stdin
  int output_fd_ = -1;  // read side of the output file
  int ready_read_fd_ = -1;
  std::string ready_buffer_;
  std::optional<ExitStatus> status_;
};

// Runs argv to its end with stdout+stderr in `log_path` and returns how it
// ended; a run past `timeout` is a test failure (the log is shown) and killed.
ExitStatus run_to_end(std::vector<std::string> argv, std::vector<std::string> env,
                      const std::string& log_path, std::chrono::milliseconds timeout);

// Polls `pred` every 10 ms until it holds or `timeout` passes: for events
// that can only be polled.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
// Whether python3() runs and has ctypes (the simulated trainer's Python side).
bool have_python();
// The Python interpreter the tests start: the one `python3` runs, by its own
// path (a version manager's `python3` is a script that costs a few hundred
// milliseconds of CPU on every start).
std::string python3();
// "<prefix>-<this pid>-<n>", unique to this test process and call.
std::string unique_name(const std::string& prefix);

// State letter of a process from /proc/PID/stat ('R', 'S', 'D', 'Z', 't',
// 'T', ...); '?' when it is gone.
char process_state(pid_t pid);
// True while `pid` exists and is not a zombie.
bool process_alive(pid_t pid);
// The state letter of each thread of `pid`; "" when it is gone.
std::string thread_states(pid_t pid);
// True if no thread of `pid` is in a ptrace or job-control stop ('t' / 'T').
bool no_thread_stopped(pid_t pid);
// Waits until `pid` has threads and each one's state letter is in `allowed`.
bool wait_threads_state(pid_t pid, const std::string& allowed, std::chrono::milliseconds timeout);

}  // namespace xpu_timer::testing
