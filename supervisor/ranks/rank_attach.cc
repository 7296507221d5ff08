#include "supervisor/ranks/rank_attach.h"

#include <unistd.h>

#include <string>

#include "common/clock.h"
#include "common/recorder_ring.h"
#include "common/status_page.h"
#include "supervisor/job/process_table.h"
#include "supervisor/log_tee.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {

std::optional<RankRecord> attach_rank(uint64_t connection_id, const RankRegistration& reg) {
  std::string error;
  auto mapping = proto::StatusPageFile::attach(reg.status_path, reg.pid, reg.rank, &error);
  if (!mapping) {
    SUP_LOG_WARN("rank %d (pid %d): registration refused: %s", reg.rank, reg.pid, error.c_str());
    return std::nullopt;
  }
  RankRecord record;
  record.reg = reg;
  if (auto st = read_proc_stat(reg.pid)) record.start_time = st->start_time;
  record.page = std::move(mapping);
  // The flight recorder is optional (XPU_TIMER_RECORDER_SIZE=0, or its file
  // could not be made): the rank is watched without it.
  const size_t slash = reg.status_path.rfind('/');
  const std::string ring_file = recorder::ring_path(
      slash == std::string::npos ? "." : reg.status_path.substr(0, slash), reg.rank, reg.pid);
  if (::access(ring_file.c_str(), F_OK) == 0) {
    std::string ring_error;
    record.ring = recorder::RingReader::attach(ring_file, reg.pid, reg.rank, &ring_error);
    if (!record.ring) {
      SUP_LOG_WARN("rank %d: flight recorder not readable: %s", reg.rank, ring_error.c_str());
    }
  }
  record.registered_ns = monotonic_ns();
  record.connection_id = connection_id;
  record.connected = true;
  return record;
}

bool admit_rank(RankRegistry* registry, uint64_t connection_id, const RankRegistration& reg) {
  std::optional<RankRecord> record = attach_rank(connection_id, reg);
  if (!record) return false;
  const pid_t replaced = registry->add(std::move(*record));
  if (replaced != 0 && replaced != reg.pid) {
    SUP_LOG_INFO("rank %d re-registered by pid %d (was pid %d)", reg.rank, reg.pid, replaced);
  } else {
    SUP_LOG_INFO("rank %d registered: pid %d on %s, local rank %d of %d, node %d, world %d",
                 reg.rank, reg.pid, reg.host.c_str(), reg.local_rank, reg.local_world_size,
                 reg.group_rank, reg.world_size);
  }
  return true;
}

}  // namespace xpu_timer::supervisor
