// Dumps of the ranks' flight recorders (common/recorder_ring.h): on every
// hang verdict, every crash or death, a collective mismatch, another node's
// request, and on POST /dump/timeline, each rank's ring is copied out of its
// shared mapping into `<dump-dir>/timeline-<time>-<reason>/RRRRR-WWWWW.timeline`,
// with the hang document of that moment as hang.json, and converted to the
// Perfetto-loadable trace timeline.json (timeline/trace_conversion.h).
//
// Reading a ring needs nothing from the rank: it works while the rank is
// stopped by ptrace, hung in a host call, holds the GIL for ever, or is dead
// (the supervisor mapped its ring at registration; the mapping outlives the
// file).
//
// Threads: dump() from any thread (the asio thread, the HTTP thread); it
// copies the rings and writes the files on the caller's thread (a memory
// copy and a few MB written: milliseconds, bench/timeline_bench.cc) and
// hands the conversion, which takes up to a second at 32 ranks, to the
// dumper's own thread, from the images already in memory. So a verdict,
// /metrics and /healthz never wait for a conversion. One conversion runs at a
// time; at most kMaxQueued wait, and a dump beyond that keeps its files but is
// not converted (the result says so: `xpu_timer_gen_trace_timeline --path
// DIR` converts it later). The destructor finishes the running and queued
// conversions, then joins the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/recorder_ring.h"

namespace xpu_timer::supervisor {

struct TimelineTarget {
  int rank = 0;
  int world_size = 1;
  std::shared_ptr<const recorder::RingReader> ring;  // nullptr: the rank has no recorder
  // The names its status page gives its communicators (hash -> "tp"):
  // written beside the rings as comms.json, shown in the trace.
  std::map<uint64_t, std::string> comm_names;
};

struct TimelineDumpResult {
  bool ok = false;                  // the folder exists and holds at least one ring
  std::string dir;                  // the folder written
  std::string trace;                // timeline.json, once converted (see `converting`)
  bool converting = false;          // the trace is being made on the dumper's thread
  std::vector<int> ranks;           // ranks whose ring was written
  uint64_t records = 0;             // records written, all ranks
  std::vector<std::string> errors;  // one line per rank or step that failed
};

class TimelineDumper {
 public:
  static constexpr size_t kMaxQueued = 2;

  TimelineDumper();
  ~TimelineDumper();
  TimelineDumper(const TimelineDumper&) = delete;
  TimelineDumper& operator=(const TimelineDumper&) = delete;

  // `reason`: "hang", "crash", "request", ... `hang_json`: the hang document
  // to store beside the rings ("" for none). Never throws.
  TimelineDumpResult dump(const std::vector<TimelineTarget>& targets, const std::string& dump_dir,
                          const std::string& reason, const std::string& hang_json,
                          double now_unix_s);

  // A conversion is running or waiting; *dir names the folder being
  // converted (for a "busy" answer).
  bool busy(std::string* dir = nullptr) const;
  // Conversions finished (or given up) since the start; tests wait on it.
  uint64_t converted() const;
  // Waits until no conversion runs or waits, at most `timeout_ms`; false on
  // timeout.
  bool wait_idle(int timeout_ms) const;
  // Tests: runs on the dumper's thread before each conversion (to hold one).
  void set_convert_hook(std::function<void(const std::string& dir)> hook);

 private:
  struct Job;
  void run();
  void convert(const Job& job);

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<std::unique_ptr<Job>> queue_;  // the front one is running when running_
  bool running_ = false;
  bool stopping_ = false;
  uint64_t converted_ = 0;
  std::string current_dir_;
  std::function<void(const std::string&)> convert_hook_;  // mutex_
  std::thread thread_;  // last: started after everything it uses
};

}  // namespace xpu_timer::supervisor
