// Small readers of /proc/PID for the collector: process and thread states,
// thread names, the task list, Yama's ptrace scope. No ptrace involved; each
// function opens, reads and closes its file (O_CLOEXEC).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::stack {

// Reads a whole small file (a /proc entry, at most 16 MiB) through
// common/file_reader.h; nullopt if it cannot be read or is not a regular file.
std::optional<std::string> read_small_file(const std::string& path);

// "S (sleeping)" from the State: line of /proc/PID/status; nullopt if gone.
std::optional<std::string> read_process_state(pid_t pid);

// The state letter (R, S, D, Z, T, t, X, ...) of one thread, '?' if gone.
char read_thread_state(pid_t pid, pid_t tid);

// Parses the state letter out of a /proc/.../stat line (the comm field may
// hold spaces and parentheses: the state follows the last ')').
char parse_stat_state(const std::string& stat_line);

std::string read_thread_name(pid_t pid, pid_t tid);

// Thread ids from /proc/PID/task, sorted; empty if the process is gone.
std::vector<pid_t> list_tasks(pid_t pid);

// /proc/sys/kernel/yama/ptrace_scope, or -1 when Yama is absent.
int read_yama_ptrace_scope();

std::string host_name();

}  // namespace xpu_timer::stack
