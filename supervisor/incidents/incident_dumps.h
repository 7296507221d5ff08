// The evidence of an incident, in one place: the ranks' stacks (stack_dump.h)
// and their flight recorders (timeline_dump.h), taken for a hang, a crash, a
// collective mismatch, another node's request, or POST /dump/stacks and
// POST /dump/timeline. Without a usable --dump-dir there is nothing to write
// to: every dump is refused with one line.
//
// Threads: any (the asio thread for incidents, HTTP threads for requests);
// the stack dumper and the timeline dumps are thread-safe themselves.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervisor/incidents/stack_dump.h"
#include "supervisor/incidents/timeline_dump.h"
#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

class IncidentDumps {
 public:
  // The registered ranks now (RankRegistry::snapshot).
  using RanksFn = std::function<std::vector<RankRecord>()>;

  // `dump_dir` empty: no usable dump directory, nothing is dumped.
  IncidentDumps(std::string dump_dir, RanksFn ranks);
  ~IncidentDumps();

  bool enabled() const { return stacks_ != nullptr; }
  // nullptr when !enabled().
  StackDumper* stacks() const { return stacks_.get(); }

  // Copies every rank's ring into a new folder and converts it (`reason`:
  // "hang", "crash", "mismatch", "request", "remote-..."); `hang_json` is the
  // hang document stored beside the rings ("" for none). Logs the outcome.
  TimelineDumpResult timelines(const std::string& reason, const std::string& hang_json);
  // Starts collecting the stacks of the ranks alive now (logs the folder).
  StackDumper::Started stacks_for(const std::string& reason, StackDumper::DoneFn done,
                                  const std::string& hang_json = "");
  // Both, for an incident that is not a hang (a mismatch, another node's
  // request): {"timeline": {"dir"}|null, "stacks": {"dir"}|null}. `done`
  // runs on the dumper's thread when the stacks are in (only if they started).
  nlohmann::json timelines_and_stacks(const std::string& reason,
                                      StackDumper::DoneFn done = nullptr);

  // POST /dump/stacks and POST /dump/timeline: the HTTP status and JSON body.
  // A timeline request while a conversion runs or waits is 409 naming its
  // folder, and one within kRequestIntervalS of the previous accepted one is
  // 429 (`retry_after_s`), so that a flood of requests cannot fill the disk
  // or keep the dumper busy.
  int stacks_request(StackDumper::DoneFn done, std::string* json_body);
  int timeline_request(const std::string& hang_json, std::string* json_body);
  static constexpr double kRequestIntervalS = 2.0;

  TimelineDumper& timeline_dumper() { return timelines_; }

  // The folder of the latest timeline dump that worked; "" before the first.
  std::string latest_timeline_dir() const;

 private:
  const std::string dump_dir_;
  const RanksFn ranks_;
  std::unique_ptr<StackDumper> stacks_;
  TimelineDumper timelines_;
  mutable std::mutex mutex_;
  std::string latest_timeline_dir_;          // mutex_
  uint64_t last_timeline_request_ns_ = 0;    // mutex_: CLOCK_MONOTONIC of the last accepted
};

}  // namespace xpu_timer::supervisor
