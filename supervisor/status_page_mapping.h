// A rank's status page file mapped read-only (RAII: unmapped on destruction).
// Created by the asio thread at registration; shared (shared_ptr) with the
// poll loop and HTTP threads, which only read it through the SIGBUS guard.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/protocol.h"

namespace xpu_timer::supervisor {

class StatusPageMapping {
 public:
  // Opens, maps and validates (magic, version, page_bytes, pid, rank).
  // nullptr with a one-line `error` when anything is wrong.
  static std::unique_ptr<StatusPageMapping> open(const std::string& path, pid_t expected_pid,
                                                 int expected_rank, std::string* error);
  ~StatusPageMapping();
  StatusPageMapping(const StatusPageMapping&) = delete;
  StatusPageMapping& operator=(const StatusPageMapping&) = delete;

  const proto::StatusPage* page() const { return page_; }
  const std::string& path() const { return path_; }

  // Seqlock copy of the whole page; false when busy or the file was truncated.
  bool read(proto::StatusPage* out) const;
  bool heartbeat(uint64_t* out) const;

 private:
  StatusPageMapping(const proto::StatusPage* page, std::string path)
      : page_(page), path_(std::move(path)) {}
  const proto::StatusPage* page_;
  std::string path_;
};

}  // namespace xpu_timer::supervisor
