#include "tests/simgpu/communicator.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <mutex>
#include <new>

#include "common/env_config.h"
#include "common/log.h"
#include "tests/simgpu/sim_clock.h"
#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/slow_rank.h"

namespace xpu_timer::simgpu {
namespace {

std::mutex g_error_mu;
std::string* g_last_error = new std::string();  // leaked: read during exit

bool comm_gone(const CommState& st) { return st.aborted.load(std::memory_order_seq_cst); }

struct OpArgs {
  std::shared_ptr<CommState> state;
  uint64_t seq = 0;  // collective sequence, or the receive number for kRecv
  int peer = 0;
  uint64_t duration_ns = 0;
};

void destroy_op(void* arg) { delete static_cast<OpArgs*>(arg); }

// Futex calls on a word of the shared segment (not FUTEX_PRIVATE: the ranks
// are processes). std::atomic<uint32_t> is a plain 32-bit word.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000ull),
              static_cast<long>(timeout_ns % 1000000000ull)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// The first rank of the communicator that has not arrived at `seq`, or
// nranks when every one has.
int first_missing(SharedSegment& shm, int nranks, uint64_t seq) {
  for (int r = 0; r < nranks; ++r) {
    if (shm.slot(r).arrived_seq.load(std::memory_order_seq_cst) < seq) return r;
  }
  return nranks;
}

// Another rank changed what `ready` reads: wakes the ranks waiting.
void wake_waiters(SegmentHeader& hdr) {
  hdr.changes.fetch_add(1, std::memory_order_seq_cst);
  if (hdr.waiters.load(std::memory_order_seq_cst) != 0) futex_wake_all(&hdr.changes);
}

// Sleeps on the segment's futex word until `ready()` (true) or the
// communicator is aborted (false). No wake is lost: a waiter counts itself
// and reads the word before it looks at `ready` and at an abort, a writer
// (an arrival, a send, an abort) publishes its change before it bumps the
// word and reads the count (all sequentially consistent), so either the
// waiter sees the change, or its wait finds the word changed, or the writer
// sees it waiting. Each sleep is bounded all the same (kWaitBoundNs), a net
// only: at 1,024 ranks waiting on a hung collective a 5 ms bound was 200,000
// wake-ups a second, which starved the supervisors the job exists to test.
template <typename Ready>
bool wait_until(CommState& st, Ready ready) {
  constexpr uint64_t kWaitBoundNs = 1000 * kPollNs;  // 100 ms
  SegmentHeader& hdr = st.shm().header();
  for (;;) {
    hdr.waiters.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = hdr.changes.load(std::memory_order_seq_cst);
    const bool gone = comm_gone(st);  // ncclCommAbort ends pending work
    const bool done = !gone && ready();
    if (!gone && !done) futex_wait(&hdr.changes, seen, kWaitBoundNs);
    hdr.waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (gone) return false;
    if (done) return true;
  }
}

// Stream task: arrive at `seq`, wait for every rank, then run for the
// duration from the last rank's arrival: the same on every rank, except the
// slow-link rank's, whose duration was scaled at enqueue (transfer_ns). The
// rank whose arrival completes the set wakes the others.
uint64_t run_collective(void* arg, uint64_t start_ns) {
  auto* op = static_cast<OpArgs*>(arg);
  CommState& st = *op->state;
  SharedSegment& shm = st.shm();
  RankSlot& me = shm.slot(st.rank);
  me.arrival_ns[op->seq % 2].store(start_ns, std::memory_order_relaxed);
  me.arrived_seq.store(op->seq, std::memory_order_seq_cst);
  if (first_missing(shm, st.nranks, op->seq) == st.nranks) {
    wake_waiters(shm.header());
  } else if (!wait_until(st, [&] { return first_missing(shm, st.nranks, op->seq) == st.nranks; })) {
    return now_ns();
  }
  uint64_t last_arrival = start_ns;
  for (int r = 0; r < st.nranks; ++r) {
    last_arrival =
        std::max(last_arrival, shm.slot(r).arrival_ns[op->seq % 2].load(std::memory_order_relaxed));
  }
  const uint64_t end = last_arrival + op->duration_ns;
  sleep_until_ns(end);
  return end;
}

// Eager send: posting never waits for the receiver. It takes its number,
// then publishes its simulated start time under it.
uint64_t run_send(void* arg, uint64_t start_ns) {
  auto* op = static_cast<OpArgs*>(arg);
  CommState& st = *op->state;
  const uint64_t number =
      st.shm().sent(st.rank, op->peer).fetch_add(1, std::memory_order_seq_cst) + 1;
  SendTime& t = st.shm().send_time(st.rank, op->peer, number);
  t.seq.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  t.start_ns.store(start_ns, std::memory_order_relaxed);
  t.seq.store(number, std::memory_order_release);
  wake_waiters(st.shm().header());
  const uint64_t end = start_ns + op->duration_ns;
  sleep_until_ns(end);
  return end;
}

// Simulated start of send `number`, false once a later send overwrote it.
bool send_start_ns(const SendTime& t, uint64_t number, uint64_t* out) {
  const uint64_t before = t.seq.load(std::memory_order_acquire);
  const uint64_t value = t.start_ns.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (before != number || t.seq.load(std::memory_order_relaxed) != number) return false;
  *out = value;
  return true;
}

// The transfer starts when both sides are there, the later of the two
// simulated start times (as a collective starts at the last arrival), so
// the receiving stream's time does not depend on when its worker thread ran.
uint64_t run_recv(void* arg, uint64_t start_ns) {
  auto* op = static_cast<OpArgs*>(arg);
  CommState& st = *op->state;
  auto& posted = st.shm().sent(op->peer, st.rank);
  if (!wait_until(st, [&] { return posted.load(std::memory_order_seq_cst) >= op->seq; })) {
    return now_ns();
  }
  // The send has its number; its time follows within nanoseconds, unless a
  // later send (more than kSendTimes ahead) has taken the slot.
  const SendTime& slot = st.shm().send_time(op->peer, st.rank, op->seq);
  uint64_t send_ns = 0;
  while (!send_start_ns(slot, op->seq, &send_ns)) {
    if (slot.seq.load(std::memory_order_acquire) > op->seq || comm_gone(st)) {
      send_ns = now_ns();
      break;
    }
    sleep_for_ns(kPollNs / 100);
  }
  const uint64_t end = std::max(start_ns, send_ns) + op->duration_ns;
  sleep_until_ns(end);
  return end;
}

// The duration of one of this rank's collectives, sends or receives of
// `bytes`. On the slow-link rank (XPU_TIMER_SIM_SLOW_LINK_RANK, a global RANK,
// so the same process in every communicator it belongs to) it is
// XPU_TIMER_SIM_SLOW_LINK_FACTOR times longer. Only that rank's own end moves:
// its peers still end at last arrival + duration, and it then reaches its
// next operation late, as a rank behind a slow NIC does.
uint64_t transfer_ns(uint64_t bytes) {
  static const double factor = slow_factor_of_this_rank(
      "XPU_TIMER_SIM_SLOW_LINK_RANK", "XPU_TIMER_SIM_SLOW_LINK_FACTOR", "transfers");
  return scale_ns(collective_duration_ns(bytes), factor);
}

ncclResult_t enqueue(ncclComm_t comm, xpu_sim_task_fn fn, OpArgs* op, cudaStream_t stream,
                     bool* dropped) {
  int was_dropped = 0;
  const cudaError_t err = xpu_sim_enqueue_task(stream, fn, op, destroy_op, &was_dropped);
  *dropped = was_dropped != 0;
  if (err != cudaSuccess) {
    set_last_error("simulated NCCL: invalid CUDA stream");
    return ncclInvalidArgument;
  }
  (void)comm;
  return ncclSuccess;
}

}  // namespace

CommState::~CommState() = default;

void set_last_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_error_mu);
  *g_last_error = message;
}

