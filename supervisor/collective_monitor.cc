#include "supervisor/collective_monitor.h"

#include <algorithm>

#include "common/clock.h"
#include "common/comm_names.h"
#include "common/hang_document.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/log_tee.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {
namespace {

// How often a node of several offers its collectives' fingerprints and
// compares its peers' (job_fingerprints.h): at most 2048 numbers per
// communicator in each, so up to ~400 collectives a second per communicator
// are all compared. A disagreement waits for it on this node three periods
// and two seconds (then it is reported with this node's members only).
constexpr uint64_t kFingerprintPeriodNs = 5ull * 1000 * 1000 * 1000;
constexpr uint64_t kCrossNodeSettleNs = 3 * kFingerprintPeriodNs + 2ull * 1000 * 1000 * 1000;

}  // namespace

CollectiveMonitor::CollectiveMonitor(JobView* job_view) : job_view_(job_view) {
  if (job_view_ != nullptr) checker_.set_cross_node_settle(kCrossNodeSettleNs);
}

void CollectiveMonitor::on_ring_read(const RingRead& read) {
  RankSites& rs = sites_[read.rank];
  if (rs.pid != read.pid) {  // a new process: its own ring
    rs = RankSites{};
    rs.pid = read.pid;
  }
  // Entries are written once, before the records that name them.
  if (read.ring->sites.size() > rs.sites.size()) rs.sites = read.ring->sites;
  for (const recorder::RecordData& d : *read.fresh) {
    const int site = recorder::call_site_of(d);
    if (site >= 0 && d.comm_hash != 0) {
      const std::pair<uint64_t, uint64_t> key{d.comm_hash, d.seq};
      if (rs.recent_sites.emplace(key, site).second) rs.recent_order.push_back(key);
      while (rs.recent_order.size() > kRecentSites) {
        rs.recent_sites.erase(rs.recent_order.front());
        rs.recent_order.pop_front();
      }
    }
    checker_.add(read.rank, d);
    if (job_view_ != nullptr) fingerprints_.add(read.rank, d);
  }
}

void CollectiveMonitor::check(const std::function<Snapshot()>& read_pages) {
  std::vector<Mismatch> found = checker_.check(monotonic_ns(), unix_now_s());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.collectives_checked = checker_.compared();
  }
  // Names known from earlier polls miss a communicator created since: read
  // the pages now (after its records), only when a mismatch has no name.
  bool unnamed = false;
  for (const Mismatch& m : found) unnamed = unnamed || m.comm_name.empty();
  if (unnamed) {
    checker_.note_comm_names(read_pages());
    for (Mismatch& m : found) {
      if (!m.comm_name.empty()) continue;
      m.comm_name = checker_.comm_name(m.comm_hash);
      if (!m.comm_name.empty()) m.summary = mismatch_sentence(m);
    }
  }
  for (Mismatch& m : found) {
    for (const auto& [rank, id] : m.site_ids) {
      if (const CodeFrame* f = site_of(rank, -1, id)) m.issued_at[rank] = *f;
    }
    report_once(std::move(m));
  }
}

const CodeFrame* CollectiveMonitor::site_of(int rank, pid_t pid, int id) const {
  const auto it = sites_.find(rank);
  if (it == sites_.end() || (pid >= 0 && it->second.pid != pid) || id < 0 ||
      static_cast<size_t>(id) >= it->second.sites.size()) {
    return nullptr;
  }
  return &it->second.sites[static_cast<size_t>(id)];
}

void CollectiveMonitor::note_snapshot(const Snapshot& snap, int node) {
  checker_.note_comm_names(snap);  // for the mismatches of the next polls
  if (job_view_ == nullptr) return;
  fingerprints_.note_members(snap);
  checker_.note_cross_node(fingerprints_.comms());
  exchange_fingerprints(node);
}

void CollectiveMonitor::annotate_issued(Snapshot* snap) const {
  for (RankSample& s : snap->ranks) {
    const proto::OpRef& op = s.oldest_inflight;
    if (s.inflight_count == 0 || op.kind != static_cast<uint8_t>(proto::OpKind::kNccl)) continue;
    const auto cur = sites_.find(s.rank);
    if (cur == sites_.end()) continue;
    const auto site = cur->second.recent_sites.find({op.comm_hash, op.seq});
    if (site == cur->second.recent_sites.end()) continue;
    if (const CodeFrame* f = site_of(s.rank, s.pid, site->second)) s.issued_at = {*f};
  }
}

void CollectiveMonitor::report_once(Mismatch m) {
  // Reported job-wide already (on_job_mismatch), or the other way round?
  if (!reported_.insert({m.comm_hash, m.seq}).second) return;
  reported_since_.push_back(std::move(m));
}

