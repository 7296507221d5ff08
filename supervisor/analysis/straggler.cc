#include "supervisor/analysis/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "common/comm_names.h"
#include "common/protocol.h"

namespace xpu_timer::supervisor {
namespace {

constexpr double kNsPerS = 1e9;
// MAD to standard deviation for a normal distribution, and the standard error
// of a median over that of a mean (sqrt(pi/2)).
constexpr double kMadToSigma = 1.4826;
constexpr double kMedianSe = 1.2533;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 != 0) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) / 2;
}

double mad_of(const std::vector<double>& v, double center) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - center));
  return median_of(std::move(dev));
}

double to_s(int64_t ns) { return static_cast<double>(ns) / kNsPerS; }

std::string ms_text(double s) {
  char buf[32];
  const double ms = s * 1e3;
  std::snprintf(buf, sizeof buf, ms >= 10 ? "%.0f ms" : "%.1f ms", ms);
  return buf;
}

}  // namespace

bool GemmShape::operator<(const GemmShape& o) const {
  return std::tie(name, dtype, m, n, k, batch) < std::tie(o.name, o.dtype, o.m, o.n, o.k, o.batch);
}

const char* slow_cause_name(SlowCause c) {
  switch (c) {
    case SlowCause::kGpu: return "gpu";
    case SlowCause::kHost: return "host";
    case SlowCause::kLink: return "link";
    case SlowCause::kUnknown: break;
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

void StragglerAnalyzer::judge(uint64_t comm, Pending&& p) {
  if (p.parts.size() < 2) return;
  std::sort(p.parts.begin(), p.parts.end(),
            [](const Part& a, const Part& b) { return a.arrival_ns < b.arrival_ns; });
  Judged j{0, p.name, std::move(p.parts)};
  for (const Part& q : j.parts) j.end_ns = std::max(j.end_ns, q.end_ns);
  const Part& last = j.parts.back();
  double wait = 0;
  for (const Part& q : j.parts) wait += to_s(static_cast<int64_t>(last.arrival_ns - q.arrival_ns));
  wait_total_s_[last.rank] += wait;
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
}

namespace {

// Per rank over one communicator's window.
struct CommStats {
  size_t n = 0;
  size_t last = 0;
  double expected_last = 0;  // sum of 1/members
  double var_last = 0;       // sum of p(1-p)
  std::vector<double> margins;  // when last: over the next latest
  std::vector<double> offsets;  // arrival - the collective's median arrival
  double wait_caused = 0;
  double peers_time = 0;  // sum over its collectives of (members - 1) x interval
  std::map<uint16_t, size_t> last_ops;
};

double median_arrival(const std::vector<double>& sorted_arrivals) {
  const size_t n = sorted_arrivals.size();
  return n % 2 != 0 ? sorted_arrivals[n / 2]
                    : (sorted_arrivals[n / 2 - 1] + sorted_arrivals[n / 2]) / 2;
}

}  // namespace

SlowReport StragglerAnalyzer::analyze(uint64_t now_ns) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now_ns - std::min(now_ns, it->second.first_ns) < options_.settle_ns) {
      ++it;
      continue;
    }
    const auto m = members_.find(it->first.first);
    const bool complete = m == members_.end() || it->second.parts.size() >= m->second.size();
    if (complete) judge(it->first.first, std::move(it->second));
    it = pending_.erase(it);
  }
  expire(now_ns);

  SlowReport report;
  report.window_s = options_.window_s;
  report.collectives_judged = judged_;
  std::map<int, Straggler> best;  // per rank: the communicator it costs most on
  std::map<int, RankLateness> lateness;
  std::map<int, std::vector<double>> all_margins;
  for (const auto& [comm, d] : window_) {
    std::map<int, CommStats> stats;
    std::vector<double> pooled;  // every rank's offsets, for the spread of arrivals
    uint64_t prev_end = 0;
    for (const Judged& j : d) {
      // A collective's interval: since the previous one of this communicator
      // ended (the first one of the window counts nothing).
      const double interval = prev_end != 0 && j.end_ns > prev_end ? to_s(j.end_ns - prev_end) : 0;
      prev_end = j.end_ns;
      std::vector<double> arrivals;
      arrivals.reserve(j.parts.size());
      for (const Part& q : j.parts) arrivals.push_back(static_cast<double>(q.arrival_ns));
      const double med = median_arrival(arrivals);
      const size_t n = j.parts.size();
      const double p = 1.0 / static_cast<double>(n);
      const Part& last = j.parts.back();
      for (const Part& q : j.parts) {
        CommStats& s = stats[q.rank];
        ++s.n;
        s.expected_last += p;
        s.var_last += p * (1 - p);
        const double off = (static_cast<double>(q.arrival_ns) - med) / kNsPerS;
        s.offsets.push_back(off);
        pooled.push_back(off);
        s.peers_time += static_cast<double>(n - 1) * interval;
      }
      CommStats& ls = stats[last.rank];
      ++ls.last;
      ++ls.last_ops[j.name];
      ls.margins.push_back(to_s(last.arrival_ns - j.parts[n - 2].arrival_ns));
      for (const Part& q : j.parts) ls.wait_caused += to_s(last.arrival_ns - q.arrival_ns);
    }
    std::map<int, std::vector<double>> in_collective;
    for (const Judged& j : d) {
      for (const Part& q : j.parts) in_collective[q.rank].push_back(to_s(q.end_ns - q.arrival_ns));
    }
    for (auto& [rank, v] : in_collective) {
      report.time_in_collective[comm][rank] = {v.size(), median_of(std::move(v))};
    }
    const double pooled_median = median_of(pooled);
    const double sigma = kMadToSigma * mad_of(pooled, pooled_median);
    for (auto& [rank, s] : stats) {
      RankLateness& rl = lateness[rank];
      rl.rank = rank;
      rl.collectives += s.n;
      rl.last += s.last;
      rl.wait_caused_s += s.wait_caused;
      auto& m = all_margins[rank];
      m.insert(m.end(), s.margins.begin(), s.margins.end());
      if (s.n < options_.min_collectives || s.var_last <= 0 || s.peers_time <= 0) continue;
      const bool standing = standing_.count(rank) != 0;
      const double z_bar = standing ? options_.z_clear : options_.z;
      const double impact_bar = standing ? options_.min_impact / 2 : options_.min_impact;
      const double z = (static_cast<double>(s.last) - s.expected_last) / std::sqrt(s.var_last);
      const double offset = median_of(s.offsets) - pooled_median;
      const double se = kMedianSe * sigma / std::sqrt(static_cast<double>(s.n));
      const double impact = s.wait_caused / s.peers_time;
      if (z < z_bar || offset <= z_bar * se || impact < impact_bar) continue;
      Straggler st;
      st.rank = rank;
      st.comm = comm;
      st.collectives = s.n;
      st.late_share = static_cast<double>(s.last) / static_cast<double>(s.n);
      st.median_late_s = median_of(s.margins);
      st.wait_caused_s = s.wait_caused;
      st.impact = impact;
      st.z = z;
      st.op = std::max_element(s.last_ops.begin(), s.last_ops.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; })
                  ->first;
      auto it = best.find(rank);
      if (it == best.end() || it->second.wait_caused_s < st.wait_caused_s) best[rank] = st;
    }
  }
  for (auto& [rank, rl] : lateness) {
    rl.median_late_s = median_of(all_margins[rank]);
    rl.wait_caused_total_s = wait_total_s_[rank];
    report.ranks.push_back(rl);
  }
  std::map<int, SlowCause> causes;
  for (auto& [rank, st] : best) {
    const auto node = node_of_.find(rank);
    st.node = node != node_of_.end() ? node->second : -1;
    const auto name = comm_names_.find(st.comm);
    if (name != comm_names_.end()) st.comm_name = name->second;
    const auto before = standing_.find(rank);
    find_cause(&st, st.comm, before != standing_.end() ? before->second : SlowCause::kUnknown);
    causes[rank] = st.cause;
    st.summary = straggler_sentence(st);
    report.stragglers.push_back(st);
  }
  standing_ = std::move(causes);
  std::sort(report.stragglers.begin(), report.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.wait_caused_s > b.wait_caused_s; });
  report.summary = stragglers_summary(report.stragglers);
  return report;
}