const char* last_error() {
  // NCCL returns a pointer into its own storage; keep a per-thread copy so the
  // pointer stays valid while another thread sets a new error.
  thread_local std::string copy;
  std::lock_guard<std::mutex> lock(g_error_mu);
  copy = *g_last_error;
  return copy.c_str();
}

uint64_t collective_duration_ns(uint64_t bytes) {
  static const double lat_us = std::max(0.0, env_double("XPU_TIMER_SIM_LAT_US", 20.0));
  static const double gbps = [] {
    const double v = env_double("XPU_TIMER_SIM_BUS_GBPS", 50.0);
    return v > 0 ? v : 50.0;
  }();
  return static_cast<uint64_t>(lat_us * 1000.0 + static_cast<double>(bytes) / gbps);
}

ncclResult_t comm_init(ncclComm_t* out, int nranks, uint64_t comm_hash, int rank, bool wait) {
  if (out == nullptr || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    set_last_error("simulated NCCL: invalid nranks/rank (at most " + std::to_string(kMaxRanks) +
                   " ranks)");
    return ncclInvalidArgument;
  }
  std::string error;
  std::unique_ptr<SharedSegment> segment(
      SharedSegment::open(segment_name(comm_hash), nranks, &error));
  if (!segment) {
    XPU_TIMER_LOG_ERROR("simgpu: %s", error.c_str());
    set_last_error(error);
    return ncclSystemError;
  }
  SegmentHeader& head = segment->header();
  uint32_t expected = 0;
  head.magic.compare_exchange_strong(expected, kSegmentMagic);
  uint32_t expected_n = 0;
  head.nranks.compare_exchange_strong(expected_n, static_cast<uint32_t>(nranks));
  const uint32_t seen_n = head.nranks.load();
  if (head.magic.load() != kSegmentMagic || seen_n != static_cast<uint32_t>(nranks)) {
    error = "segment /" + segment->name() + " holds a communicator of " + std::to_string(seen_n) +
            " ranks, not " + std::to_string(nranks) +
            " (stale segment? use a fresh XPU_TIMER_SIM_JOB_ID)";
    XPU_TIMER_LOG_ERROR("simgpu: %s", error.c_str());
    set_last_error(error);
    return ncclInvalidUsage;
  }
  int32_t no_pid = 0;
  const int32_t pid = static_cast<int32_t>(getpid());
  RankSlot& slot = segment->slot(rank);
  if (!slot.pid.compare_exchange_strong(no_pid, pid) && no_pid != pid) {
    error = "rank " + std::to_string(rank) + " of /" + segment->name() +
            " was already joined by pid " + std::to_string(no_pid);
    XPU_TIMER_LOG_ERROR("simgpu: %s", error.c_str());
    set_last_error(error);
    return ncclInvalidUsage;
  }
  auto state = std::make_shared<CommState>();
  state->segment = std::move(segment);
  state->rank = rank;
  state->nranks = nranks;
  state->comm_hash = comm_hash;
  auto* comm = new (std::nothrow) ncclComm();
  if (comm == nullptr) return ncclSystemError;
  comm->state = std::move(state);
  comm->recv_seq.assign(static_cast<size_t>(nranks), 0);
  cudaGetDevice(&comm->device);
  if (wait) {
    const ncclResult_t res = comm_wait_joined(comm);
    if (res != ncclSuccess) {
      comm_release(comm, true);
      return res;
    }
  }
  *out = comm;
  return ncclSuccess;
}

