// A simulated CUDA stream: one worker thread that runs the stream's tasks in
// order. Host threads enqueue; only the worker runs tasks. Each task gets the
// simulated time the stream reached it (the end of the previous task, or its
// enqueue time if the stream was idle) and returns when it finished, so
// back-to-back kernels are timed without the worker's scheduling jitter.
//
// Lifetime: the worker holds a shared_ptr to its Stream and is detached, so a
// destroyed stream drains its queue and then goes away, and a process that
// exits while a task waits for ever (a hung collective) is not held up by it.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

struct CUstream_st {
  int unused;
};

namespace xpu_timer::simgpu {

// Runs on the worker; argument = simulated start time, result = end time.
using StreamTask = std::function<uint64_t(uint64_t)>;
// Runs on the worker, under the stream's lock, in the same critical section
// that counts the task completed: whoever observes its effect (an event
// completing) also sees the stream idle if it was the last task, and whoever
// sees the stream idle also sees its effect. It must not call into the stream.
// Argument = end time.
using StreamDone = std::function<void(uint64_t)>;

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(int device, unsigned flags, int priority);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Starts the worker thread. Returns false (errno message logged) on failure.
  bool start();
  cudaStream_t handle() { return &handle_; }
  int device() const { return device_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }

  // Host side. Returns false while capturing (the task is not run).
  bool enqueue(StreamTask task, StreamDone done = nullptr);
  // Enqueues unconditionally, even while capturing (graph replay).
  void enqueue_always(StreamTask task);
  // The worker exits once the queue is drained.
  void close();
  bool idle();
  // Blocks until every task enqueued before the call has completed.
  void wait_idle();

  // Capture mode (cudaStreamBeginCapture .. EndCapture): kernels are recorded
  // instead of run.
  bool begin_capture(uint64_t id);
  // Returns false if not capturing; else the recorded kernel durations.
  bool end_capture(std::vector<uint64_t>* kernels);
  bool capturing(uint64_t* id);
  // Records a kernel into the capture; false if not capturing.
  bool capture_kernel(uint64_t duration_ns);

 private:
  struct Entry {
    StreamTask task;
    StreamDone done;
    uint64_t enqueue_ns;
  };
  void run_worker();

  CUstream_st handle_{};
  const int device_;
  const unsigned flags_;
  const int priority_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Entry> queue_;
  uint64_t enqueued_ = 0;   // tasks ever enqueued (mu_)
  uint64_t completed_ = 0;  // tasks ever completed (mu_)
  bool closed_ = false;
  bool capturing_ = false;
  uint64_t capture_id_ = 0;
  std::vector<uint64_t> captured_;
  uint64_t stream_time_ns_ = 0;  // worker thread only
};

// All live streams of the process, and the legacy default stream (handle 0,
// cudaStreamLegacy and cudaStreamPerThread all map to it). Never destroyed:
// worker threads may still use it while the process exits.
class StreamRegistry {
 public:
  static StreamRegistry& instance();
  // nullptr when `handle` is not a live stream.
  std::shared_ptr<Stream> resolve(cudaStream_t handle);
  // nullptr on failure (thread creation).
  std::shared_ptr<Stream> create(int device, unsigned flags, int priority);
  bool destroy(cudaStream_t handle);
  std::vector<std::shared_ptr<Stream>> all();
  bool is_default(cudaStream_t handle) const;

 private:
  StreamRegistry() = default;
  std::mutex mu_;
  std::shared_ptr<Stream> default_;
  std::vector<std::shared_ptr<Stream>> streams_;
};

}  // namespace xpu_timer::simgpu
