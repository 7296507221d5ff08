// A bounded lock-free MPMC queue (Dmitry Vyukov's design) of trivially
// copyable items.
//
// Used on the hot path: user threads calling hooks are the producers of the
// record queue (Poller is its consumer); for the event pools it is the other
// way round (hooks take free event pairs, the Poller gives them back).
//
// Besides try_push/try_pop it offers a two-phase push: try_reserve() claims a
// cell (or reports "full") and publish() makes it visible. The hooks reserve
// before they touch CUDA so that a full queue costs nothing but a counter.
// A reserved cell that is never published blocks the consumer at that cell,
// so every successful reserve must be followed by publish() on all paths.
//
// CellAlign aligns each cell (the record queue: 64, so that a cell's
// sequence number and the start of its item share one cache line).
//
// Never allocates after construction, never blocks, never throws.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace xpu_timer::inject {

template <typename T, size_t CellAlign = alignof(std::atomic<uint64_t>)>
class BoundedQueue {
  static_assert(std::is_trivially_copyable_v<T>, "items are copied with plain stores");

 public:
  struct alignas(CellAlign) Cell {
    std::atomic<uint64_t> seq;
    T item;
  };

  // capacity is rounded up to a power of two (at least 2).
  explicit BoundedQueue(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    cells_.reset(new Cell[cap]);
    for (size_t i = 0; i < cap; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Claims a cell for the caller; nullptr when the queue is full. The caller
  // fills cell->item and must then call publish(cell, pos).
  Cell* try_reserve(uint64_t* pos_out) {
    uint64_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell* cell = &cells_[pos & mask_];
      const uint64_t seq = cell->seq.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *pos_out = pos;
          return cell;
        }
      } else if (diff < 0) {
        return nullptr;  // full: the consumer has not freed this cell yet
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  void publish(Cell* cell, uint64_t pos) { cell->seq.store(pos + 1, std::memory_order_release); }

  bool try_push(const T& item) {
    uint64_t pos;
    Cell* cell = try_reserve(&pos);
    if (cell == nullptr) return false;
    cell->item = item;
    publish(cell, pos);
    return true;
  }

  // False when empty or when the next cell is reserved but not yet published.
  bool try_pop(T* out) {
    return try_pop_with([out](const T& item) { *out = item; });
  }

  // try_pop() where `read(const T&)` copies out what it needs of the item
  // (it runs before the cell is handed back to the producers).
  template <typename Read>
  bool try_pop_with(Read&& read) {
    uint64_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell* cell = &cells_[pos & mask_];
      const uint64_t seq = cell->seq.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          read(static_cast<const T&>(cell->item));
          cell->seq.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Items reserved and not yet popped (approximate while producers run).
  uint64_t approx_size() const {
    const uint64_t e = enqueue_pos_.load(std::memory_order_relaxed);
    const uint64_t d = dequeue_pos_.load(std::memory_order_relaxed);
    return e >= d ? e - d : 0;
  }

 private:
  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  // Producers and consumers on separate cache lines: they are hit by
  // different threads on every call.
  alignas(64) std::atomic<uint64_t> enqueue_pos_{0};
  alignas(64) std::atomic<uint64_t> dequeue_pos_{0};
};

}  // namespace xpu_timer::inject
