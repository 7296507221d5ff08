#include "tests/simgpu/stream.h"

#include <algorithm>
#include <system_error>
#include <thread>

#include "common/log.h"
#include "tests/simgpu/sim_clock.h"

namespace xpu_timer::simgpu {

Stream::Stream(int device, unsigned flags, int priority)
    : device_(device), flags_(flags), priority_(priority) {}

bool Stream::start() {
  try {
    std::thread worker([self = shared_from_this()] { self->run_worker(); });
    worker.detach();
  } catch (const std::system_error& e) {
    XPU_TIMER_LOG_ERROR("simgpu: cannot start stream worker thread: %s", e.what());
    return false;
  }
  return true;
}

bool Stream::enqueue(StreamTask task, StreamDone done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capturing_) return false;
  queue_.push_back(Entry{std::move(task), std::move(done), now_ns()});
  ++enqueued_;
  work_cv_.notify_one();
  return true;
}

void Stream::enqueue_always(StreamTask task) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(Entry{std::move(task), nullptr, now_ns()});
  ++enqueued_;
  work_cv_.notify_one();
}

void Stream::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  work_cv_.notify_one();
}

bool Stream::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ == enqueued_;
}

void Stream::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = enqueued_;
  done_cv_.wait(lock, [&] { return completed_ >= target; });
}

bool Stream::begin_capture(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capturing_) return false;
  capturing_ = true;
  capture_id_ = id;
  captured_.clear();
  return true;
}

bool Stream::end_capture(std::vector<uint64_t>* kernels) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!capturing_) return false;
  capturing_ = false;
  kernels->swap(captured_);
  captured_.clear();
  return true;
}

bool Stream::capturing(uint64_t* id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id != nullptr) *id = capture_id_;
  return capturing_;
}

bool Stream::capture_kernel(uint64_t duration_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!capturing_) return false;
  captured_.push_back(duration_ns);
  return true;
}

void Stream::run_worker() {
  for (;;) {
    Entry entry;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;  // closed and drained
      entry = std::move(queue_.front());
      queue_.pop_front();
    }
    const uint64_t start = std::max(entry.enqueue_ns, stream_time_ns_);
    const uint64_t end = entry.task(start);
    stream_time_ns_ = std::max(start, end);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++completed_;
      if (entry.done) entry.done(stream_time_ns_);
    }
    done_cv_.notify_all();
  }
}

StreamRegistry& StreamRegistry::instance() {
  static StreamRegistry* registry = new StreamRegistry();  // leaked on purpose, see header
  return *registry;
}

bool StreamRegistry::is_default(cudaStream_t handle) const {
  return handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread;
}

std::shared_ptr<Stream> StreamRegistry::resolve(cudaStream_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (is_default(handle)) {
    if (!default_) {
      auto stream = std::make_shared<Stream>(0, cudaStreamDefault, 0);
      if (!stream->start()) return nullptr;
      default_ = std::move(stream);
    }
    return default_;
  }
  for (const auto& s : streams_) {
    if (s->handle() == handle) return s;
  }
  return nullptr;
}

std::shared_ptr<Stream> StreamRegistry::create(int device, unsigned flags, int priority) {
  auto stream = std::make_shared<Stream>(device, flags, priority);
  if (!stream->start()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(stream);
  return stream;
}

bool StreamRegistry::destroy(cudaStream_t handle) {
  std::shared_ptr<Stream> victim;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(streams_.begin(), streams_.end(),
                           [&](const std::shared_ptr<Stream>& s) { return s->handle() == handle; });
    if (it == streams_.end()) return false;
    victim = *it;
    streams_.erase(it);
  }
  victim->close();
  return true;
}

std::vector<std::shared_ptr<Stream>> StreamRegistry::all() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Stream>> out = streams_;
  if (default_) out.push_back(default_);
  return out;
}

}  // namespace xpu_timer::simgpu
