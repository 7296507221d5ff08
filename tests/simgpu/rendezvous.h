// Cross-process rendezvous of the simulated NCCL: one POSIX shared-memory
// segment per communicator, /dev/shm/xpu_sim_<job id>_<16 hex of the comm id>,
// holding lock-free atomics only (address-free on x86-64/aarch64), so every
// rank can map it at its own address.
//
// The segment needs no initialisation step: ftruncate zero-fills it and zero
// is the valid initial state of every field, so ranks may start in any order
// and each one simply creates-or-opens and ftruncates it to the same size.
// The header's magic and nranks are claimed with compare-and-swap; a rank
// that finds different values reports a mismatch (a stale segment).
//
// Ordering: a rank writes its per-sequence data, then publishes the sequence
// number with a release store; readers acquire the sequence first. Two
// ring entries per rank suffice: a rank can only be one collective (or split)
// ahead of the slowest reader, because it cannot pass sequence s+1 before
// every rank has arrived at s+1, i.e. has finished reading s.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace xpu_timer::simgpu {

// Ranks of one communicator. The segment is sized to its communicator: its
// per-pair tables grow with the square of the ranks (1024 ranks: 264 MB of
// address space, of which only the pages a rank touches are ever allocated).
constexpr int kMaxRanks = 1024;

struct SplitEntry {
  std::atomic<uint64_t> seq;
  std::atomic<int32_t> color;
  std::atomic<int32_t> key;
};

struct alignas(64) RankSlot {
  std::atomic<int32_t> pid;             // nonzero once the rank joined
  std::atomic<uint32_t> left;           // set by ncclCommDestroy/Abort
  std::atomic<uint64_t> arrived_seq;    // latest collective this rank arrived at
  std::atomic<uint64_t> arrival_ns[2];  // simulated arrival time, by seq % 2
  SplitEntry split[2];                  // ncclCommSplit arguments, by split seq % 2
};

// The simulated start time of one send, for the receiver: a seqlock (seq is
// 0 while the sender rewrites it, else the send's number, counted from 1 per
// sender and receiver).
struct SendTime {
  std::atomic<uint64_t> seq;
  std::atomic<uint64_t> start_ns;
};
// Sends whose start times a receiver can still read: an eager sender that is
// further ahead overwrites the oldest (the receive then falls back to now).
constexpr int kSendTimes = 16;

// The segment: this header, then RankSlot[nranks], then the sends posted
// (std::atomic<uint64_t>[src][dst]), then their start times
// (SendTime[src][dst][number % kSendTimes]), nranks being the communicator's.
struct alignas(64) SegmentHeader {
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> nranks;
  std::atomic<uint32_t> left_count;
  // A futex word, bumped by the rank that completes a collective's arrivals
  // and by every send, which then wake the ranks sleeping on it (`waiters`
  // of them), instead of those polling every kPollNs (a context switch each,
  // the CPU of a hung job's ranks).
  std::atomic<uint32_t> changes;
  std::atomic<uint32_t> waiters;
};

// Bytes of the segment of a communicator of `nranks` ranks.
size_t segment_bytes(int nranks);

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shm atomics must be lock-free");
static_assert(std::atomic<int32_t>::is_always_lock_free, "shm atomics must be lock-free");

constexpr uint32_t kSegmentMagic = 0x58534e43u;  // "XSNC"

// A mapped segment (RAII: unmapped in the destructor; never unlinked there).
class SharedSegment {
 public:
  // Creates or opens /dev/shm/<name> for a communicator of `nranks` ranks
  // and maps it. On failure returns nullptr and writes a message with errno
  // to *error. A segment found larger (a stale one of more ranks) is left
  // so: its header says so, and the caller refuses it.
  static SharedSegment* open(const std::string& name, int nranks, std::string* error);
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  SegmentHeader& header() { return *static_cast<SegmentHeader*>(base_); }
  RankSlot& slot(int rank) { return slots_[rank]; }
  // Sends posted by `src` to `dst`.
  std::atomic<uint64_t>& sent(int src, int dst) {
    return sent_[static_cast<size_t>(src) * static_cast<size_t>(nranks_) +
                 static_cast<size_t>(dst)];
  }
  // The start time of send `number` from `src` to `dst`.
  SendTime& send_time(int src, int dst, uint64_t number) {
    return send_times_[(static_cast<size_t>(src) * static_cast<size_t>(nranks_) +
                        static_cast<size_t>(dst)) *
                           kSendTimes +
                       number % kSendTimes];
  }
  const std::string& name() const { return name_; }
  // Removes the name; the mapping stays valid for whoever has it mapped.
  void unlink();

 private:
  SharedSegment(std::string name, void* base, int nranks);
  std::string name_;
  void* base_;
  int nranks_;
  size_t bytes_;
  RankSlot* slots_;
  std::atomic<uint64_t>* sent_;
  SendTime* send_times_;
};

// Shared-memory name for a communicator: "xpu_sim_<job>_<hash>", the job id
// from XPU_TIMER_SIM_JOB_ID ("nojob" when unset) reduced to [A-Za-z0-9_.-].
std::string segment_name(uint64_t comm_hash);
uint64_t hash_bytes(const void* data, size_t size, uint64_t seed);

// Poll interval of every cross-process wait: short enough for microsecond-
// scale collectives to stay accurate, long enough not to burn the CPUs.
constexpr uint64_t kPollNs = 100000;

}  // namespace xpu_timer::simgpu
