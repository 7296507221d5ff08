#include "tests/simgpu/event.h"

namespace xpu_timer::simgpu {

uint64_t Event::begin_record() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++recorded_seq_;
}

void Event::complete(uint64_t seq, uint64_t time_ns) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The same event may be recorded on two streams whose markers complete
    // out of order: keep the newest record's time only.
    if (seq < completed_seq_) return;
    completed_seq_ = seq;
    time_ns_ = time_ns;
  }
  cv_.notify_all();
}

Event::State Event::state() {
  std::lock_guard<std::mutex> lock(mu_);
  if (recorded_seq_ == 0) return State::kNeverRecorded;
  return completed_seq_ >= recorded_seq_ ? State::kComplete : State::kPending;
}

void Event::wait(uint64_t seq) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = seq == 0 ? recorded_seq_ : seq;
  cv_.wait(lock, [&] { return completed_seq_ >= target; });
}

uint64_t Event::latest_record() {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_seq_;
}

uint64_t Event::time_ns() {
  std::lock_guard<std::mutex> lock(mu_);
  return time_ns_;
}

EventRegistry& EventRegistry::instance() {
  static EventRegistry* registry = new EventRegistry();  // leaked on purpose
  return *registry;
}

std::shared_ptr<Event> EventRegistry::create(unsigned flags) {
  auto event = std::make_shared<Event>(flags);
  std::lock_guard<std::mutex> lock(mu_);
  events_.emplace(event->handle(), event);
  return event;
}

std::shared_ptr<Event> EventRegistry::resolve(cudaEvent_t handle) {
  if (handle == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(handle);
  return it == events_.end() ? nullptr : it->second;
}

bool EventRegistry::destroy(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.erase(handle) == 1;
}

}  // namespace xpu_timer::simgpu
