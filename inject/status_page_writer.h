// The rank's status page: a file <run dir>/rank-<RANK>-<pid>.page holding one
// proto::StatusPage, mapped shared so the supervisor (another process) can map
// it read-only. See common/protocol.h for what each field means.
//
// Threads: create() runs once during Runtime initialisation; afterwards only
// the Poller writes the page (begin_write/end_write bracket the seqlock'ed
// part; heartbeat is written outside it); unlink() runs in the exit handler
// after the Poller stopped.
#pragma once

#include <cstdint>

#include "common/env_config.h"
#include "common/protocol.h"

namespace xpu_timer::inject {

class StatusPageWriter {
 public:
  StatusPageWriter() = default;
  StatusPageWriter(const StatusPageWriter&) = delete;
  StatusPageWriter& operator=(const StatusPageWriter&) = delete;

  // Creates, sizes, maps and fills the immutable part. False (with one log
  // line naming the failed call and errno) when anything fails.
  bool create(const char* run_dir, const RankIdentity& id, int pid);

  proto::StatusPage* page() { return page_; }
  const char* path() const { return path_; }

  // Seqlock writer side: the supervisor retries its copy while seq is odd.
  void begin_write();
  void end_write();
  void heartbeat(uint64_t now_ns);

  // Removes the file (the supervisor's mapping stays readable). Idempotent.
  void unlink_file();

 private:
  proto::StatusPage* page_ = nullptr;
  int fd_ = -1;
  bool unlinked_ = false;
  char path_[sizeof(proto::RegisterMsg::status_path)] = {};
};

}  // namespace xpu_timer::inject