ncclResult_t comm_wait_joined(ncclComm_t comm) {
  CommState& st = *comm->state;
  // Like ncclCommInitRank, this blocks until every rank has called it.
  for (int r = 0; r < st.nranks; ++r) {
    while (st.shm().slot(r).pid.load(std::memory_order_acquire) == 0) {
      sleep_for_ns(kPollNs * 2);
    }
  }
  return ncclSuccess;
}

ncclResult_t comm_split(ncclComm_t comm, int color, int key, ncclComm_t* out) {
  CommState& st = *comm->state;
  SharedSegment& shm = st.shm();
  const uint64_t seq = ++comm->split_seq;
  SplitEntry& mine = shm.slot(st.rank).split[seq % 2];
  mine.color.store(color, std::memory_order_relaxed);
  mine.key.store(key, std::memory_order_relaxed);
  mine.seq.store(seq, std::memory_order_release);
  struct Member {
    int key;
    int old_rank;
  };
  std::vector<Member> members;
  for (int r = 0; r < st.nranks; ++r) {
    SplitEntry& e = shm.slot(r).split[seq % 2];
    while (e.seq.load(std::memory_order_acquire) < seq) {
      if (comm_gone(st)) return ncclInvalidUsage;
      sleep_for_ns(kPollNs * 2);
    }
    if (color != NCCL_SPLIT_NOCOLOR && e.color.load(std::memory_order_relaxed) == color) {
      members.push_back(Member{e.key.load(std::memory_order_relaxed), r});
    }
  }
  if (color == NCCL_SPLIT_NOCOLOR) {
    *out = nullptr;
    return ncclSuccess;
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.old_rank < b.old_rank;
  });
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].old_rank == st.rank) new_rank = static_cast<int>(i);
  }
  const uint64_t mix[3] = {st.comm_hash, static_cast<uint64_t>(static_cast<uint32_t>(color)), seq};
  const uint64_t child_hash = hash_bytes(mix, sizeof(mix), 0x73706c6974ull);
  return comm_init(out, static_cast<int>(members.size()), child_hash, new_rank, true);
}

