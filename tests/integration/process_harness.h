// Test-side helpers to run real processes: the supervisor, sim jobs, bare
// commands. Each Child is killed (whole process group) and reaped when it
// goes out of scope, so a failing assertion never leaves processes behind.
// Used by the test's main thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::testing {

// Folders baked in at build time.
std::string build_dir();
std::string source_dir();
std::string python3();

// How a process ended, as waitpid reported it.
struct ExitStatus {
  bool exited = false;  // exited normally with `code`
  int code = 0;
  bool signaled = false;  // killed by `signal`
  int signal = 0;
  bool operator==(const ExitStatus& o) const {
    return exited == o.exited && code == o.code && signaled == o.signaled && signal == o.signal;
  }
};
std::string describe(const ExitStatus& s);

class Child {
 public:
  // Starts argv in a new process group with `env` added to this environment
  // (entries "NAME=value"; "NAME=" removes NAME). stdout+stderr go to `log_path`.
  Child(std::vector<std::string> argv, std::vector<std::string> env, const std::string& log_path);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout` for the child to end; nullopt if it is still running.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  void signal(int sig);  // to the child only
  void kill_group();     // SIGKILL to its process group, then reap

 private:
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

// Runs to completion (bounded) and returns the status; ADD_FAILURE on timeout.
ExitStatus run_to_end(std::vector<std::string> argv, std::vector<std::string> env,
                      const std::string& log_path, std::chrono::milliseconds timeout);

// Polls `pred` every 50 ms until it is true or `timeout` passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
// A fresh empty folder under the test temp dir, removed by nobody (CTest runs in the build tree).
std::string make_temp_dir(const std::string& name);

// HTTP GET on 127.0.0.1:port; nullopt when the connection fails.
struct HttpReply {
  int status = 0;
  std::string body;
};
std::optional<HttpReply> http_get(int port, const std::string& path);
// POST with an empty body.
std::optional<HttpReply> http_post(int port, const std::string& path);
std::optional<HttpReply> http_request(int port, const std::string& method, const std::string& path);

// True while `pid` exists and is not a zombie.
bool process_alive(pid_t pid);

}  // namespace xpu_timer::testing
