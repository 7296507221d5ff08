// The ranks of this node that registered, keyed by global rank. Written by
// the asio thread (registrations, disconnects); read by the poll loop (same
// thread) and the HTTP threads through snapshot(). All access under mutex_;
// pages are shared_ptr so a snapshot stays valid after a re-registration.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/recorder_ring.h"
#include "common/status_page.h"
#include "supervisor/ranks/register_message.h"

namespace xpu_timer::supervisor {

struct RankRecord {
  RankRegistration reg;
  uint64_t start_time = 0;  // /proc start time at registration (pid reuse check)
  std::shared_ptr<const proto::StatusPageFile> page;  // attached at registration; read() only
  // The rank's flight recorder, mapped at registration (nullptr: none); the
  // mapping outlives the rank, so a dead rank's ring can still be dumped.
  std::shared_ptr<const recorder::RingReader> ring;
  uint64_t registered_ns = 0;  // CLOCK_MONOTONIC of the registration
  uint64_t connection_id = 0;
  bool connected = false;
};

class RankRegistry {
 public:
  // Adds or replaces the record of record.reg.rank. Returns the pid it
  // replaced (0 when the rank is new).
  pid_t add(RankRecord record);
  // The connection that registered a rank closed; the rank may live on.
  // Returns that rank's record (nullopt: the connection registered none).
  std::optional<RankRecord> on_disconnect(uint64_t connection_id);

  std::vector<RankRecord> snapshot() const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<int, RankRecord> ranks_;
};

// Global ranks this node should run, from the registrations' group_rank and
// local_world_size: group_rank * local_world_size + [0, local_world_size).
// Sorted, unique; always includes the registered ranks.
std::vector<int> expected_ranks(const std::vector<RankRecord>& records);

}  // namespace xpu_timer::supervisor
