#include "supervisor/slow_rank_monitor.h"

#include <time.h>

#include <algorithm>

#include "common/clock.h"
#include "common/status_page_layout.h"
#include "supervisor/analysis/slow_summary.h"
#include "supervisor/analysis/straggler_feed.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

SlowRankMonitor::SlowRankMonitor(StragglerOptions options, JobView* job_view)
    : job_view_(job_view), analyzer_(options) {
  auto first = std::make_shared<SlowReport>();
  first->window_s = options.window_s;
  published_ = std::move(first);
}

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

void SlowRankMonitor::on_ring_read(const RingRead& read) {
  if (read.final->empty()) return;
  const double cpu_start = thread_cpu_s();
  for (const recorder::RecordData& d : *read.final) {
    feed_straggler_record(&analyzer_, read.rank, d, read.now_ns);
  }
  cpu_s_ += thread_cpu_s() - cpu_start;
}

void SlowRankMonitor::poll(const Snapshot& snap, int node, int world_size) {
  const double cpu_start = thread_cpu_s();
  for (const RankSample& r : snap.ranks) {
    if (!r.registered) continue;
    for (const proto::CommSlot& c : r.comms) {
      if (c.comm_hash == 0) continue;
      analyzer_.note_member(c.comm_hash, r.rank, r.node);
      analyzer_.note_comm_name(c.comm_hash, c.name);
    }
  }
  cpu_s_ += thread_cpu_s() - cpu_start;
  if (snap.now_ns - std::min(snap.now_ns, analyzed_ns_) < kAnalysisPeriodNs) return;
  analyzed_ns_ = snap.now_ns;
  const double analysis_start = thread_cpu_s();
  SlowReport mine = analyzer_.analyze(snap.now_ns);
  auto report = std::make_shared<SlowReport>(job_view_ != nullptr && node >= 0
                                                 ? job_wide(mine, node, world_size, snap.now_ns)
                                                 : std::move(mine));
  announce(*report);
  cpu_s_ += thread_cpu_s() - analysis_start;
  report->analysis_cpu_s = cpu_s_;
  std::lock_guard<std::mutex> lock(mutex_);
  published_ = std::move(report);
}

SlowReport SlowRankMonitor::job_wide(const SlowReport& mine, int node, int world_size,
                                     uint64_t now_ns) {
  const double now_s = unix_now_s();
  std::vector<NodeSlowSummary> nodes = {node_slow_summary(mine, node, now_s)};
  if (now_ns - std::min(now_ns, offered_ns_) >= kSummaryPeriodNs) {
    offered_ns_ = now_ns;
    job_view_->offer_slow_summary(slow_summary_text(nodes.front()));
  }
  for (const auto& [from, text] : job_view_->slow_summaries()) {
    if (from == node) continue;  // ours is fresher in memory
    NodeSlowSummary s;
    std::string error;
    if (!parse_slow_summary(text, world_size, &s, &error) || s.node != from) {
      if (error.empty()) error = "it names node " + std::to_string(s.node);
      if (refused_.insert(std::to_string(from) + ": " + error).second) {
        SUP_LOG_WARN("slow-rank summary of node %d refused: %s", from, error.c_str());
      }
      continue;
    }
    // A summary from a supervisor gone (or from a clock far ahead) is not news.
    if (s.unix_s < now_s - kSlowSummaryMaxAgeS || s.unix_s > now_s + kSlowSummaryMaxAgeS) continue;
    nodes.push_back(std::move(s));
  }
  return merge_slow_reports(mine, nodes);
}

void SlowRankMonitor::announce(const SlowReport& report) {
  std::map<int, Straggler> now;
  for (const Straggler& s : report.stragglers) {
    now[s.rank] = s;
    const auto it = announced_.find(s.rank);
    // Once when it appears, and again when its cause changes.
    if (it == announced_.end() || it->second.cause != s.cause) {
      SUP_LOG_WARN("straggler: %s", s.summary.c_str());
    }
  }
  for (const auto& [rank, s] : announced_) {
    if (now.count(rank) != 0) continue;
    std::string who = "rank " + std::to_string(rank);
    if (s.node >= 0) who += " on node " + std::to_string(s.node);
    SUP_LOG_INFO("straggler cleared: %s no longer holds its peers up (it was %s: %s)", who.c_str(),
                 slow_cause_name(s.cause), s.summary.c_str());
  }
  announced_ = std::move(now);
}

std::shared_ptr<const SlowReport> SlowRankMonitor::published() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

}  // namespace xpu_timer::supervisor
