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
// A producer that claims a cell, and a consumer that empties one, fetch the
// next cell for writing before they return (a prefetch): the record queue's cells were last written
// by the Poller on another core a lap ago, so the first touch of a cell would otherwise stall the
// user's thread for a cross-core transfer, on every record. The prefetch overlaps that transfer
// with whatever the thread does until its next record. A queue of 2 MiB or more asks the kernel for
// huge pages (madvise), so that the whole ring needs one TLB entry, not 512.
//
// Never allocates after construction, never blocks, never throws.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
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
    cells_ = allocate_cells(cap);
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
          __builtin_prefetch(&cells_[(pos + 1) & mask_], 1, 3);  // the next record's cell
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
          __builtin_prefetch(&cells_[(pos + 1) & mask_], 1, 3);  // the next pop's cell
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
  static constexpr size_t kHugePage = size_t{2} << 20;
  struct FreeCells {
    size_t bytes = 0;  // 0: from new[]
    void operator()(Cell* cells) const {
      if (bytes == 0) {
        delete[] cells;
      } else {
        munmap(cells, bytes);
      }
    }
  };
  using Cells = std::unique_ptr<Cell[], FreeCells>;

  static Cells allocate_cells(size_t cap) {
    static_assert(std::is_trivially_destructible_v<Cell>, "mapped cells are never destroyed");
    const size_t bytes = cap * sizeof(Cell);
    if (bytes >= kHugePage) {
      // Mapped with room to start on a huge-page boundary, the rest unmapped.
      const size_t span = (bytes + kHugePage - 1) / kHugePage * kHugePage;
      void* raw = mmap(nullptr, span + kHugePage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw != MAP_FAILED) {
        const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
        const uintptr_t start = (base + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
        if (start > base) munmap(raw, start - base);
        const uintptr_t end = base + span + kHugePage;
        if (end > start + span) munmap(reinterpret_cast<void*>(start + span), end - start - span);
        madvise(reinterpret_cast<void*>(start), span, MADV_HUGEPAGE);  // a hint: may be refused
        Cell* cells = reinterpret_cast<Cell*>(start);
        for (size_t i = 0; i < cap; ++i) new (&cells[i]) Cell;
        return Cells(cells, FreeCells{span});
      }
    }
    return Cells(new Cell[cap], FreeCells{});
  }

  Cells cells_;
  size_t mask_ = 0;
  // Producers and consumers on separate cache lines: they are hit by
  // different threads on every call.
  alignas(64) std::atomic<uint64_t> enqueue_pos_{0};
  alignas(64) std::atomic<uint64_t> dequeue_pos_{0};
};

}  // namespace xpu_timer::inject