std::vector<Mismatch> CollectiveMonitor::take_reported() {
  std::vector<Mismatch> out;
  out.swap(reported_since_);
  return out;
}

void CollectiveMonitor::exchange_fingerprints(int node) {
  if (node < 0) return;
  const uint64_t now = monotonic_ns();
  if (now - std::min(now, fingerprints_offered_ns_) >= kFingerprintPeriodNs) {
    fingerprints_offered_ns_ = now;
    // What is new since the last offer: the store keeps the last few
    // (job_view.h), so each collective is written once.
    NodeFingerprints fresh = fingerprints_.window(node, fingerprints_published_);
    for (const auto& [comm, seq] : fresh.last_seqs()) fingerprints_published_[comm] = seq;
    job_view_->offer_fingerprints(std::move(fresh), fingerprints_.comms());
  }
  const std::vector<NodeFingerprints> peers = job_view_->take_peer_fingerprints();
  if (peers.empty()) return;  // nothing compared: GET /hang's state stands
  for (const NodeFingerprints& peer : peers) {
    for (const Disagreement& d : compare_windows(fingerprints_, peer, job_reported_after_,
                                                 &job_unaligned_, &job_compared_through_)) {
      uint64_t& after = job_reported_after_[d.comm_hash];
      after = std::max(after, d.seq);
      SUP_LOG_INFO(
          "collective #%llu on comm %s: node %d's ranks and node %d's disagree; "
          "asking every node for its fingerprints",
          static_cast<unsigned long long>(d.seq), comm_hex(d.comm_hash).c_str(), node, peer.node);
      // The job-wide groups need every node's window: the view's thread reads
      // them and publishes the mismatch for every node (on_job_mismatch).
      job_view_->publish_mismatch(d.comm_hash, d.seq, fingerprints_.window(node));
    }
  }
  nlohmann::json through = nlohmann::json::object();
  for (const auto& [comm, seq] : job_compared_through_) through[comm_hex(comm)] = seq;
  nlohmann::json unaligned = nlohmann::json::array();
  for (const uint64_t comm : job_unaligned_) unaligned.push_back(comm_hex(comm));
  std::lock_guard<std::mutex> lock(mutex_);
  status_.compared_through = std::move(through);
  status_.unaligned = std::move(unaligned);
}

void CollectiveMonitor::on_job_mismatch(Mismatch m, int from_node) {
  uint64_t& after = job_reported_after_[m.comm_hash];
  after = std::max(after, m.seq);
  checker_.mark_reported(m.comm_hash, m.seq);
  if (reported_.count({m.comm_hash, m.seq}) != 0) return;  // reported here
  m.comm_name = checker_.comm_name(m.comm_hash);
  m.detected_ns = monotonic_ns();
  m.summary = mismatch_sentence(m);
  SUP_LOG_INFO("node %d found a collective mismatch across the job's nodes", from_node);
  report_once(std::move(m));
}

nlohmann::json CollectiveMonitor::remember(const Mismatch& m, nlohmann::json entry) {
  nlohmann::json all = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mutex_);
  ++status_.mismatch_total;
  const std::vector<int>& blamed = m.odd_ranks.empty() ? m.ranks : m.odd_ranks;
  status_.mismatched_ranks.insert(blamed.begin(), blamed.end());
  entries_.push_back(std::move(entry));
  if (entries_.size() > kMaxMismatchesKept) entries_.erase(entries_.begin());
  for (const nlohmann::json& x : entries_) all.push_back(x);
  return all;
}

nlohmann::json CollectiveMonitor::locate(const Mismatch& m, const RankPlaces& places) {
  const std::string comm = comm_hex(m.comm_hash);
  nlohmann::json all = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mutex_);
  for (nlohmann::json& x : entries_) {
    if (x.value("comm", "") != comm || x.value("seq", uint64_t{0}) != m.seq) continue;
    nlohmann::json& where = x["where"];
    for (const auto& [rank, frames] : places) {
      where[std::to_string(rank)] = hang_document::where_json(frames);
    }
  }
  for (const auto& [rank, frames] : places) status_.odd_places[rank] = frames;
  for (const nlohmann::json& x : entries_) all.push_back(x);
  return all;
}

CollectiveStatus CollectiveMonitor::published() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CollectiveStatus out = status_;
  out.mismatches = nlohmann::json::array();
  for (const nlohmann::json& x : entries_) out.mismatches.push_back(x);
  return out;
}

}  // namespace xpu_timer::supervisor
