#include "tests/simgpu/nccl_group.h"

#include <utility>
#include <vector>

#include "tests/simgpu/communicator.h"

namespace xpu_timer::simgpu {
namespace {

struct PendingOp {
  bool is_send;
  std::function<ncclResult_t()> enqueue;
};

thread_local int t_depth = 0;
thread_local std::vector<PendingOp> t_pending;

}  // namespace

ncclResult_t submit_op(bool is_send, std::function<ncclResult_t()> enqueue) {
  if (t_depth == 0) return enqueue();
  t_pending.push_back(PendingOp{is_send, std::move(enqueue)});
  return ncclSuccess;
}

ncclResult_t group_start() {
  ++t_depth;
  return ncclSuccess;
}

ncclResult_t group_end() {
  if (t_depth == 0) {
    set_last_error("ncclGroupEnd called without ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--t_depth > 0) return ncclSuccess;
  std::vector<PendingOp> ops;
  ops.swap(t_pending);
  ncclResult_t first_error = ncclSuccess;
  for (int pass = 0; pass < 2; ++pass) {
    const bool sends = pass == 0;
    for (auto& op : ops) {
      if (op.is_send != sends) continue;
      const ncclResult_t res = op.enqueue();
      if (res != ncclSuccess && first_error == ncclSuccess) first_error = res;
    }
  }
  return first_error;
}

}  // namespace xpu_timer::simgpu
