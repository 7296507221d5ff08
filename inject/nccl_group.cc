#include "inject/nccl_group.h"

#include "inject/comm_registry.h"

namespace xpu_timer::inject {
namespace {

struct GroupAccumulator {
  int depth;
  uint32_t members;
  uint16_t name;
  bool mixed_names;
  uint8_t dtype;
  bool mixed_dtypes;
  uint64_t bytes;
  cudaStream_t stream;
  int device;
  uint32_t ncomms;
  uint32_t last_comm;
  uint32_t untracked;
  CommUse comms[kMaxCommMarks];
};

// POD in static TLS: zero-initialised, no constructor or destructor per thread.
__attribute__((tls_model("initial-exec"))) thread_local GroupAccumulator t_group;

void reset_members(GroupAccumulator& g) {
  const int depth = g.depth;
  g = GroupAccumulator{};
  g.depth = depth;
}

}  // namespace

int nccl_group_depth() { return t_group.depth; }

void nccl_group_enter() {
  if (t_group.depth++ == 0) reset_members(t_group);
}

void nccl_group_cancel_enter() {
  if (t_group.depth > 0) --t_group.depth;
}

bool nccl_group_leave() {
  if (t_group.depth == 0) return false;
  return --t_group.depth == 0;
}

void nccl_group_add(const GroupMember& m) {
  GroupAccumulator& g = t_group;
  const auto name = static_cast<uint16_t>(m.name);
  const auto dtype = static_cast<uint8_t>(m.dtype);
  if (g.members == 0) {
    g.name = name;
    g.dtype = dtype;
    g.stream = m.stream;
    g.device = m.device;
  } else {
    g.mixed_names |= g.name != name;
    g.mixed_dtypes |= g.dtype != dtype;
  }
  ++g.members;
  g.bytes += m.bytes;
  if (m.comm_index == CommRegistry::kNone) return;
  for (uint32_t i = 0; i < g.ncomms; ++i) {
    if (g.comms[i].comm_index == m.comm_index) {
      ++g.comms[i].count;
      g.last_comm = i;
      return;
    }
  }
  if (g.ncomms < static_cast<uint32_t>(kMaxCommMarks)) {
    g.comms[g.ncomms] = CommUse{m.comm_index, 1};
    g.last_comm = g.ncomms++;
  } else {
    ++g.untracked;
  }
}

bool nccl_group_take(OpDesc* desc, cudaStream_t* stream, uint32_t* untracked) {
  GroupAccumulator& g = t_group;
  const bool any = g.members > 0;
  if (any) {
    *desc = OpDesc{};
    desc->name = g.mixed_names ? proto::OpName::kGroup : static_cast<proto::OpName>(g.name);
    desc->dtype = g.mixed_dtypes ? proto::DType::kUnknown : static_cast<proto::DType>(g.dtype);
    desc->group_size = g.members;
    desc->bytes = g.bytes;
    desc->device = g.device;
    desc->ncomms = g.ncomms;
    for (uint32_t i = 0; i < g.ncomms; ++i) desc->comms[i] = g.comms[i];
    desc->last_comm = g.last_comm;
    *stream = g.stream;
    *untracked = g.untracked;
  }
  reset_members(g);
  return any;
}

}  // namespace xpu_timer::inject
