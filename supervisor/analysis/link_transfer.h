// The link's part of a collective's GPU time, apart from the wait for its
// last member: what the transfer bandwidth and the wait and transfer
// counters of GET /metrics come from (docs/metrics.md "Link bandwidth").
// Pure logic over flight-recorder records (common/recorder_ring.h), fed
// through feed_transfer_record() by the supervisor's LinkTransferMonitor on
// the asio thread and by the replay of the real-GPU recordings; no threads,
// sockets or files.
//
// Method. A member's GPU time at a collective, from its start marker to its
// end (e_i - s_i, measured on its own GPU), is its wait for the last member
// to arrive plus the transfer after that arrival. The last member L waits for
// nobody: its own GPU time e_L - s_L is e_L - S, S = max_i s_i, the transfer
// alone. No member's GPU time is shorter than the shortest transfer: in an
// AllReduce, AllGather or ReduceScatter every member needs every member's
// data, so it ends after S (e_i >= S >= s_i). So the collective's transfer
// time is taken as
//   T = min_i (e_i - s_i),  min_i (e_i - S) <= T <= e_L - S,
// each term read on one rank's own GPU: no two ranks' clocks are compared.
// They could not be compared closely enough: each rank maps its GPU times
// onto the host clock with its own error (inject/gpu_clock.h), and the ends
// of one collective's members, which a ring finishes together, spread by tens
// of microseconds on the real-GPU recordings (hundreds on an H100 whose host
// was loaded, once 2.3 ms), against transfers of 200-600 us; e_i - S would
// carry that spread whole (slow_replay/transfer_replay_test.cc prints it).
// Where the clocks agree on who arrived last (common/last_arrival.h's rule),
// the member of least GPU time is that rank at most collectives, and T is
// its e_L - S. Each member's wait is its GPU time less T (its time from its
// start to the last arrival, plus how much later than the last member it
// ended), so wait + transfer is exactly its GPU time at the collectives
// counted. The transfer still shares the GPU's SMs with whatever else runs
// (a backward pass): T is the link's time under that load.
//
// What counts: AllReduce, AllGather and ReduceScatter (a rooted Broadcast or
// Reduce can end at some member before the last one arrives: the root of a
// small broadcast needs nobody) whose every member, the communicator's
// nranks, reported the collective on this node, each timed (sampled in:
// kRecTimed, the population of today's per-operation series). Any other is
// counted as skipped with its reason: a member sampled out, a member's
// record missing (lost, failed), or members on another node (whose start
// this node cannot see).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/recorder_ring.h"

namespace xpu_timer::supervisor {

// One member's record of a collective.
struct TransferPart {
  int rank = 0;
  uint64_t comm = 0;
  uint64_t seq = 0;
  uint16_t name = 0;  // proto::OpName
  uint8_t dtype = 0;  // proto::DType
  uint32_t nranks = 0;
  uint64_t bytes = 0;  // this rank's payload (nccl-tests size), as the page's series count it
  uint64_t start_ns = 0, end_ns = 0;  // its GPU start (arrival) and end
  bool timed = false;                 // sampled in, both times measured
};

// A series of the transfer bandwidth: the per-operation key of today's
// series (metrics_exporter.h) without NCCL's algorithm tags, which the ring
// does not carry.
struct TransferKey {
  int rank = 0;
  uint16_t op = 0;
  uint8_t dtype = 0;
  uint8_t size_bucket = 0;  // proto::log2_bucket(bytes), as the page's
  uint32_t nranks = 0;
  bool operator<(const TransferKey& o) const;
};

struct TransferSeries {
  TransferKey key;
  uint64_t collectives = 0;  // measured since the start
  // Bus bandwidth over the window: bytes / transfer time of the measured
  // collectives that ended in it, times the nccl-tests factor; 0: none.
  double bus_bandwidth = 0;
};

// A rank's time at the measured collectives of one communicator, since the
// start: wait + transfer = its GPU time at them.
struct RankCommTime {
  int rank = 0;
  uint64_t comm = 0;
  std::string comm_name;  // "" unknown
  uint64_t collectives = 0;
  uint64_t wait_ns = 0;
  uint64_t transfer_ns = 0;
};

// Collectives of the measured operations since the start, by outcome.
struct TransferCounts {
  uint64_t measured = 0;
  uint64_t sampled_out = 0;  // a member's record was not timed
  uint64_t missing = 0;      // a member that reports the communicator here never reported it
  uint64_t remote = 0;       // some members are not on this node
};

struct TransferReport {
  std::vector<TransferSeries> series;  // by key
  std::vector<RankCommTime> times;     // by rank, then communicator
  TransferCounts counts;
};

class LinkTransferMeter {
 public:
  // A collective is judged once all its nranks members reported it, or this
  // long after its first report (a member's record lost, or elsewhere).
  static constexpr uint64_t kSettleNs = 2'000'000'000;
  // Communicators whose reporting ranks are remembered.
  static constexpr size_t kMaxComms = 4096;

  // `window_ns`: the bandwidth's window (the supervisor's
  // XPU_TIMER_METRICS_WINDOW_S, as the page's rate gauges).
  explicit LinkTransferMeter(uint64_t window_ns) : window_ns_(window_ns) {}

  // The operations measured (AllReduce, AllGather, ReduceScatter).
  static bool measures(uint16_t name);

  void note_comm_name(uint64_t comm, const std::string& name);
  // One member's completed record; `now_ns` when it was read.
  void add(const TransferPart& p, uint64_t now_ns);
  // Judges what settled, drops what left the window and reports as of
  // `now_ns` (CLOCK_MONOTONIC, the records' clock).
  TransferReport report(uint64_t now_ns);

 private:
  struct Pending {
    uint64_t first_ns = 0;
    std::vector<TransferPart> parts;
  };
  struct Bin {  // the collectives of a key that ended in one second
    uint64_t second = 0;
    uint64_t bytes = 0;
    uint64_t transfer_ns = 0;
  };
  struct Totals {
    uint64_t collectives = 0;
    std::deque<Bin> bins;  // oldest first, at most one per second of the window
  };
  void judge(const std::vector<TransferPart>& parts, uint64_t now_ns);
  static void add_to_bins(std::deque<Bin>* bins, uint64_t end_ns, uint64_t bytes,
                          uint64_t transfer_ns);

  const uint64_t window_ns_;
  std::map<std::pair<uint64_t, uint64_t>, Pending> pending_;  // (comm, seq)
  std::map<uint64_t, std::set<int>>
      reporters_;  // per communicator: the ranks that reported it here
  std::map<uint64_t, std::string> comm_names_;
  std::map<TransferKey, Totals> series_;
  std::map<std::pair<int, uint64_t>, RankCommTime> times_;  // (rank, comm)
  TransferCounts counts_;
};

// What the meter takes from a flight-recorder record: every completed record
// of a measured operation, timed or not (a sampled-out member makes its
// collective skipped, not missing); nothing else.
void feed_transfer_record(LinkTransferMeter* meter, int rank, const recorder::RecordData& d,
                          uint64_t now_ns);

}  // namespace xpu_timer::supervisor
