// The Python line that issued each collective: read from the calling
// thread's own CPython frames when an NCCL hook runs, kept in the flight
// recorder (common/recorder_ring.h, version 4: a record's call site), so
// that a mismatch names the line that issued the odd collective, and a
// stuck collective and the trace the line that issued it.
//
// How: the hook runs on the thread that made the call (PyTorch and ctypes
// release the GIL around it, so the interpreter cannot run on this thread
// and its frames stay as they are until we return). Its thread state is the
// one PyGILState_GetThisThreadState() gives (a thread-specific value; no
// Python code runs and no object is made), its frames are followed with the
// layout of the running version (stack/python_layouts.h: the same offsets
// the supervisor's stack reader uses, from _Py_DebugOffsets on 3.13+).
// Frames of library code (paths containing a fragment of
// XPU_TIMER_CALL_SITE_SKIP, by default "/torch/" and "/deepspeed/comm/")
// are passed over: the site is the first frame outside them (the innermost
// frame if every one is inside). A thread without a Python thread state
// (a C++ thread: DDP's reducer, NCCL's own) has no call site.
//
// Cost: per call a walk of the frames above the site (a few loads each) and
// two lookups in per-thread caches keyed by code object and instruction
// offset; a site's text (name, file, line from the line table) is made once
// per site and thread. bench/results has the measured cost per call.
//
// Settings (inject/settings.h): XPU_TIMER_CALL_SITES=0 turns it off;
// XPU_TIMER_CALL_SITE_SKIP replaces the library fragments (comma-separated;
// empty: skip nothing).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/recorder_ring.h"

namespace xpu_timer::inject {

class CallSites {
 public:
  static constexpr uint32_t kCapacity = recorder::kRingSites;

  // The calling thread's call site: its index in this table, -1 when it has
  // none (not a Python thread, off, unknown version, table full). Any thread;
  // never blocks on another hook (a new site takes a mutex once).
  int capture();

  // Sites interned (ids 0 .. size()-1); an entry is written before size()
  // counts it, never changed after.
  uint32_t size() const { return size_.load(std::memory_order_acquire); }
  const recorder::SiteEntry& entry(uint32_t id) const { return entries_[id]; }

  // The id of this site (added when new); -1 when the table is full. Any thread.
  int intern(const recorder::SiteEntry& e);

 private:
  recorder::SiteEntry entries_[kCapacity];
  std::atomic<uint32_t> size_{0};
  std::mutex mu_;  // adders only
};

// The process's table.
CallSites& call_sites();

}  // namespace xpu_timer::inject
