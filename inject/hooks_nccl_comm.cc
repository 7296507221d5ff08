// Hooks on NCCL's communicator constructors and destructors: they give each
// communicator its comm_hash (identical on all of its ranks, see
// comm_hash.h) before any collective uses it. They do not time anything.
#include <nccl.h>

#include <cstring>

#include "common/log.h"
#include "inject/comm_hash.h"
#include "inject/comm_registry.h"
#include "inject/hook_export.h"
#include "inject/nccl_comms.h"
#include "inject/real_functions.h"
#include "inject/runtime.h"

namespace xpu_timer::inject {
namespace {

RealFunction<decltype(&::ncclCommInitRank)> real_init_rank(RealLib::kNccl, "ncclCommInitRank");
RealFunction<decltype(&::ncclCommInitRankConfig)> real_init_rank_config(RealLib::kNccl,
                                                                        "ncclCommInitRankConfig");
RealFunction<decltype(&::ncclCommInitRankScalable)> real_init_rank_scalable(
    RealLib::kNccl, "ncclCommInitRankScalable");
RealFunction<decltype(&::ncclCommSplit)> real_split(RealLib::kNccl, "ncclCommSplit");
RealFunction<decltype(&::ncclCommDestroy)> real_destroy(RealLib::kNccl, "ncclCommDestroy");
RealFunction<decltype(&::ncclCommAbort)> real_abort(RealLib::kNccl, "ncclCommAbort");
RealFunction<decltype(&::ncclCommCount)> real_count(RealLib::kNccl, "ncclCommCount");
RealFunction<decltype(&::ncclCommUserRank)> real_user_rank(RealLib::kNccl, "ncclCommUserRank");
RealFunction<decltype(&::ncclCommCuDevice)> real_cu_device(RealLib::kNccl, "ncclCommCuDevice");

std::atomic<bool> g_unknown_logged{false};
std::atomic<bool> g_full_logged{false};

int comm_device(ncclComm_t comm) {
  int device = -1;
  const auto fn = real_cu_device.get();
  if (fn == nullptr || fn(comm, &device) != ncclSuccess) return -1;
  return device;
}

// ncclCommCount/UserRank; -1 when NCCL cannot say (e.g. a non-blocking
// communicator still initialising).
void comm_shape(ncclComm_t comm, int* nranks, int* rank) {
  *nranks = -1;
  *rank = -1;
  const auto count = real_count.get();
  const auto user_rank = real_user_rank.get();
  if (count == nullptr || count(comm, nranks) != ncclSuccess) *nranks = -1;
  if (user_rank == nullptr || user_rank(comm, rank) != ncclSuccess) *rank = -1;
}

// The communicator's name: the config's commName, else what NCCL told the
// profiler plugin's init during the call (the window opened by create_comm).
struct CommName {
  char text[kCommNameBytes];
  explicit CommName(const ncclConfig_t* config) {
    const bool from_plugin = plugin_name_window_take(text);
    char from_config[kCommNameBytes];
    if (comm_name_from_config(config, from_config) || !from_plugin) {
      std::memcpy(text, from_config, kCommNameBytes);
    }
  }
};

uint32_t register_comm(ncclComm_t comm, uint64_t hash, int nranks, int rank, uint32_t flags,
                       const CommName& name) {
  const uint32_t index = comm_registry().add(comm, hash, nranks, rank, comm_device(comm), flags,
                                             /*replace=*/true, name.text);
  if (index == CommRegistry::kNone && !g_full_logged.exchange(true)) {
    XPU_TIMER_LOG_WARN("more than %u NCCL communicators: new ones are not tracked",
                       CommRegistry::kCapacity);
  }
  XPU_TIMER_LOG_DEBUG("communicator %p: hash %016llx nranks %d rank %d name \"%s\"",
                      static_cast<void*>(comm), static_cast<unsigned long long>(hash), nranks, rank,
                      name.text);
  return index;
}

// Every constructor hook: lazily start the runtime (so the first NCCL call
// of a rank is seen), call through, register what was created.
template <typename Fn, typename Register, typename... Args>
ncclResult_t create_comm(RealFunction<Fn>& real, Register&& on_created, Args... args) noexcept {
  const Fn fn = real.get();
  if (fn == nullptr) return ncclSystemError;
  HookScope scope;
  if (scope.nested()) return fn(args...);
  active_runtime();
  plugin_name_window_open();
  const ncclResult_t r = fn(args...);
  if (nccl_launched(r)) on_created();  // takes the plugin's name when it registers a communicator
  char unused[kCommNameBytes];
  plugin_name_window_take(unused);  // closed in every case
  return r;
}

}  // namespace

uint32_t comm_index_for(ncclComm_t comm) {
  if (comm == nullptr) return CommRegistry::kNone;
  const uint32_t index = comm_registry().find(comm);
  if (index != CommRegistry::kNone) return index;
  int nranks, rank;
  comm_shape(comm, &nranks, &rank);
  if (!g_unknown_logged.exchange(true)) {
    XPU_TIMER_LOG_WARN(
        "communicator %p was created by a call we do not hook; its hash differs across ranks",
        static_cast<void*>(comm));
  }
  return comm_registry().add(comm, comm_hash_for_unknown(nranks, rank, comm), nranks, rank,
                             comm_device(comm), CommEntry::kUnknown, /*replace=*/false);
}

}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: hook definitions below are extern "C"

