// Slow ranks: which rank the others wait for at their collectives, whether
// that wait costs the job, and why. Pure logic over flight-recorder records
// (common/recorder_ring.h, fed through straggler_feed.h), run by the
// supervisor's SlowRankMonitor on the asio thread and by the offline
// xpu_timer_slow_replay over dump folders; no threads, sockets or files.
// docs/usage.md "Slow ranks" says how to read the verdicts and where every
// threshold comes from; docs/architecture.md "Slow ranks" the data flow.
//
// Method. A collective (communicator, sequence number) cannot start before
// its last member arrives, a member arriving when its start marker completed
// on its GPU (the work before it had finished). The ranks of one node share
// CLOCK_MONOTONIC, so their arrivals compare directly; who arrived last is
// common/last_arrival.h's rule. Real ranks are not interchangeable: a
// healthy GPU can be last at most collectives by a fraction of a millisecond,
// which any significance test over thousands of collectives finds
// "significant". So no test of significance names a rank: its cost does.
//
// The cost of a rank is the time the collectives of a communicator were held
// back by it alone (its margin over the next latest), counted per delay.
// How a delay carries from one collective to the next depends on what the
// ranks do meanwhile, which the window shows:
// - On the critical path (no member's timed GEMM or copy ran while it was
//   inside a collective of the communicator: its compute waits for the
//   collective, as in tensor parallelism or a step that synchronises), every
//   margin is a delay of its own: the peers waited with nothing else to do.
// - Overlapped (a tenth or more of the members' timed operations ran inside
//   its collectives, as data-parallel buckets overlap the backward pass), a
//   delay persists while the rank stays last with its work queued ahead, and
//   counts once, at its largest: its peers' later collectives queue behind
//   it or wait for its compute, which the first delay already set back. A
//   delay is fresh when the rank becomes the last, when it launched the
//   collective only after its previous one there had ended (its host had
//   waited for it), or when the collective starts a burst (it came over three
//   times the communicator's usual spacing after the previous one, as the
//   first bucket of a data-parallel step does). A rank 15 ms late at the first bucket of each
//   step costs 15 ms a step, not 15 ms plus every later bucket's margin; one
//   a millisecond late at the first bucket that catches up by the last costs
//   a millisecond a step.
// A rank is a straggler when its cost without its single largest delay (a
// job's first steps, a checkpoint: no straggler holds its peers back only
// once), less the median of the same for the other members (what the job's
// own arrivals cost), is at least StragglerOptions::min_cost of the window's
// time.
//
// A late host costs the job only the time its peers' hosts had to spare. In
// a job whose every host is the bottleneck (small batches, Python-bound),
// one rank's host runs ahead, its launch queue a step deep, and its GPU
// waits at every collective for a peer whose GPU starts each one as soon as
// its host launches it: a phase between equals, which arrivals and launches
// alone would charge to the peer. Where every member measured the time its
// host blocked on its GPU (synchronisations, a full launch queue:
// inject/host_blocked.h), the cost of a rank late for its host is at most
// its peers' median blocked time less its own, over the window.
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
  // Seconds of collectives judged; the default of the supervisor's
  // --slow-window (XPU_TIMER_SLOW_WINDOW_S).
  double window_s = 30;
  // Named when the wait it causes beyond its peers' median is this share of
  // the window's time; cleared when it falls below clear_cost (hysteresis).
  // Healthy real jobs cost at most 1.1% over seconds (2.9% over the worst
  // single second, which min_span_s keeps out): docs/usage.md "Slow ranks"
  // has the recordings and the derivation.
  double min_cost = 0.03;
  double clear_cost = 0.015;
  // Collectives of a rank in the window before it is judged.
  size_t min_collectives = 20;
  // The window's time counts at least this much, so that the first seconds
  // of a job (a few steps, the warm-up's jitter) cannot name anybody.
  double min_span_s = 10;
  // A collective is judged once every known local member reported it, or
  // this long after the first report (a member's record lost).
  uint64_t settle_ns = 2'000'000'000;
  // An operation whose GPU start came within this of its launch, beyond the
  // least such delay of the rank's operations in the window, found the GPU
  // with nothing queued: the GPU waited for the host. The least delay is the
  // error of the rank's mapping of GPU onto host time (inject/gpu_clock.h:
  // microseconds on a real GPU, a few hundred on the simulated one), and it
  // counts only up to max_clock_error_ns: the Poller looks at its events at
  // least every millisecond while work is pending, so a mapping is never
  // later than that, and a rank whose every operation waited longer in its
  // queue never had a GPU waiting for it. 50 us: ten times a launch's latency.
  uint64_t host_bound_ns = 50'000;
  uint64_t max_clock_error_ns = 1'000'000;
  // A GPU waited for its host when at least this share of its timed
  // operations (tens a second) did: fewer is a one-off, the first operation
  // after a synchronisation, no host holding its GPU up. (Real GPT-2 DDP:
  // 15-21% on an H200, where the forward pass is host-bound; 0.04% on an
  // H100, where it is not; 0.5% on the H200 shared with another process.)
  double min_host_bound_share = 0.01;
  // A communicator whose members ran at least this share of their timed
  // GEMMs and copies inside its collectives overlaps them with compute. The
  // real GPT-2 recordings: 40-55%; a job whose compute waits for every
  // collective: none.
  double overlap_share = 0.1;
  // A collective starts a burst when its first member arrived more than this
  // many times the communicator's median spacing after the previous one's
  // first member (the gradient buckets of a step come milliseconds apart,
  // the steps tens of milliseconds).
  double burst_factor = 3;
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
  // Where its chains of lateness began (the collective whose margin the
  // chain's cost starts from; weighted by that margin): its arrival, its
  // host launch and its GPU queue (arrival - launch) against its peers'
  // medians. Later collectives of a chain are left out: its peers, queued
  // behind it, arrive late there themselves.
  double arrival_late_s = 0;
  double launch_late_s = 0;
  double queue_excess_s = 0;
  double transfer_s = 0;           // its end after the last arrival
  double peer_transfer_s = 0;      // the same for its peers
  double gemm_ratio = 0;           // its GEMM time over its peers' on the same shapes (0: none)
  int gemm_shapes = 0;             // shapes compared
  double gemm_peer_spread = 0;     // the peers' own ratios' spread (MAD)
  double gc_s = 0, peer_gc_s = 0;  // GC pause seconds in the window (peers: median)
  double loader_s = 0, peer_loader_s = 0;  // DataLoader wait seconds in the window
  // Its timed GPU operations in the window, and those that started within
  // host_bound_ns of their launch (its GPU had drained and waited for it).
  int timed_ops = 0, host_bound_ops = 0;
  double peer_host_bound_share = 0;  // the median of its peers' host_bound_ops / timed_ops
  int chains = 0;  // the chains of lateness the arrival, launch and queue figures come from
  bool overlapped = false;  // its communicator's collectives overlap compute (see above)
  // Seconds its host and its peers' (median) blocked on their GPUs over the
  // window; -1 where a member did not measure it (an older library).
  double host_blocked_s = -1, peer_host_blocked_s = -1;
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
  double wait_caused_s = 0;  // its cost in the window (chains of lateness), seconds
  double impact = 0;         // that cost less its peers' median, over the window's time
  SlowEvidence evidence;
  std::string summary;
};

