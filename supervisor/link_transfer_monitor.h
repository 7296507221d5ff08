// The link transfer meter (analysis/link_transfer.h) as the supervisor runs
// it: the records the ring feed (ranks/ring_feed.h) finds final go to the
// meter, the pages' communicator names with them, and once a second its
// report is published for GET /metrics (metrics/transfer_metrics.h). It reads
// only what the ranks' flight recorders already hold: no collective, no CUDA
// call, nothing on the ranks' threads.
//
// Threads: on_ring_read() and poll() on the asio thread; published() from
// any thread (HTTP).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "supervisor/analysis/link_transfer.h"
#include "supervisor/analysis/rank_sample.h"
#include "supervisor/ranks/ring_feed.h"

namespace xpu_timer::supervisor {

class LinkTransferMonitor : public RingConsumer {
 public:
  static constexpr uint64_t kReportPeriodNs = 1'000'000'000;

  // `window_s`: the bandwidth's window, the metrics' (XPU_TIMER_METRICS_WINDOW_S).
  explicit LinkTransferMonitor(double window_s);

  void on_ring_read(const RingRead& read) override;
  void poll(const Snapshot& snap);
  std::shared_ptr<const TransferReport> published() const;

 private:
  LinkTransferMeter meter_;
  uint64_t reported_ns_ = 0;
  mutable std::mutex mutex_;
  std::shared_ptr<const TransferReport> published_ = std::make_shared<TransferReport>();
};

}  // namespace xpu_timer::supervisor
