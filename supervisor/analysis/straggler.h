// Slow ranks: which rank the others wait for at their collectives, and why.
// Pure logic over flight-recorder records (common/recorder_ring.h), fed by
// the supervisor's SlowRankMonitor on the asio thread; no threads, sockets
// or files. docs/usage.md "Slow ranks" says how to read the verdicts and
// derives the thresholds; docs/architecture.md "Slow ranks" the data flow.
//
// Method. A collective (communicator, sequence number) cannot finish before
// its last member arrives, a member arriving when its start marker completed
// on its GPU (the work before it had finished). The ranks of one node share
// CLOCK_MONOTONIC, so their arrivals compare directly. Per collective the
// last arrival is the rank the others waited for; over a sliding window
// each rank gets the share of collectives at which it was last, its median
// lateness (its margin over the next latest) and the wait it caused
// (the others' waits for it, in rank-seconds). A straggler is a rank that is
// last far more often than chance (1/N of N members) would make it, whose
// arrivals are later than its peers' beyond what the window's own spread of
// arrivals explains, and whose lateness costs its peers a noticeable share
// of their time (see StragglerOptions).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace xpu_timer::supervisor {

struct StragglerOptions {
  double window_s = 30;  // --slow-window-s
  // A rank is last more often than chance by this many standard deviations
  // of the binomial count (p = 1/N), and its median arrival offset is above
  // its peers' median by this many standard errors of that median.
  double z = 5;
  // ... while it stays a straggler: the lower bar of the hysteresis.
  double z_clear = 2.5;
  // The wait it causes, as a share of its peers' time, at least this.
  double min_impact = 0.01;
  // Collectives in the window before anything is judged (per rank).
  size_t min_collectives = 20;
  // A collective is judged once every known local member reported it, or
  // this long after the first report (a member's record lost).
  uint64_t settle_ns = 2'000'000'000;
};

// One rank's part in one collective, from its completed ring record.
struct CollectiveArrival {
  int rank = 0;
  uint64_t comm = 0;
  uint64_t seq = 0;
  uint16_t name = 0;  // proto::OpName
  uint64_t launch_ns = 0;
  uint64_t arrival_ns = 0;  // the start marker's GPU time
  uint64_t end_ns = 0;
};

struct GemmShape {
  uint16_t name = 0;
  uint8_t dtype = 0;
  uint32_t m = 0, n = 0, k = 0, batch = 0;
  bool operator<(const GemmShape& o) const;
};

enum class SlowCause { kGpu, kHost, kLink, kUnknown };
const char* slow_cause_name(SlowCause c);

// The numbers a cause rests on (0 where not measured). Seconds are medians
// over the window unless said otherwise.
struct SlowEvidence {
  double arrival_late_s = 0;   // its arrival after its peers' median, when last
  double launch_late_s = 0;    // its host launch after its peers' median, when last
  double queue_excess_s = 0;   // (arrival - launch) beyond its peers'
  double transfer_s = 0;       // its end after the last arrival
  double peer_transfer_s = 0;  // the same for its peers
  double gemm_ratio = 0;       // its GEMM time over its peers' on the same shapes (0: none)
  int gemm_shapes = 0;         // shapes compared
  double gemm_peer_spread = 0;  // the peers' own ratios' spread (MAD)
  double gc_s = 0, peer_gc_s = 0;          // GC pause seconds in the window (peers: median)
  double loader_s = 0, peer_loader_s = 0;  // DataLoader wait seconds in the window
};

struct Straggler {
  int rank = 0;
  int node = -1;
  SlowCause cause = SlowCause::kUnknown;
  uint64_t comm = 0;
  std::string comm_name;
  uint16_t op = 0;           // the collective it was last at most often
  size_t collectives = 0;    // of that communicator in the window
  double late_share = 0;     // share of them at which it arrived last
  double median_late_s = 0;  // its margin over the next latest, when last
  double wait_caused_s = 0;  // its peers' waits for it in the window, rank-seconds
  double impact = 0;         // wait_caused_s over its peers' time in the window
  double z = 0;              // the consistency score
  SlowEvidence evidence;
  std::string summary;
};

