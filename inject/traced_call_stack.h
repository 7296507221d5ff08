// The traced Python calls open on one thread (inject/python_tracer.h): a
// call begins at PY_START (or a generator's PY_RESUME), ends at PY_RETURN or
// PY_YIELD, or is unwound by an exception (PY_UNWIND); before Python 3.12 the
// wrapper says the same. Calls nest on a thread, so a stack pairs each end
// with its begin, through recursion (a function calling itself), generators
// (each run from start or resume to yield is one call) and exceptions.
//
// What the stack cannot trust, and how it copes:
//   - an end whose begin it never saw (the call began before tracing was
//     installed; a PY_UNWIND of a frame that is not a traced call): ignored;
//   - an end of a call below the top (the calls above it ended without an
//     event, e.g. a generator thrown into): those above are discarded;
//   - deeper than kMaxDepth: the calls beyond are counted, not recorded, and
//     the next ends are theirs.
// Pure logic, one per thread (thread_local): no locks, no allocation.
#pragma once

#include <cstdint>

namespace xpu_timer::inject {

class TracedCallStack {
 public:
  static constexpr int kMaxDepth = 32;

  struct Call {
    const void* key = nullptr;  // what the call is of (its code object)
    uint64_t start_ns = 0;
    int depth = 0;  // traced calls below it on this thread
  };

  bool empty() const { return depth_ == 0 && beyond_ == 0; }

  void begin(const void* key, uint64_t now_ns) {
    if (depth_ == kMaxDepth) {
      ++beyond_;
      return;
    }
    calls_[depth_] = Call{key, now_ns, depth_};
    ++depth_;
  }

  // The call of `key` ended: true with the call if it is one to record.
  // `discarded`: calls dropped unrecorded by this end (see above).
  bool end(const void* key, Call* out, uint32_t* discarded) {
    *discarded = 0;
    if (beyond_ > 0) {
      --beyond_;
      *discarded = 1;
      return false;
    }
    for (int i = depth_ - 1; i >= 0; --i) {
      if (calls_[i].key != key) continue;
      *discarded = static_cast<uint32_t>(depth_ - 1 - i);
      *out = calls_[i];
      depth_ = i;
      return true;
    }
    return false;
  }

 private:
  Call calls_[kMaxDepth];
  int depth_ = 0;
  uint32_t beyond_ = 0;  // begins past kMaxDepth not yet ended
};

}  // namespace xpu_timer::inject
