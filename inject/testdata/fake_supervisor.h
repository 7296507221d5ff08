// A minimal stand-in for xpu_timer_supervisor in the inject integration
// tests: listens on a SOCK_SEQPACKET unix socket in a fresh temporary
// directory (also the run dir), accepts ranks' registrations and maps their
// status pages read-only, exactly as the real supervisor does.
// Used by the test's main thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/op_names.h"
#include "common/rank_messages.h"
#include "common/status_page.h"
#include "common/status_page_layout.h"

namespace xpu_timer::inject::testing {

struct RegisteredRank {
  int fd = -1;  // the accepted connection (closing it = supervisor gone)
  proto::RegisterMsg msg{};
  std::unique_ptr<proto::StatusPageFile> page;  // attached as the supervisor attaches it

  // Validated copy of the page (heap: the page is ~72 KB); nullptr when the
  // read failed.
  std::unique_ptr<proto::StatusPage> snapshot() const;
  uint64_t heartbeat_ns() const;
  void disconnect();
};

class FakeSupervisor {
 public:
  FakeSupervisor();
  ~FakeSupervisor();
  FakeSupervisor(const FakeSupervisor&) = delete;
  FakeSupervisor& operator=(const FakeSupervisor&) = delete;

  bool ok() const { return listen_fd_ >= 0; }
  const std::string& dir() const { return dir_; }
  const std::string& socket_path() const { return socket_path_; }
  // Environment for a child: XPU_TIMER_SOCKET and XPU_TIMER_RUN_DIR.
  std::vector<std::string> env() const;

  // Accepts one connection and its RegisterMsg within timeout_s and maps the
  // page it names; nullptr (with *error set) otherwise.
  RegisteredRank* accept_rank(double timeout_s, std::string* error);
  // True if a connection arrives within timeout_s (it is accepted and kept).
  bool connection_pending(double timeout_s);
  // Files in dir() whose names end in ".page".
  std::vector<std::string> page_files() const;

 private:
  std::string dir_;
  std::string socket_path_;
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<RegisteredRank>> ranks_;
  std::vector<int> extra_fds_;
};

// The page's metric slot of (name, dtype) and, when size_bucket >= 0, that
// size bucket; nullptr if none.
const proto::MetricSlot* find_metric(const proto::StatusPage& p, proto::OpName name,
                                     proto::DType dtype, int size_bucket = -1);

}  // namespace xpu_timer::inject::testing
