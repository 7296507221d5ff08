#include "supervisor/link_transfer_monitor.h"

#include <algorithm>

#include "common/comm_names.h"

namespace xpu_timer::supervisor {

LinkTransferMonitor::LinkTransferMonitor(double window_s)
    : meter_(static_cast<uint64_t>(window_s * 1e9)) {}

void LinkTransferMonitor::on_ring_read(const RingRead& read) {
  for (const recorder::RecordData& d : *read.final) {
    feed_transfer_record(&meter_, read.rank, d, read.now_ns);
  }
}

void LinkTransferMonitor::poll(const Snapshot& snap) {
  for (const RankSample& r : snap.ranks) {
    for (const proto::CommSlot& c : r.comms) {
      if (c.comm_hash != 0) meter_.note_comm_name(c.comm_hash, comm_slot_name(c));
    }
  }
  if (snap.now_ns - std::min(snap.now_ns, reported_ns_) < kReportPeriodNs) return;
  reported_ns_ = snap.now_ns;
  auto report = std::make_shared<const TransferReport>(meter_.report(snap.now_ns));
  std::lock_guard<std::mutex> lock(mutex_);
  published_ = std::move(report);
}

std::shared_ptr<const TransferReport> LinkTransferMonitor::published() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

}  // namespace xpu_timer::supervisor