// Per rank, over every collective of the window.
struct RankLateness {
  int rank = 0;
  size_t collectives = 0;
  size_t last = 0;
  double median_late_s = 0;  // when last
  double wait_caused_s = 0;  // its cost in the window (chains of lateness)
  double wait_caused_total_s =
      0;  // its peers' waits for it since the start, rank-seconds (a counter)
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
  // A timed GPU operation (GEMM, copy): did the GPU wait for its launch?
  void add_timed_op(int rank, uint64_t launch_ns, uint64_t gpu_start_ns, uint64_t end_ns);
  // A GC pause (`loader` false) or a DataLoader wait.
  void add_host_pause(int rank, bool loader, uint64_t duration_ns, uint64_t end_ns);
  // The time the rank's host blocked on its GPU over [start_ns, end_ns].
  void add_host_blocked(int rank, uint64_t blocked_ns, uint64_t start_ns, uint64_t end_ns);

  // Judges the collectives that are complete, drops what left the window
  // and returns the verdict as of `now_ns` (CLOCK_MONOTONIC).
  SlowReport analyze(uint64_t now_ns);
  // A new window (POST /config): a shorter one drops what left it at the
  // next analyze(); a longer one fills as collectives come.
  void set_window_s(double window_s) { options_.window_s = window_s; }

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
  // Where a rank's chain of lateness began (a fresh delay): the collective
  // and its margin.
  struct ChainStart {
    const Judged* at;
    double margin_s;
  };
  void judge(uint64_t comm, Pending&& p);
  void expire(uint64_t now_ns);
  // Whether the collectives of `d` overlap their members' compute (see the
  // method above).
  bool overlapped(const std::deque<Judged>& d) const;
  // `previous`: the cause the last verdict gave the rank (kUnknown if none).
  void find_cause(Straggler* s, uint64_t comm, const std::vector<ChainStart>& starts,
                  SlowCause previous) const;

  StragglerOptions options_;
  std::map<uint64_t, std::set<int>> members_;
  std::map<int, int> node_of_;
  std::map<uint64_t, std::string> comm_names_;
  std::map<std::pair<uint64_t, uint64_t>, Pending> pending_;
  std::map<uint64_t, std::deque<Judged>> window_;  // per communicator
  std::map<int, std::map<GemmShape, std::deque<std::pair<uint64_t, uint64_t>>>>
      gemms_;  // (end, dur)
  struct Pause {
    uint64_t end_ns, duration_ns;
    bool loader;
  };
  std::map<int, std::deque<Pause>> pauses_;
  struct Blocked {
    uint64_t start_ns, end_ns, blocked_ns;
  };
  std::map<int, std::deque<Blocked>> blocked_;
  // Seconds `rank`'s host blocked on its GPU within [from_ns, now_ns] (at
  // most that long), the samples that straddle either end prorated; -1
  // without any sample.
  double host_blocked_s(int rank, uint64_t from_ns, uint64_t now_ns) const;
  // The bound on a late host's cost (see the method above), as a share of
  // `span_s` ending at now_ns; sets the evidence; -1 when not every member
  // measured it.
  double host_cost_bound(Straggler* s, uint64_t now_ns, double span_s) const;
  struct TimedOp {
    uint64_t start_ns, end_ns;  // on the GPU
    uint64_t queue_ns;          // its GPU start after its launch
  };
  std::map<int, std::deque<TimedOp>> timed_ops_;
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
