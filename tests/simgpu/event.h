// A simulated CUDA event. cudaEventRecord bumps `recorded_seq` on the host
// and enqueues a marker; the stream's worker completes that sequence number
// with the simulated time the stream reached it. An event is complete when
// the latest record has completed, as in CUDA (re-recording makes it pending
// again). Host threads and stream workers share it under its mutex; markers
// hold a shared_ptr so destroying an event with a pending record is safe.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

struct CUevent_st {
  int unused;
};

namespace xpu_timer::simgpu {

class Event {
 public:
  explicit Event(unsigned flags) : flags_(flags) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t handle() { return &handle_; }
  unsigned flags() const { return flags_; }
  bool timing_disabled() const { return (flags_ & cudaEventDisableTiming) != 0; }

  // Host: starts a new record; returns its sequence number.
  uint64_t begin_record();
  // Worker: record `seq` reached the head of its stream at `time_ns`.
  void complete(uint64_t seq, uint64_t time_ns);

  enum class State { kNeverRecorded, kPending, kComplete };
  State state();
  // Blocks until record `seq` (0: the latest record now) has completed.
  void wait(uint64_t seq);
  // Sequence number of the latest record (0: never recorded).
  uint64_t latest_record();
  // Simulated completion time of the latest record; valid when kComplete.
  uint64_t time_ns();

 private:
  CUevent_st handle_{};
  const unsigned flags_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t recorded_seq_ = 0;
  uint64_t completed_seq_ = 0;
  uint64_t time_ns_ = 0;
};

// Live events of the process. Never destroyed (see StreamRegistry).
class EventRegistry {
 public:
  static EventRegistry& instance();
  std::shared_ptr<Event> create(unsigned flags);
  std::shared_ptr<Event> resolve(cudaEvent_t handle);
  bool destroy(cudaEvent_t handle);

 private:
  EventRegistry() = default;
  std::mutex mu_;
  std::unordered_map<cudaEvent_t, std::shared_ptr<Event>> events_;
};

}  // namespace xpu_timer::simgpu
