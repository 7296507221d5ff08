#include "supervisor/analysis/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "common/comm_names.h"
#include "common/last_arrival.h"
#include "supervisor/analysis/median.h"

namespace xpu_timer::supervisor {
namespace {

constexpr double kNsPerS = 1e9;

double mad_of(const std::vector<double>& v, double center) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - center));
  return median_of(std::move(dev));
}

double to_s(int64_t ns) { return static_cast<double>(ns) / kNsPerS; }

}  // namespace

bool GemmShape::operator<(const GemmShape& o) const {
  return std::tie(name, dtype, m, n, k, batch) < std::tie(o.name, o.dtype, o.m, o.n, o.k, o.batch);
}

const char* slow_cause_name(SlowCause c) {
  switch (c) {
    case SlowCause::kGpu:
      return "gpu";
    case SlowCause::kHost:
      return "host";
    case SlowCause::kLink:
      return "link";
    case SlowCause::kUnknown:
      break;
  }
  return "unknown";
}

void StragglerAnalyzer::note_member(uint64_t comm, int rank, int node) {
  members_[comm].insert(rank);
  if (node >= 0) node_of_[rank] = node;
}

void StragglerAnalyzer::note_comm_name(uint64_t comm, const std::string& name) {
  if (!name.empty()) comm_names_[comm] = name;
}

void StragglerAnalyzer::add_collective(const CollectiveArrival& a, uint64_t now_ns) {
  if (a.arrival_ns == 0 || a.end_ns < a.arrival_ns || a.comm == 0) return;
  const auto key = std::make_pair(a.comm, a.seq);
  Pending& p = pending_[key];
  if (p.parts.empty()) {
    p.first_ns = now_ns;
    p.name = a.name;
  }
  for (const Part& q : p.parts) {
    if (q.rank == a.rank) return;  // a second report of one rank: not a member twice
  }
  p.parts.push_back(Part{a.rank, a.launch_ns, a.arrival_ns, a.end_ns});
  const auto m = members_.find(a.comm);
  if (m != members_.end() && m->second.size() >= 2 && p.parts.size() >= m->second.size()) {
    Pending done = std::move(p);
    pending_.erase(key);
    judge(a.comm, std::move(done));
  }
}

void StragglerAnalyzer::add_gemm(int rank, const GemmShape& shape, uint64_t duration_ns,
                                 uint64_t end_ns) {
  gemms_[rank][shape].emplace_back(end_ns, duration_ns);
}

void StragglerAnalyzer::add_host_pause(int rank, bool loader, uint64_t duration_ns,
                                       uint64_t end_ns) {
  pauses_[rank].push_back(Pause{end_ns, duration_ns, loader});
}

void StragglerAnalyzer::add_timed_op(int rank, uint64_t launch_ns, uint64_t gpu_start_ns,
                                     uint64_t end_ns) {
  if (launch_ns == 0 || gpu_start_ns == 0) return;
  timed_ops_[rank].push_back(
      TimedOp{gpu_start_ns, end_ns, gpu_start_ns > launch_ns ? gpu_start_ns - launch_ns : 0});
}

void StragglerAnalyzer::judge(uint64_t comm, Pending&& p) {
  if (p.parts.size() < 2) return;
  std::sort(p.parts.begin(), p.parts.end(), [](const Part& a, const Part& b) {
    return a.arrival_ns != b.arrival_ns ? a.arrival_ns < b.arrival_ns : a.rank < b.rank;
  });
  Judged j{0, p.name, std::move(p.parts)};
  for (const Part& q : j.parts) j.end_ns = std::max(j.end_ns, q.end_ns);
  const LastArrival la = last_arrival(
      j.parts.size(), [&](size_t i) { return j.parts[i].rank; },
      [&](size_t i) { return j.parts[i].arrival_ns; });
  // The counter: every member's wait for the last one, in rank-seconds.
  const uint64_t last_ns = j.parts[la.last].arrival_ns;
  double wait = 0;
  for (const Part& q : j.parts) wait += to_s(static_cast<int64_t>(last_ns - q.arrival_ns));
  wait_total_s_[j.parts[la.last].rank] += wait;
  ++judged_;
  window_[comm].push_back(std::move(j));
}