void StragglerAnalyzer::find_cause(Straggler* s, uint64_t comm, SlowCause previous) const {
  SlowEvidence& e = s->evidence;
  const auto w = window_.find(comm);
  if (w == window_.end()) return;
  std::vector<double> late, launch_late, queue, transfer, peer_transfer;
  std::set<int> peers;
  for (const Judged& j : w->second) {
    const Part* me = nullptr;
    for (const Part& q : j.parts) {
      if (q.rank == s->rank) me = &q;
    }
    if (me == nullptr) continue;
    const uint64_t last_arrival = j.parts.back().arrival_ns;
    std::vector<double> a, l, qd;
    for (const Part& q : j.parts) {
      if (q.rank == s->rank) {
        transfer.push_back(to_s(static_cast<int64_t>(q.end_ns - last_arrival)));
        continue;
      }
      peers.insert(q.rank);
      peer_transfer.push_back(to_s(static_cast<int64_t>(q.end_ns - last_arrival)));
      a.push_back(static_cast<double>(q.arrival_ns));
      l.push_back(static_cast<double>(q.launch_ns));
      qd.push_back(static_cast<double>(q.arrival_ns) - static_cast<double>(q.launch_ns));
    }
    if (j.parts.back().rank != s->rank) continue;
    late.push_back((static_cast<double>(me->arrival_ns) - median_of(a)) / kNsPerS);
    launch_late.push_back((static_cast<double>(me->launch_ns) - median_of(l)) / kNsPerS);
    queue.push_back((static_cast<double>(me->arrival_ns) - static_cast<double>(me->launch_ns) -
                     median_of(qd)) /
                    kNsPerS);
  }
  e.arrival_late_s = median_of(late);
  e.launch_late_s = median_of(launch_late);
  e.queue_excess_s = median_of(queue);
  e.transfer_s = median_of(transfer);
  e.peer_transfer_s = median_of(peer_transfer);

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
      const double w = static_cast<double>(std::min(samples.size(), pool.size()));
      log_sum += w * std::log(my_med / peer_med);
      weight_sum += w;
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

  // The cause: what explains at least half of its lateness. A slow link
  // first: a rank whose collectives end late after everyone arrived also
  // starts its next work late, which would look like a late host.
  // The cause the last verdict gave this rank stays while it explains a
  // quarter of the lateness, unless a cause checked before it explains
  // half: with evidence near the bar (a GPU shared by two ranks makes both
  // its collectives and its arrival slow) the verdict keeps one name
  // instead of alternating between two from one analysis to the next.
  const double lateness = e.arrival_late_s;
  const bool gemm_slow = e.gemm_ratio > 0 && e.gemm_shapes > 0 &&
                         std::log(e.gemm_ratio) > std::max(std::log(1.02), 3 * e.gemm_peer_spread);
  const auto explains = [&](SlowCause c, double share) {
    switch (c) {
      case SlowCause::kLink:
        return e.transfer_s - e.peer_transfer_s >= share * lateness;
      case SlowCause::kHost:
        return e.launch_late_s >= share * lateness;
      case SlowCause::kGpu:
        return gemm_slow || e.queue_excess_s >= share * lateness;
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

std::string stragglers_summary(const std::vector<Straggler>& stragglers) {
  if (stragglers.empty()) return "no straggler";
  std::string out = stragglers.front().summary;
  if (stragglers.size() > 1) out += "; and " + std::to_string(stragglers.size() - 1) + " more";
  return out;
}

std::string straggler_sentence(const Straggler& s) {
  char buf[512];
  std::string who = "rank " + std::to_string(s.rank);
  if (s.node >= 0) who += " on node " + std::to_string(s.node);
  std::snprintf(buf, sizeof buf, "%s arrived last at %.0f%% of %ss on %s, %s late (median)",
                who.c_str(), s.late_share * 100, op_name_str(static_cast<proto::OpName>(s.op)),
                comm_phrase(s.comm, s.comm_name).c_str(), ms_text(s.median_late_s).c_str());
  std::string out = buf;
  const SlowEvidence& e = s.evidence;
  switch (s.cause) {
    case SlowCause::kLink:
      std::snprintf(buf, sizeof buf,
                    "; its collectives ran %s after every rank had arrived, its peers' %s: slow link",
                    ms_text(e.transfer_s).c_str(), ms_text(e.peer_transfer_s).c_str());
      break;
    case SlowCause::kHost: {
      std::snprintf(buf, sizeof buf, "; it launched them %s after its peers",
                    ms_text(e.launch_late_s).c_str());
      std::string host = buf;
      if (e.loader_s > e.peer_loader_s || e.gc_s > e.peer_gc_s) {
        std::snprintf(buf, sizeof buf,
                      " (in the window DataLoader waits %.2f s, GC pauses %.2f s; peers %.2f s, "
                      "%.2f s)",
                      e.loader_s, e.gc_s, e.peer_loader_s, e.peer_gc_s);
        host += buf;
      }
      std::snprintf(buf, sizeof buf, "%s: busy host", host.c_str());
      break;
    }
    case SlowCause::kGpu:
      if (e.gemm_shapes > 0 && e.gemm_ratio > 1) {
        std::snprintf(buf, sizeof buf,
                      "; its GEMMs ran %.0f%% slower than its peers' on the same shapes: slow GPU",
                      (e.gemm_ratio - 1) * 100);
      } else {
        std::snprintf(buf, sizeof buf,
                      "; launched on time, its GPU reached them %s after its peers': slow GPU",
                      ms_text(e.queue_excess_s).c_str());
      }
      break;
    case SlowCause::kUnknown:
      std::snprintf(buf, sizeof buf, "; cause unknown");
      break;
  }
  return out + buf;
}

}  // namespace xpu_timer::supervisor
