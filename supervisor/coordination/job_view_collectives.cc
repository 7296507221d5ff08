// JobView's part of the job-wide collective comparison (job_fingerprints.h):
// moving the fingerprint windows and the mismatches found through the store.
#include <algorithm>
#include <cstdio>
#include <map>

#include "supervisor/analysis/hang_detector.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/log_tee.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {

namespace {
constexpr char kMismatchKeyPrefix[] = "mismatch-";
constexpr size_t kMaxPeerDocsQueued = 64;  // the asio side takes them every poll
}  // namespace

void JobView::offer_fingerprints(NodeFingerprints window, std::set<uint64_t> comms) {
  std::lock_guard<std::mutex> lock(mu_);
  fp_offer_ = std::move(window);
  fp_comms_ = std::move(comms);
}

std::vector<NodeFingerprints> JobView::take_peer_fingerprints() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeFingerprints> out;
  out.swap(fp_peer_docs_);
  return out;
}

void JobView::publish_mismatch(uint64_t comm_hash, uint64_t seq, NodeFingerprints mine) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    fp_pending_.push_back({comm_hash, seq, std::move(mine)});
  }
  wake_.notify_all();
}

std::string JobView::fingerprints_key(int node, double unix_s) const {
  char name[32];
  std::snprintf(name, sizeof(name), "/%013llu", static_cast<unsigned long long>(unix_s * 1000));
  return root_ + "/fingerprints/" + std::to_string(node) + name;
}

bool JobView::note_alarm_keys(const std::vector<KeyValue>& kvs) {
  const std::string alarms = root_ + "/alarms/";
  alarmed_.clear();
  if (job_.node_count <= 0) return false;  // no rank registered here: nothing to judge by
  for (const KeyValue& kv : kvs) {
    const std::string name = kv.key.substr(std::min(kv.key.size(), alarms.size()));
    if (name.rfind(kMismatchKeyPrefix, 0) != 0) {
      // A node's alarm (<node>), from that node's owner only.
      const int node = node_of_key(kv.key, alarms);
      if (name == std::to_string(node) && trusted(kv, node)) alarmed_.insert(node);
      if (name != std::to_string(node)) ignore_key(kv, "not an alarm of a node");
      continue;
    }
    if (!seen_mismatches_.insert(kv.key).second) continue;
    Mismatch m;
    int from = -1;
    std::string why;
    if (!parse_job_mismatch(kv.value, &m, &from, &why)) {
      ignore_key(kv, why);
      continue;
    }
    if (!trusted(kv, from)) continue;
    on_mismatch_(std::move(m), from);
  }
  return !alarmed_.empty();
}

bool JobView::fingerprint_round(int my_node) {
  std::optional<NodeFingerprints> offer;
  std::set<uint64_t> comms;
  std::vector<PendingMismatch> pending;
  std::map<int, std::set<uint64_t>> comms_of_node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offer.swap(fp_offer_);
    comms = fp_comms_;
    pending.swap(fp_pending_);
    for (const NodeProgress& p : others_) {
      std::set<uint64_t>& c = comms_of_node[p.node];
      for (const RankSample& s : p.snapshot.ranks) {
        for (const proto::CommSlot& slot : s.comms) c.insert(slot.comm_hash);
      }
    }
  }
  auto requeue = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    fp_pending_.insert(fp_pending_.begin(), pending.begin(), pending.end());
  };
  auto read_window = [&](const std::string& prefix, std::vector<NodeFingerprints>* out) {
    std::vector<KeyValue> kvs;
    if (!store_->get_prefix(prefix, &kvs, nullptr)) return false;
    for (const KeyValue& kv : kvs) {
      NodeFingerprints f;
      std::string why;
      if (!parse_node_fingerprints(kv.value, &f, &why)) {
        ignore_key(kv, why);
        continue;
      }
      if (f.node == my_node) continue;
      if (node_of_key(kv.key, root_ + "/fingerprints/") != f.node) {
        ignore_key(kv, "it names node " + std::to_string(f.node) + " under another node's key");
      } else if (trusted(kv, f.node)) {
        out->push_back(std::move(f));
      }
    }
    return true;
  };

  if (offer) {
    // What this node issued since its last window (if anything), then its
    // peers' last windows (one node per communicator: the ring of its member
    // nodes). The store keeps a node's last kFingerprintWindowsKept windows:
    // each collective is written once, and is there for a few periods.
    bool any = false;
    for (const CommWindow& c : offer->comms) any = any || !c.runs.empty();
    if (any) {
      const std::string key = fingerprints_key(my_node, unix_now_s());
      if (!store_->put(key, node_fingerprints_text(*offer))) {
        requeue();
        return false;
      }
      fp_keys_put_.push_back(key);
    }
    while (fp_keys_put_.size() > kFingerprintWindowsKept) {
      if (stopping()) return true;
      if (!store_->remove(fp_keys_put_.front())) {
        requeue();
        return false;
      }
      fp_keys_put_.pop_front();
    }
    const std::set<int> peers = fingerprint_peers(my_node, comms, comms_of_node);
    std::vector<NodeFingerprints> docs;
    for (const int peer : peers) {
      if (stopping()) return true;
      if (!read_window(root_ + "/fingerprints/" + std::to_string(peer) + "/", &docs)) {
        requeue();
        return false;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    status_.fingerprint_peers.assign(peers.begin(), peers.end());
    for (NodeFingerprints& d : docs) fp_peer_docs_.push_back(std::move(d));
    while (fp_peer_docs_.size() > kMaxPeerDocsQueued) fp_peer_docs_.erase(fp_peer_docs_.begin());
  }

  // Our published mismatches leave the store once every node had time to
  // read them (each reads the alarms every period): alarm reads stay small.
  while (!mismatches_put_.empty() &&
         unix_now_s() - mismatches_put_.front().first > kMismatchKeepS) {
    if (stopping() || !store_->remove(mismatches_put_.front().second)) {
      requeue();
      return stopping();
    }
    mismatches_put_.erase(mismatches_put_.begin());
  }
  if (pending.empty() || stopping()) {
    requeue();
    return true;
  }
  // A disagreement between two nodes: every node's window, once, for the
  // job-wide groups, published for every node to report.
  std::vector<NodeFingerprints> all;
  if (!read_window(root_ + "/fingerprints/", &all)) {
    requeue();
    return false;
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingMismatch& p = pending[i];
    std::vector<NodeFingerprints> windows = all;
    windows.push_back(p.mine);
    Mismatch m = mismatch_from_windows(p.comm_hash, p.seq, windows);
    if (m.groups.size() < 2) continue;  // cannot happen: the two nodes' windows disagree
    m.detected_at_unix_s = unix_now_s();
    const std::string key = root_ + "/alarms/" + kMismatchKeyPrefix + comm_hex(p.comm_hash) + "-" +
                            std::to_string(p.seq);
    if (!store_->put(key, job_mismatch_text(m, my_node))) {
      pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(i));
      requeue();
      return false;
    }
    mismatches_put_.emplace_back(m.detected_at_unix_s, key);
  }
  return true;
}

}  // namespace xpu_timer::supervisor