void StragglerAnalyzer::expire(uint64_t now_ns) {
  const uint64_t window_ns = static_cast<uint64_t>(options_.window_s * kNsPerS);
  const uint64_t from = now_ns > window_ns ? now_ns - window_ns : 0;
  for (auto it = window_.begin(); it != window_.end();) {
    std::deque<Judged>& d = it->second;
    while (!d.empty() && d.front().end_ns < from) d.pop_front();
    it = d.empty() ? window_.erase(it) : std::next(it);
  }
  for (auto& [rank, shapes] : gemms_) {
    for (auto it = shapes.begin(); it != shapes.end();) {
      while (!it->second.empty() && it->second.front().first < from) it->second.pop_front();
      it = it->second.empty() ? shapes.erase(it) : std::next(it);
    }
  }
  for (auto& [rank, d] : pauses_) {
    while (!d.empty() && d.front().end_ns < from) d.pop_front();
  }
  for (auto& [rank, d] : timed_ops_) {
    while (!d.empty() && d.front().end_ns < from) d.pop_front();
  }
  // Samples come in order of their ends, but one may have been moved back
  // (a long wait) and a forged one may lie in the future: all are looked at.
  for (auto& [rank, d] : blocked_) {
    d.erase(
        std::remove_if(d.begin(), d.end(),
                       [&](const Blocked& b) { return b.end_ns < from || b.start_ns > now_ns; }),
        d.end());
  }
}

namespace {

// Per rank over one communicator's window.
struct CommStats {
  size_t n = 0;
  size_t last = 0;
  std::vector<double> margins;  // when last: over the next latest
  double cost = 0;              // chains of lateness, seconds
  double largest = 0;           // the largest of them
  // What names a straggler: its cost without its largest delay (a job's
  // first steps, a checkpoint, one long pause: no straggler holds its peers
  // back only once).
  double repeated() const { return cost - largest; }
  void add(double chain) {
    cost += chain;
    largest = std::max(largest, chain);
  }
  std::map<uint16_t, size_t> last_ops;
};

// The median of `v` weighted by `w` (both the same size, weights > 0).
double weighted_median(std::vector<std::pair<double, double>> vw) {
  if (vw.empty()) return 0;
  std::sort(vw.begin(), vw.end());
  double total = 0;
  for (const auto& [v, w] : vw) total += w;
  double acc = 0;
  for (const auto& [v, w] : vw) {
    acc += w;
    if (acc >= total / 2) return v;
  }
  return vw.back().first;
}

}  // namespace

bool StragglerAnalyzer::overlapped(const std::deque<Judged>& d) const {
  // Per member, its collectives' GPU intervals by arrival (already in order
  // of their sequence numbers, which is the order they ran in).
  std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> inside;
  for (const Judged& j : d) {
    for (const Part& q : j.parts) inside[q.rank].emplace_back(q.arrival_ns, q.end_ns);
  }
  size_t ops = 0, within = 0;
  for (auto& [rank, iv] : inside) {
    const auto t = timed_ops_.find(rank);
    if (t == timed_ops_.end()) continue;
    std::sort(iv.begin(), iv.end());
    for (const TimedOp& op : t->second) {
      if (iv.empty() || op.end_ns < iv.front().first || op.start_ns > iv.back().second) continue;
      ++ops;
      // The last collective that began before the operation ended.
      auto it = std::upper_bound(iv.begin(), iv.end(), std::make_pair(op.end_ns, UINT64_MAX));
      if (it != iv.begin() && std::prev(it)->second > op.start_ns) ++within;
    }
  }
  return ops > 0 &&
         static_cast<double>(within) >= options_.overlap_share * static_cast<double>(ops);
}

