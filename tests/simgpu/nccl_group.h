// ncclGroupStart/End of the simulated NCCL. Operations issued inside a group
// are held (per host thread, as NCCL's group state is thread-local) and
// enqueued at the outermost ncclGroupEnd, sends first: a send never waits, so
// a group of send+recv pairs (a ring exchange) cannot deadlock whatever order
// the caller listed them in.
#pragma once

#include <nccl.h>

#include <functional>

namespace xpu_timer::simgpu {

// Runs `enqueue` now, or at the outermost ncclGroupEnd when inside a group.
ncclResult_t submit_op(bool is_send, std::function<ncclResult_t()> enqueue);
ncclResult_t group_start();
ncclResult_t group_end();

}  // namespace xpu_timer::simgpu
