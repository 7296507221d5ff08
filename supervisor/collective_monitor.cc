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

CollectiveMonitor::CollectiveMonitor(JobView* job_view, ReportFn report)
    : job_view_(job_view), report_(std::move(report)) {
  if (job_view_ != nullptr) checker_.set_cross_node_settle(kCrossNodeSettleNs);
}

void CollectiveMonitor::read_rings(const std::vector<RankRecord>& records,
                                   const std::function<Snapshot()>& read_pages) {
  recorder::RingSnapshot snap;
  for (const RankRecord& r : records) {
    if (!r.ring) continue;
    RingCursor& cur = ring_cursors_[r.reg.rank];
    if (cur.pid != r.reg.pid) {  // a new process: its own ring
      cur = RingCursor{};
      cur.pid = r.reg.pid;
    }
    std::string error;
    if (!r.ring->read(&snap, &error, cur.next)) continue;  // truncated: the rank is going away
    const uint64_t now = monotonic_ns();
    if (cur.read_ns != 0 && now > cur.read_ns && snap.head >= cur.head) {
      cur.per_s =
          static_cast<double>(snap.head - cur.head) * 1e9 / static_cast<double>(now - cur.read_ns);
    }
    cur.read_ns = now;
    cur.head = snap.head;
    // Entries are written once, before the records that name them.
    if (snap.sites.size() > cur.sites.size()) cur.sites = std::move(snap.sites);
    cur.capacity = snap.capacity;
    // Positions before the ring's window were overwritten unread.
    const uint64_t window_start = snap.head > snap.capacity ? snap.head - snap.capacity : 0;
    if (cur.next < window_start) {
      cur.lost += window_start - cur.next;
      if (!cur.lost_said) {
        cur.lost_said = true;
        SUP_LOG_WARN(
            "rank %d: %llu flight-recorder records were overwritten before the collective check "
            "read them (its ring holds %u; XPU_TIMER_RECORDER_SIZE): their collectives are not "
            "checked",
            r.reg.rank, static_cast<unsigned long long>(window_start - cur.next), snap.capacity);
      }
    }
    for (const recorder::RecordData& d : snap.records) {
      const int site = recorder::call_site_of(d);
      if (site >= 0 && d.comm_hash != 0) {
        const std::pair<uint64_t, uint64_t> key{d.comm_hash, d.seq};
        if (cur.recent_sites.emplace(key, site).second) cur.recent_order.push_back(key);
        while (cur.recent_order.size() > kRecentSites) {
          cur.recent_sites.erase(cur.recent_order.front());
          cur.recent_order.pop_front();
        }
      }
      checker_.add(r.reg.rank, d);
      if (job_view_ != nullptr) fingerprints_.add(r.reg.rank, d);
    }
    // A position being rewritten as we read it is retried on the next poll
    // (a few times: a record is rewritten only when its state changes).
    if (snap.first_skipped != UINT64_MAX && snap.first_skipped >= cur.next && cur.retries < 3) {
      cur.retries = snap.first_skipped == cur.next ? cur.retries + 1 : 0;
      cur.next = snap.first_skipped;
    } else {
      cur.retries = 0;
      cur.next = snap.head;
    }
  }
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
  const auto it = ring_cursors_.find(rank);
  if (it == ring_cursors_.end() || (pid >= 0 && it->second.pid != pid) || id < 0 ||
      static_cast<size_t>(id) >= it->second.sites.size()) {
    return nullptr;
  }
  return &it->second.sites[static_cast<size_t>(id)];
}

uint64_t CollectiveMonitor::next_read_delay_ns(uint64_t min_ns, uint64_t max_ns) const {
  uint64_t delay = max_ns;
  for (const auto& [rank, cur] : ring_cursors_) {
    if (cur.read_ns == 0) continue;
    if (cur.per_s <= 0) {
      delay = std::min(delay, 4 * min_ns);  // its rate unknown yet
      continue;
    }
    const double quarter_s = static_cast<double>(cur.capacity) / 4 / cur.per_s;
    delay = std::min(delay, static_cast<uint64_t>(quarter_s * 1e9));
  }
  return std::max(delay, min_ns);
}

bool CollectiveMonitor::follows(int rank, pid_t pid) const {
  const auto it = ring_cursors_.find(rank);
  return it != ring_cursors_.end() && it->second.pid == pid && it->second.read_ns != 0;
}

uint64_t CollectiveMonitor::records_lost() const {
  uint64_t n = 0;
  for (const auto& [rank, cur] : ring_cursors_) n += cur.lost;
  return n;
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
    const auto cur = ring_cursors_.find(s.rank);
    if (cur == ring_cursors_.end()) continue;
    const auto site = cur->second.recent_sites.find({op.comm_hash, op.seq});
    if (site == cur->second.recent_sites.end()) continue;
    if (const CodeFrame* f = site_of(s.rank, s.pid, site->second)) s.issued_at = {*f};
  }
}

void CollectiveMonitor::report_once(Mismatch m) {
  // Reported job-wide already (on_job_mismatch), or the other way round?
  if (!reported_.insert({m.comm_hash, m.seq}).second) return;
  report_(std::move(m));
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

nlohmann::json CollectiveMonitor::locate(const Mismatch& m,
                                         const std::map<int, std::vector<CodeFrame>>& places) {
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