SlowReport StragglerAnalyzer::analyze(uint64_t now_ns) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    const auto m = members_.find(it->first.first);
    // Its members may have been noted after its records came (the rings are
    // read before the pages that name a new communicator's members).
    const bool all_in =
        m != members_.end() && m->second.size() >= 2 && it->second.parts.size() >= m->second.size();
    if (!all_in && now_ns - std::min(now_ns, it->second.first_ns) < options_.settle_ns) {
      ++it;
      continue;
    }
    const bool complete = m == members_.end() || it->second.parts.size() >= m->second.size();
    if (complete) judge(it->first.first, std::move(it->second));
    it = pending_.erase(it);
  }
  expire(now_ns);

  SlowReport report;
  report.window_s = options_.window_s;
  report.collectives_judged = judged_;
  struct Candidate {
    Straggler s;
    std::vector<ChainStart> starts;
    double span_s;
  };
  std::map<int, Candidate> best;  // per rank: the communicator it costs most on
  std::map<int, RankLateness> lateness;
  std::map<int, std::vector<double>> all_margins;
  for (const auto& [comm, d] : window_) {
    std::map<int, CommStats> stats;
    std::map<int, std::vector<ChainStart>> starts;
    // The open chain of lateness: its rank and value (seconds).
    int chain_rank = -1;
    double chain = 0;
    std::map<int, uint64_t> prev_end;  // per member: the end of its previous collective here
    uint64_t first_arrival = UINT64_MAX;
    const bool overlaps = overlapped(d);
    // The spacing of the communicator's collectives: from one's earliest
    // arrival to the next one's.
    std::vector<double> intervals;
    for (size_t i = 1; i < d.size(); ++i) {
      const uint64_t a = d[i - 1].parts.front().arrival_ns, b = d[i].parts.front().arrival_ns;
      intervals.push_back(b > a ? static_cast<double>(b - a) : 0.0);
    }
    const double burst_interval = options_.burst_factor * median_of(intervals);
    uint64_t prev_first_arrival = 0;
    for (const Judged& j : d) {
      const LastArrival la = last_arrival(
          j.parts.size(), [&](size_t i) { return j.parts[i].rank; },
          [&](size_t i) { return j.parts[i].arrival_ns; });
      const Part& last = j.parts[la.last];
      const double margin = to_s(la.margin_ns);
      // A new delay, rather than the last one persisting: the rank was not
      // last before, or it launched this collective only after its previous
      // one here had ended (its host had waited for it: whatever it is late
      // by now arose since, while its peers had been released together).
      const auto own = prev_end.find(last.rank);
      const bool burst =
          prev_first_arrival != 0 && j.parts.front().arrival_ns > prev_first_arrival &&
          static_cast<double>(j.parts.front().arrival_ns - prev_first_arrival) > burst_interval;
      const bool fresh = !overlaps || chain_rank != last.rank || own == prev_end.end() ||
                         last.launch_ns >= own->second || burst;
      prev_first_arrival = j.parts.front().arrival_ns;
      for (const Part& q : j.parts) {
        CommStats& s = stats[q.rank];
        ++s.n;
        prev_end[q.rank] = q.end_ns;
        first_arrival = std::min(first_arrival, q.arrival_ns);
      }
      CommStats& ls = stats[last.rank];
      ++ls.last;
      ++ls.last_ops[j.name];
      ls.margins.push_back(margin);
      if (fresh) {
        if (chain_rank >= 0) stats[chain_rank].add(chain);
        chain_rank = last.rank;
        chain = margin;
        if (margin > 0) starts[last.rank].push_back(ChainStart{&j, margin});
      } else {
        chain = std::max(chain, margin);
      }
    }
    if (chain_rank >= 0) stats[chain_rank].add(chain);

    std::map<int, std::vector<double>> in_collective;
    for (const Judged& j : d) {
      for (const Part& q : j.parts) in_collective[q.rank].push_back(to_s(q.end_ns - q.arrival_ns));
    }
    for (auto& [rank, v] : in_collective) {
      report.time_in_collective[comm][rank] = {v.size(), median_of(std::move(v))};
    }
    // The window's time on this communicator, at least min_span_s.
    const double span = std::max(
        options_.min_span_s,
        first_arrival < now_ns ? std::min(options_.window_s, to_s(now_ns - first_arrival)) : 0.0);
    for (auto& [rank, s] : stats) {
      RankLateness& rl = lateness[rank];
      rl.rank = rank;
      rl.collectives += s.n;
      rl.last += s.last;
      rl.wait_caused_s += s.cost;
      auto& m = all_margins[rank];
      m.insert(m.end(), s.margins.begin(), s.margins.end());
      if (s.n < options_.min_collectives || s.last == 0) continue;
      // What the job's own arrivals cost: the median of the other members'.
      std::vector<double> others;
      for (const auto& [r, o] : stats) {
        if (r != rank) others.push_back(o.repeated());
      }
      const double impact = (s.repeated() - median_of(std::move(others))) / span;
      const bool standing = standing_.count(rank) != 0;
      if (impact < (standing ? options_.clear_cost : options_.min_cost)) continue;
      Straggler st;
      st.rank = rank;
      st.comm = comm;
      st.collectives = s.n;
      st.late_share = static_cast<double>(s.last) / static_cast<double>(s.n);
      st.median_late_s = median_of(s.margins);
      st.wait_caused_s = s.cost;
      st.impact = impact;
      st.evidence.overlapped = overlaps;
      st.op =
          std::max_element(s.last_ops.begin(), s.last_ops.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
          })->first;
      auto it = best.find(rank);
      if (it == best.end() || it->second.s.impact < st.impact) {
        best[rank] = Candidate{st, std::move(starts[rank]), span};
      }
    }
  }
  for (auto& [rank, rl] : lateness) {
    rl.median_late_s = median_of(all_margins[rank]);
    rl.wait_caused_total_s = wait_total_s_[rank];
    report.ranks.push_back(rl);
  }
  std::map<int, SlowCause> causes;
  for (auto& [rank, c] : best) {
    Straggler& st = c.s;
    const auto node = node_of_.find(rank);
    st.node = node != node_of_.end() ? node->second : -1;
    const auto name = comm_names_.find(st.comm);
    if (name != comm_names_.end()) st.comm_name = name->second;
    const auto before = standing_.find(rank);
    find_cause(&st, st.comm, c.starts,
               before != standing_.end() ? before->second : SlowCause::kUnknown);
    if (st.cause == SlowCause::kHost) {
      const double bound = host_cost_bound(&st, now_ns, c.span_s);
      if (bound >= 0 && st.impact > bound) {
        st.impact = bound;
        const bool standing = before != standing_.end();
        if (st.impact < (standing ? options_.clear_cost : options_.min_cost)) continue;
      }
    }
    causes[rank] = st.cause;
    st.summary = straggler_sentence(st);
    report.stragglers.push_back(st);
  }
  standing_ = std::move(causes);
  std::sort(report.stragglers.begin(), report.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.impact > b.impact; });
  report.summary = stragglers_summary(report.stragglers);
  return report;
}

