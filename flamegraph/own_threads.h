// Our own threads in a rank's stacks. Every rank runs the injected library's
// background thread (`xpu_timer_poll`); drawn in full it would add the same
// tower of frames to every rank's graph and look like part of the job. The
// merge folds each such thread into one frame, kOwnThreadLabel, so the graph
// still counts it (one narrow frame per state) without its stack. Pure.
#pragma once

#include "stack/stack_types.h"

namespace xpu_timer::flamegraph {

// `func@source` of the folded frame.
constexpr char kOwnThreadLabel[] = "[xpu-timer background thread]@libxpu_timer_inject.so";

// True for a thread named `xpu_timer_*` (pthread_setname_np in inject/), and
// for a thread whose native frames are all in libxpu_timer_inject.so apart
// from the C library's and libstdc++'s thread start and system call frames
// (a thread of ours whose name was lost).
bool is_xpu_timer_thread(const stack::ThreadStack& thread);

}  // namespace xpu_timer::flamegraph
