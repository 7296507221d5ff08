// The background thread of the injected library. Every pass (about 1 ms
// while work is pending, 5 ms when idle) it:
//   1. drains the hooks' record queue into one FIFO per (device, stream),
//   2. queries the head record of each FIFO in launch order (cudaEventQuery),
//      notes when its start event completed (started_ns: the origin of its
//      hang clock, docs/architecture.md "Hang detection") and, once its end
//      event did,
//      turns the pair into a duration, gives the events back to their pool
//      and folds the operation into the metrics and per-communicator progress,
//   3. publishes issued/completed totals, the in-flight operation the hang
//      clock follows (hang_clock_op()),
//      comms[], metrics[] and counters into the status page under its
//      seqlock, and refreshes the heartbeat,
//   4. checks whether the supervisor is still connected.
//
// Threads: its own thread only (started by the Runtime, all signals blocked),
// except request_stop()/wait_done() which the exit handler calls. Its first
// CUDA call is cudaSetDevice(device of the first record), so it never creates
// a context on device 0 of a rank that uses another GPU.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "common/recorder_ring.h"
#include "common/status_page_layout.h"
#include "inject/gpu_clock.h"
#include "inject/metrics_table.h"
#include "inject/nvtx_ranges.h"
#include "inject/op_record.h"
#include "inject/step_bubbles.h"

namespace xpu_timer::inject {

struct RuntimeState;
struct EventPair;

class Poller {
 public:
  explicit Poller(RuntimeState* state);
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  bool start();
  void request_stop() { stop_.store(true, std::memory_order_release); }
  // Waits up to timeout_ns for the thread to leave its loop; never joins a
  // thread that does not come back (it is detached).
  bool wait_done(uint64_t timeout_ns) const;

 private:
  struct Pending {
    OpRecord rec;
    uint64_t started_ns = 0;         // when its start event was seen complete; 0: not yet
    uint64_t ring_pos = kNoRingPos;  // its flight-recorder record
    uint64_t gpu_start_ns = 0;       // host-clock GPU times, once known
    uint64_t gpu_end_ns = 0;
    bool keep_pair = false;  // its start event is the GPU clock's reference
  };
  static constexpr uint64_t kNoRingPos = ~0ull;
  using StreamKey = std::pair<int, uintptr_t>;  // (device, cudaStream_t)

  static void* thread_main(void* self);
  void run();
  void drain_queue();
  // NVTX ranges, steps and the other host events (nvtx_ranges.h): into the
  // page's tables and the flight recorder.
  void drain_ranges();
  // Every kLaunchSampleNs: the kernels launched since the previous sample,
  // and the time the host blocked on its GPU (host_blocked.h), as one
  // flight-recorder record (a launch is too frequent to record alone).
  void sample_launches(uint64_t now_ns, bool force);
  static constexpr uint64_t kLaunchSampleNs = 100'000'000;
  // A step: its counters, its flight-recorder record, its GPU idle window.
  void add_step(const RangeRecord& r);
  // A completed host range's flight-recorder record over [start_ns, end_ns].
  static recorder::RecordData host_record(uint16_t op_name, uint64_t start_ns, uint64_t end_ns);
  // Appends the flight-recorder record of a host event; its position
  // (kNoRingPos without a recorder).
  uint64_t record_range(const RangeRecord& r, uint16_t op_name);
  // Measures the steps whose operations are all accounted (step_bubbles.h).
  void settle_steps(uint64_t pass_start_ns);
  void complete_ready(uint64_t now_ns, bool honour_stop);
  // False when a CUDA error of ours ended timing.
  bool process_head(Pending& p, uint64_t now_ns, bool* done);
  // Asks whether the head's recorded end event completed, and if so
  // completes it (*done). False when a CUDA error of ours ended timing.
  bool ask_end(Pending& p, EventPair& pair, uint64_t now_ns, bool* done);
  // The head whose end event a query found complete: timed or counted, and
  // finished (*done). False when a CUDA error of ours ended timing.
  bool complete_head(Pending& p, EventPair& pair, uint64_t now_ns, bool* done);
  // The hang clock's origin of `p`, its start event seen complete in the
  // pass that began at now_ns.
  static uint64_t started_at(const Pending& p, uint64_t now_ns);
  // kNotRun: the call failed or was never launched; kCounted: completed,
  // sampled out of timing; kTimed: completed with `duration_ns`.
  enum class Outcome { kNotRun, kCounted, kTimed };
  void finish(const Pending& p, uint64_t duration_ns, Outcome outcome, uint64_t now_ns);
  void return_pair(const OpRecord& rec);
  // Flight recorder: the record of `p` in `state` (recorder::OpState).
  void record(Pending& p, uint8_t state);
  bool use_device(int device);
  void cuda_failed(const char* call, int err);
  void publish(uint64_t now_ns);
  // The page's oldest_inflight: of the operations in flight that started on
  // the GPU, the one that started first; if none did, the one launched first.
  // Null when nothing is in flight.
  const Pending* hang_clock_op() const;
  void fill_comms(proto::StatusPage* page);
  static proto::OpRef op_ref_of(const Pending& p);

  RuntimeState* const state_;
  const uint64_t busy_pass_ns_;  // sleep between passes while work is pending
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};

  std::map<StreamKey, std::deque<Pending>> fifos_;
  GpuClock gpu_clock_;
  // Maps p's GPU times through the clock (ring on only) and settles which
  // pair the clock keeps.
  void map_gpu_times(Pending& p, cudaEvent_t start, cudaEvent_t end, uint64_t duration_ns,
                     uint64_t seen_ns);
  uint64_t issued_total_ = 0;
  uint64_t completed_total_ = 0;
  uint32_t inflight_ = 0;
  uint64_t poller_errors_ = 0;  // our CUDA errors seen on this thread
  uint64_t self_read_ns_ = 0;   // when self_cpu_ns_ was read
  uint64_t handler_watch_ = 0;  // reads of self_cpu_ns_: every 10th looks at the signal handlers
  uint64_t self_cpu_ns_ = 0;    // this thread's CPU time (proto::SelfCost)
  bool cuda_ok_ = true;         // false after a CUDA error of ours: no more CUDA calls
  bool draining_ = false;       // supervisor gone: finish what is pending, then exit
  uint64_t drain_deadline_ns_ = 0;
  int current_device_ = -1;
  bool have_last_completed_ = false;
  proto::OpRef last_completed_{};
  std::vector<uint64_t> completed_seq_;  // per CommRegistry index
  MetricsTable metrics_;
  proto::RangeSlot ranges_[proto::kMaxRanges] = {};
  bool range_dirty_[proto::kMaxRanges] = {};
  uint32_t ring_names_ = 0;  // names written to the flight recorder
  uint32_t ring_sites_ = 0;  // call sites written to the flight recorder
  proto::StepCounters steps_{};
  StepBubbles bubbles_;
  std::map<uint64_t, recorder::RecordData> step_records_;  // by ring position, until measured
  uint64_t prev_pass_ns_ = 0;
  uint64_t metrics_lost_ = 0;
  uint64_t launch_sample_ns_ = 0;  // the previous launch sample (0: none yet)
  uint64_t launches_sampled_ = 0;
  uint64_t blocked_sampled_ns_ = 0;  // HostBlocked::total_ns() at the previous sample
};

}  // namespace xpu_timer::inject