void StragglerAnalyzer::find_cause(Straggler* s, uint64_t comm,
                                   const std::vector<ChainStart>& starts,
                                   SlowCause previous) const {
  SlowEvidence& e = s->evidence;
  const auto w = window_.find(comm);
  if (w == window_.end()) return;
  // Transfers: after the last arrival, over every collective of the window.
  std::vector<double> transfer, peer_transfer;
  std::set<int> peers;
  for (const Judged& j : w->second) {
    const uint64_t last_arrival_ns = j.parts.back().arrival_ns;
    bool member = false;
    for (const Part& q : j.parts) member = member || q.rank == s->rank;
    if (!member) continue;
    for (const Part& q : j.parts) {
      const double t = to_s(static_cast<int64_t>(q.end_ns - last_arrival_ns));
      if (q.rank == s->rank) {
        transfer.push_back(t);
      } else {
        peers.insert(q.rank);
        peer_transfer.push_back(t);
      }
    }
  }
  e.transfer_s = median_of(transfer);
  e.peer_transfer_s = median_of(peer_transfer);
  // Arrival, launch and GPU queue where its chains began, against its peers'
  // medians, weighted by the chain's first margin.
  std::vector<std::pair<double, double>> late, launch_late, queue;
  for (const ChainStart& cs : starts) {
    const Part* me = nullptr;
    std::vector<double> a, l, qd;
    for (const Part& q : cs.at->parts) {
      if (q.rank == s->rank) {
        me = &q;
        continue;
      }
      a.push_back(static_cast<double>(q.arrival_ns));
      l.push_back(static_cast<double>(q.launch_ns));
      qd.push_back(static_cast<double>(q.arrival_ns) - static_cast<double>(q.launch_ns));
    }
    if (me == nullptr || a.empty()) continue;
    late.emplace_back((static_cast<double>(me->arrival_ns) - median_of(a)) / kNsPerS, cs.margin_s);
    launch_late.emplace_back((static_cast<double>(me->launch_ns) - median_of(l)) / kNsPerS,
                             cs.margin_s);
    queue.emplace_back(
        (static_cast<double>(me->arrival_ns) - static_cast<double>(me->launch_ns) - median_of(qd)) /
            kNsPerS,
        cs.margin_s);
  }
  e.chains = static_cast<int>(late.size());
  e.arrival_late_s = weighted_median(std::move(late));
  e.launch_late_s = weighted_median(std::move(launch_late));
  e.queue_excess_s = weighted_median(std::move(queue));

  // GEMMs of the same shapes: its median against its peers' pooled median.
  auto durations = [&](int rank, const GemmShape& shape) {
    std::vector<double> v;
    const auto r = gemms_.find(rank);
    if (r == gemms_.end()) return v;
    const auto sh = r->second.find(shape);
    if (sh == r->second.end()) return v;
    for (const auto& [end, dur] : sh->second) v.push_back(static_cast<double>(dur));
    return v;
  };
  constexpr size_t kMinGemms = 3;
  double log_sum = 0, weight_sum = 0;
  std::vector<double> peer_logs;
  const auto mine = gemms_.find(s->rank);
  if (mine != gemms_.end()) {
    for (const auto& [shape, samples] : mine->second) {
      if (samples.size() < kMinGemms) continue;
      std::vector<double> pool;
      std::map<int, std::vector<double>> per_peer;
      for (int p : peers) {
        std::vector<double> v = durations(p, shape);
        pool.insert(pool.end(), v.begin(), v.end());
        per_peer[p] = std::move(v);
      }
      if (pool.size() < kMinGemms) continue;
      const double peer_med = median_of(pool);
      if (peer_med <= 0) continue;
      const double my_med = median_of(durations(s->rank, shape));
      if (my_med <= 0) continue;
      const double wgt = static_cast<double>(std::min(samples.size(), pool.size()));
      log_sum += wgt * std::log(my_med / peer_med);
      weight_sum += wgt;
      ++e.gemm_shapes;
      for (const auto& [p, v] : per_peer) {
        if (v.size() >= kMinGemms && median_of(v) > 0) {
          peer_logs.push_back(std::log(median_of(v) / peer_med));
        }
      }
    }
  }
  if (weight_sum > 0) e.gemm_ratio = std::exp(log_sum / weight_sum);
  if (!peer_logs.empty()) e.gemm_peer_spread = mad_of(peer_logs, median_of(peer_logs));

  // GC pauses and DataLoader waits over the window.
  auto pause_s = [&](int rank, bool loader) {
    double sum = 0;
    const auto it = pauses_.find(rank);
    if (it == pauses_.end()) return sum;
    for (const Pause& p : it->second) {
      if (p.loader == loader) sum += to_s(static_cast<int64_t>(p.duration_ns));
    }
    return sum;
  };
  e.gc_s = pause_s(s->rank, false);
  e.loader_s = pause_s(s->rank, true);
  std::vector<double> pg, pl;
  for (int p : peers) {
    pg.push_back(pause_s(p, false));
    pl.push_back(pause_s(p, true));
  }
  e.peer_gc_s = median_of(pg);
  e.peer_loader_s = median_of(pl);
  // How often each rank's GPU waited for its host (see host_bound_ns).
  const auto waited = [&](int rank, int* timed, int* bound) {
    *timed = *bound = 0;
    const auto ops = timed_ops_.find(rank);
    if (ops == timed_ops_.end() || ops->second.empty()) return;
    uint64_t floor = UINT64_MAX;
    for (const TimedOp& t : ops->second) floor = std::min(floor, t.queue_ns);
    for (const TimedOp& t : ops->second) {
      ++*timed;
      if (floor <= options_.max_clock_error_ns && t.queue_ns <= floor + options_.host_bound_ns) {
        ++*bound;
      }
    }
  };
  waited(s->rank, &e.timed_ops, &e.host_bound_ops);
  std::vector<double> peer_shares;
  for (int p : peers) {
    int timed = 0, bound = 0;
    waited(p, &timed, &bound);
    if (timed > 0) peer_shares.push_back(static_cast<double>(bound) / timed);
  }
  e.peer_host_bound_share = median_of(peer_shares);

  // The cause: what explains at least half of its lateness where its chains
  // began. A slow link first: a rank whose collectives end late after
  // everyone arrived also starts its next work late, which would look like a
  // late host or a deep queue. Then the host, only when its GPU was seen
  // waiting for it (operations that started as soon as they were launched,
  // min_host_bound_share of them): with launches running ahead
  // of the GPU, a host that launches late while its GPU still has work
  // queued delays nothing. Then its GPU: launched on time, its GPU reached
  // the collective later than its peers' did (busy longer: more work queued,
  // slower, or shared); or the same GEMM shapes ran longer; or it launched
  // late while its GPU hardly ever waited for it: its host was held back by
  // its own GPU (a full launch queue), as a GPU shared with another process
  // holds it back on a real H100, whose kernels then run at full speed in
  // their time slices.
  // The cause the last verdict gave this rank stays while it explains a
  // quarter of the lateness, unless a cause checked before it explains
  // half: with evidence near the bar the verdict keeps one name instead of
  // alternating between two from one analysis to the next.
  const double lateness = e.arrival_late_s;
  const bool gemm_slow = e.gemm_ratio > 0 && e.gemm_shapes > 0 &&
                         std::log(e.gemm_ratio) > std::max(std::log(1.02), 3 * e.gemm_peer_spread);
  const double my_share =
      e.timed_ops > 0 ? static_cast<double>(e.host_bound_ops) / e.timed_ops : 0.0;
  const bool gpu_waited = my_share >= options_.min_host_bound_share;
  const auto explains = [&](SlowCause c, double share) {
    switch (c) {
      case SlowCause::kLink:
        return e.transfer_s - e.peer_transfer_s >= share * lateness;
      case SlowCause::kGpu:
        return gemm_slow || e.queue_excess_s >= share * lateness ||
               (!gpu_waited && e.timed_ops > 0 && e.launch_late_s >= share * lateness);
      case SlowCause::kHost:
        return gpu_waited && e.launch_late_s >= share * lateness;
      default:
        return false;
    }
  };
  constexpr double kNameShare = 0.5, kKeepShare = 0.25;
  s->cause = SlowCause::kUnknown;
  if (lateness <= 0) return;
  for (SlowCause c : {SlowCause::kLink, SlowCause::kHost, SlowCause::kGpu}) {
    if (explains(c, c == previous ? kKeepShare : kNameShare)) {
      s->cause = c;
      return;
    }
  }
}

}  // namespace xpu_timer::supervisor