void comm_release(ncclComm_t comm, bool abort) {
  if (comm == nullptr) return;
  std::shared_ptr<CommState> st = comm->state;
  SharedSegment& shm = st->shm();
  if (abort) {
    st->aborted.store(true, std::memory_order_seq_cst);
    wake_waiters(shm.header());  // this rank's stream waits end now, not at the bound
  }
  if (!st->left.exchange(true)) {
    shm.slot(st->rank).left.store(1, std::memory_order_release);
    // The last rank to leave removes the name; in-flight tasks keep their mapping.
    if (shm.header().left_count.fetch_add(1) + 1 == static_cast<uint32_t>(st->nranks)) {
      st->segment->unlink();
    }
  }
  delete comm;
}

ncclResult_t enqueue_collective(ncclComm_t comm, uint64_t bytes, cudaStream_t stream) {
  auto* op = new (std::nothrow) OpArgs();
  if (op == nullptr) return ncclSystemError;
  op->state = comm->state;
  op->seq = comm->collective_seq + 1;
  op->duration_ns = transfer_ns(bytes);
  bool dropped = false;
  const ncclResult_t res = enqueue(comm, run_collective, op, stream, &dropped);
  // A collective captured into a graph is not executed by the sim and does
  // not take a sequence number (every rank captures the same ones).
  if (res == ncclSuccess && !dropped) ++comm->collective_seq;
  return res;
}

ncclResult_t enqueue_send(ncclComm_t comm, int peer, uint64_t bytes, cudaStream_t stream) {
  auto* op = new (std::nothrow) OpArgs();
  if (op == nullptr) return ncclSystemError;
  op->state = comm->state;
  op->peer = peer;
  op->duration_ns = transfer_ns(bytes);
  bool dropped = false;
  return enqueue(comm, run_send, op, stream, &dropped);
}

ncclResult_t enqueue_recv(ncclComm_t comm, int peer, uint64_t bytes, cudaStream_t stream) {
  auto* op = new (std::nothrow) OpArgs();
  if (op == nullptr) return ncclSystemError;
  op->state = comm->state;
  op->peer = peer;
  op->seq = comm->recv_seq[static_cast<size_t>(peer)] + 1;
  op->duration_ns = transfer_ns(bytes);
  bool dropped = false;
  const ncclResult_t res = enqueue(comm, run_recv, op, stream, &dropped);
  if (res == ncclSuccess && !dropped) ++comm->recv_seq[static_cast<size_t>(peer)];
  return res;
}

}  // namespace xpu_timer::simgpu