XPU_TIMER_HOOK ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                             int rank) {
  return create_comm(
      real_init_rank,
      [&] {
        if (comm != nullptr && *comm != nullptr) {
          register_comm(*comm, comm_hash_from_unique_ids(&commId, 1, sizeof(commId)), nranks, rank,
                        0, CommName(nullptr));
        }
      },
      comm, nranks, commId, rank);
}

XPU_TIMER_HOOK ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                   ncclUniqueId commId, int rank,
                                                   ncclConfig_t* config) {
  return create_comm(
      real_init_rank_config,
      [&] {
        if (comm != nullptr && *comm != nullptr) {
          register_comm(*comm, comm_hash_from_unique_ids(&commId, 1, sizeof(commId)), nranks, rank,
                        0, CommName(config));
        }
      },
      comm, nranks, commId, rank, config);
}

XPU_TIMER_HOOK ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                     int nId, ncclUniqueId* commIds,
                                                     ncclConfig_t* config) {
  return create_comm(
      real_init_rank_scalable,
      [&] {
        if (newcomm != nullptr && *newcomm != nullptr) {
          register_comm(*newcomm, comm_hash_from_unique_ids(commIds, nId, sizeof(ncclUniqueId)),
                        nranks, myrank, 0, CommName(config));
        }
      },
      newcomm, nranks, myrank, nId, commIds, config);
}

XPU_TIMER_HOOK ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                          ncclConfig_t* config) {
  const auto fn = real_split.get();
  if (fn == nullptr) return ncclSystemError;
  HookScope scope;
  if (scope.nested()) return fn(comm, color, key, newcomm, config);
  active_runtime();
  // Every rank of the parent calls split, in the same order, whatever its
  // color (NCCL_SPLIT_NOCOLOR included): count before calling.
  const uint32_t parent = comm_index_for(comm);
  uint64_t parent_hash = 0, nth = 0;
  if (parent != CommRegistry::kNone) {
    CommEntry& e = comm_registry().entry(parent);
    parent_hash = e.hash.load(std::memory_order_relaxed);
    nth = e.split_count.fetch_add(1, std::memory_order_relaxed);
  }
  plugin_name_window_open();
  const ncclResult_t r = fn(comm, color, key, newcomm, config);
  const CommName name(config);  // closes the window in every case
  if (nccl_launched(r) && newcomm != nullptr && *newcomm != nullptr) {
    int nranks, rank;
    comm_shape(*newcomm, &nranks, &rank);
    register_comm(*newcomm, comm_hash_for_split(parent_hash, color, nth), nranks, rank, 0, name);
  }
  return r;
}

XPU_TIMER_HOOK ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  const auto fn = real_destroy.get();
  if (fn == nullptr) return ncclSystemError;
  // Before the call: afterwards the pointer may already name a new communicator.
  comm_registry().mark_destroyed(comm);
  return fn(comm);
}

XPU_TIMER_HOOK ncclResult_t ncclCommAbort(ncclComm_t comm) {
  const auto fn = real_abort.get();
  if (fn == nullptr) return ncclSystemError;
  comm_registry().mark_destroyed(comm);
  return fn(comm);
}
