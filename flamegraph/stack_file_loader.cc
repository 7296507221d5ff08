#include "flamegraph/stack_file_loader.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace xpu_timer::flamegraph {
namespace {

// A decoded file or the reason it was skipped, produced by a worker for slot i.
struct Slot {
  bool ready = false;
  bool ok = false;
  std::unique_ptr<stack::ProcessStack> stack;
  std::string error;
};

}  // namespace

LoadSummary load_stack_files(
    const std::vector<std::string>& paths, const LoadOptions& options,
    const std::function<void(const std::string& path, const stack::ProcessStack& stack)>& sink) {
  LoadSummary summary;
  const size_t total = paths.size();
  unsigned workers =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<size_t>(workers, std::max<size_t>(total, 1)));
  // Workers may run this far ahead of the sink: bounds memory to a few dozen
  // decoded files whatever the size of the dump.
  const size_t window = 8 * static_cast<size_t>(workers);

  std::vector<Slot> slots(total);
  std::mutex mu;
  std::condition_variable slot_ready;    // a worker finished a slot
  std::condition_variable window_moved;  // the sink consumed a slot
  size_t next_to_take = 0;
  size_t consumed = 0;
  bool stop = false;
  // Decoded files go back here once the sink has seen them, and are decoded
  // into again: their strings keep their capacity, so that a dump of hundreds
  // of MB costs a few dozen files' worth of allocations, not millions.
  std::vector<std::unique_ptr<stack::ProcessStack>> spare;

  auto work = [&] {
    for (;;) {
      size_t i;
      Slot result;
      {
        std::unique_lock<std::mutex> lock(mu);
        window_moved.wait(lock, [&] { return stop || next_to_take < consumed + window; });
        if (stop || next_to_take >= total) return;
        i = next_to_take++;
        if (!spare.empty()) {
          result.stack = std::move(spare.back());
          spare.pop_back();
        }
      }
      if (!result.stack) result.stack = std::make_unique<stack::ProcessStack>();
      result.ok = stack::load_stack_file(paths[i], result.stack.get(), &result.error,
                                         options.max_file_bytes);
      {
        std::lock_guard<std::mutex> lock(mu);
        slots[i] = std::move(result);
        slots[i].ready = true;
      }
      slot_ready.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) threads.emplace_back(work);

  for (size_t i = 0; i < total; ++i) {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mu);
      slot_ready.wait(lock, [&] { return slots[i].ready; });
      slot = std::move(slots[i]);
      slots[i] = Slot{};
      ++consumed;
    }
    window_moved.notify_all();
    // The sink runs outside the lock so that workers keep decoding meanwhile.
    if (slot.ok) {
      ++summary.loaded;
      sink(paths[i], *slot.stack);
    } else {
      summary.problems.push_back(LoadProblem{paths[i], slot.error});
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      spare.push_back(std::move(slot.stack));
    }
    if (options.on_progress) options.on_progress(i + 1, total);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  window_moved.notify_all();
  for (auto& t : threads) t.join();
  return summary;
}

}  // namespace xpu_timer::flamegraph
