// Facts about processes read from /proc: liveness (a zombie counts as gone),
// start time (to notice pid reuse), and the descendants of a process (the
// supervisor is a child subreaper, so orphans of the job become its children).
// Pure reads; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::supervisor {

struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // R S D Z T t X ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  uint64_t start_time = 0;  // clock ticks after boot (field 22)
};

// Parses the text of /proc/PID/stat (the command name may hold spaces and
// parentheses: fields are read after the last ')'). nullopt when malformed.
std::optional<ProcStat> parse_proc_stat(const std::string& text);
std::optional<ProcStat> read_proc_stat(pid_t pid);

// True when `pid` exists, is not a zombie, and (when start_time != 0) is the
// same process that had that start time. Death is decided only from what
// proves it (no /proc/PID, a zombie, another start time, kill(pid, 0) failing
// with ESRCH), never from a failed read: a supervisor out of descriptors
// (a connection flood) must not take its ranks for dead.
bool process_alive(pid_t pid, uint64_t start_time = 0);

// Every live process whose parent chain reaches `root` (excluding root).
std::vector<pid_t> descendants_of(pid_t root);

}  // namespace xpu_timer::supervisor
