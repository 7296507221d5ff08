// comm_hash: the 64-bit name of an NCCL communicator that is identical on
// every rank of it (see CommSlot in common/status_page_layout.h), so the
// supervisor can line up the ranks' sequence numbers per communicator. Pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xpu_timer::inject {

// FNV-1a over the bytes, then a splitmix64 finaliser so that ids differing in
// a few bytes spread over all 64 bits. Never returns 0 (0 means "no comm").
uint64_t hash_bytes(const void* data, size_t len);

// ncclCommInitRank / ncclCommInitRankConfig (n_ids == 1) and
// ncclCommInitRankScalable (n_ids ids): hash of the ncclUniqueId bytes.
uint64_t comm_hash_from_unique_ids(const void* ids, int n_ids, size_t id_bytes);

// ncclCommSplit: every rank of the parent calls it collectively and in the
// same order, so (parent hash, color, n-th split of that parent) agrees
// across the ranks that end up in the same child.
uint64_t comm_hash_for_split(uint64_t parent_hash, int color, uint64_t nth_split);

// A communicator created behind our back (e.g. ncclCommInitAll, ncclCommShrink):
// NOT identical across ranks (it includes the pointer); flagged as unknown.
uint64_t comm_hash_for_unknown(int nranks, int rank, const void* comm);

}  // namespace xpu_timer::inject
