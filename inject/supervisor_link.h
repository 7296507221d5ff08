// The rank's connection to the supervisor: a SOCK_SEQPACKET unix socket on
// which the rank sends one RegisterMsg naming its status page, and whose
// hang-up tells the rank that nobody watches any more.
//
// Threads: connect_and_register() during Runtime initialisation; alive() on
// the Poller; close_fd() in the exit handler or the fork child handler (it
// only calls close(2), which is async-signal-safe).
#pragma once

#include "common/rank_messages.h"

namespace xpu_timer::inject {

class SupervisorLink {
 public:
  SupervisorLink() = default;
  SupervisorLink(const SupervisorLink&) = delete;
  SupervisorLink& operator=(const SupervisorLink&) = delete;

  // Connects (retrying briefly while the listen backlog is full) and sends
  // `msg`. False, with one log line naming the failed call, otherwise.
  bool connect_and_register(const char* socket_path, const proto::RegisterMsg& msg);
  // Non-blocking check: false once the supervisor closed its end or the
  // socket reported an error. Messages from the supervisor are read and
  // ignored (none is defined in protocol v1).
  bool alive();
  void close_fd();
  // For the crash handler, which sends its one report on this socket.
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace xpu_timer::inject