// Per rank, over every collective of the window.
struct RankLateness {
  int rank = 0;
  size_t collectives = 0;
  size_t last = 0;
  double median_late_s = 0;        // when last
  double wait_caused_s = 0;        // in the window
  double wait_caused_total_s = 0;  // since the supervisor started (a counter)
};

struct SlowReport {
  double window_s = 0;
  std::vector<Straggler> stragglers;  // by wait caused, largest first
  std::vector<RankLateness> ranks;    // by rank
  uint64_t collectives_judged = 0;    // since the start
  // The supervisor's CPU seconds spent on this analysis since the start
  // (following the rings included; set by its caller).
  double analysis_cpu_s = 0;
  std::string summary = "no straggler";
  // Per communicator and rank over the window: (collectives, median seconds
  // from its arrival to its end). Clock-free: what the nodes of a job compare
  // (slow_summary.h).
  std::map<uint64_t, std::map<int, std::pair<size_t, double>>> time_in_collective;
};

class StragglerAnalyzer {
 public:
  explicit StragglerAnalyzer(StragglerOptions options = {}) : options_(options) {}

  // The local members of each communicator and their node (from the pages).
  void note_member(uint64_t comm, int rank, int node);
  void note_comm_name(uint64_t comm, const std::string& name);
  void add_collective(const CollectiveArrival& a, uint64_t now_ns);
  void add_gemm(int rank, const GemmShape& shape, uint64_t duration_ns, uint64_t end_ns);
  // A GC pause (`loader` false) or a DataLoader wait.
  void add_host_pause(int rank, bool loader, uint64_t duration_ns, uint64_t end_ns);

  // Judges the collectives that are complete, drops what left the window
  // and returns the verdict as of `now_ns` (CLOCK_MONOTONIC).
  SlowReport analyze(uint64_t now_ns);

 private:
  struct Part {
    int rank;
    uint64_t launch_ns, arrival_ns, end_ns;
  };
  struct Judged {
    uint64_t end_ns;  // the latest end: when it left the window
    uint16_t name;
    std::vector<Part> parts;  // sorted by arrival; the last one is the last arrival
  };
  struct Pending {
    uint64_t first_ns = 0;
    uint16_t name = 0;
    std::vector<Part> parts;
  };
  void judge(uint64_t comm, Pending&& p);
  void expire(uint64_t now_ns);
  // `previous`: the cause the last verdict gave the rank (kUnknown if none).
  void find_cause(Straggler* s, uint64_t comm, SlowCause previous) const;

  StragglerOptions options_;
  std::map<uint64_t, std::set<int>> members_;
  std::map<int, int> node_of_;
  std::map<uint64_t, std::string> comm_names_;
  std::map<std::pair<uint64_t, uint64_t>, Pending> pending_;
  std::map<uint64_t, std::deque<Judged>> window_;  // per communicator
  std::map<int, std::map<GemmShape, std::deque<std::pair<uint64_t, uint64_t>>>> gemms_;  // (end, dur)
  struct Pause {
    uint64_t end_ns, duration_ns;
    bool loader;
  };
  std::map<int, std::deque<Pause>> pauses_;
  std::map<int, double> wait_total_s_;
  std::map<int, SlowCause> standing_;  // the stragglers of the last verdict, and their causes
  uint64_t judged_ = 0;
};

// "rank 5 on node 1 arrived last at 92% of AllReduces on comm 1a2b... (dp),
// 41 ms late (median); its GEMMs ran 18% slower than its peers' on the same
// shapes: slow GPU"
std::string straggler_sentence(const Straggler& s);
// The verdict's sentence: the costliest straggler's, "; and N more", or "no
// straggler". `stragglers` sorted by wait caused, largest first.
std::string stragglers_summary(const std::vector<Straggler>& stragglers);

}  // namespace xpu_timer::supervisor
