// Whether the kernel's OOM killer ended a rank that died without a report.
// The OOM killer sends SIGKILL, which no handler sees, and the kernel log
// (/dev/kmsg) is usually closed to us (dmesg_restrict); what a process
// without privileges can read are counters of OOM kills:
//   - cgroup v2: `oom_kill N` in memory.events of the rank's cgroup (from
//     /proc/PID/cgroup's "0::PATH", under the v2 mount), counting kills in
//     that cgroup and below;
//   - cgroup v1 (and hybrid hosts, whose v2 tree holds no controller):
//     `oom_kill N` in memory.oom_control of the rank's memory cgroup
//     ("N:memory:PATH", under <mount>/memory), Linux 4.13+;
//   - else the machine's count, `oom_kill N` in /proc/vmstat (Linux 4.13+).
// A counter is read when a rank is first seen and again when a death is
// concluded; the reading is the baseline for the next death of that cgroup,
// so an OOM kill already blamed is not blamed twice. The evidence is a fact
// ("memory.events oom_kill went 0->1"); it names the OOM killer as the cause
// only for a rank whose exit was SIGKILL or unknown (the killer sends nothing
// else). Files are untrusted text: a line that does not parse is no evidence.
//
// Threads: the asio thread (CrashTracker).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace xpu_timer::supervisor {

// The value of the `oom_kill` line of memory.events or /proc/vmstat text.
std::optional<uint64_t> parse_oom_kill(std::string_view text);
// The cgroup v2 path ("0::/a/b" line) of /proc/PID/cgroup text; nullopt for
// a v1-only process or text that does not parse.
std::optional<std::string> cgroup_v2_path(std::string_view text);
// The v1 memory controller's path ("4:memory:/a" or "4:cpu,memory:/a").
std::optional<std::string> cgroup_v1_memory_path(std::string_view text);

class OomEvidence {
 public:
  // `cgroup_root`: the cgroup v2 mount; `proc`: procfs. Tests point both at
  // fake trees.
  explicit OomEvidence(std::string cgroup_root = "/sys/fs/cgroup", std::string proc = "/proc");

  // A live rank: remembers its counter file and, for a file not seen
  // before, the counter's value now. Cheap when the pid is known.
  void note_rank(pid_t pid);
  // At the death of `pid`: "memory.events oom_kill went 0->1" when its
  // counter grew since the baseline (which then moves to the new value), "".
  std::string growth_since_noted(pid_t pid);
  void forget(pid_t pid) { file_of_.erase(pid); }

 private:
  std::string counter_file(pid_t pid) const;
  const std::string cgroup_root_;
  const std::string proc_;
  std::map<pid_t, std::string> file_of_;      // "" when none is readable
  std::map<std::string, uint64_t> baseline_;  // counter file -> last value
};

}  // namespace xpu_timer::supervisor
