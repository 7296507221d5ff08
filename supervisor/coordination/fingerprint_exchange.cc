#include "supervisor/coordination/fingerprint_exchange.h"

#include <algorithm>
#include <cstdio>

#include "common/clock.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/coordination/node_alarms.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {

namespace {
constexpr size_t kMaxPeerDocsQueued = 64;  // the asio side takes them every poll
}  // namespace

FingerprintExchange::FingerprintExchange(CoordinationStore* store, KeyTrust* trust,
                                         const std::string& root, const std::atomic<bool>* stop,
                                         MismatchHandler on_mismatch)
    : store_(store),
      trust_(trust),
      dir_(root + "/fingerprints/"),
      alarms_(root + "/alarms/"),
      stop_(stop),
      on_mismatch_(on_mismatch ? std::move(on_mismatch) : [](Mismatch, int) {}) {}

void FingerprintExchange::offer(NodeFingerprints window, std::set<uint64_t> comms) {
  std::lock_guard<std::mutex> lock(mu_);
  offer_ = std::move(window);
  comms_ = std::move(comms);
}

std::vector<NodeFingerprints> FingerprintExchange::take_peer_windows() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeFingerprints> out;
  out.swap(peer_windows_);
  return out;
}

void FingerprintExchange::publish_mismatch(uint64_t comm_hash, uint64_t seq,
                                           NodeFingerprints mine) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back({comm_hash, seq, std::move(mine)});
}

bool FingerprintExchange::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !pending_.empty();
}

std::vector<int> FingerprintExchange::peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peers_;
}

std::string FingerprintExchange::window_key(int node, double unix_s) const {
  char name[32];
  std::snprintf(name, sizeof(name), "/%013llu", static_cast<unsigned long long>(unix_s * 1000));
  return dir_ + std::to_string(node) + name;
}

void FingerprintExchange::note_mismatches(const std::vector<KeyValue>& kvs) {
  for (const KeyValue& kv : kvs) {
    if (!seen_mismatches_.insert(kv.key).second) continue;
    Mismatch m;
    int from = -1;
    std::string why;
    if (!parse_job_mismatch(kv.value, &m, &from, &why)) {
      trust_->ignore(kv, why);
      continue;
    }
    if (!trust_->trusted(kv, from)) continue;
    on_mismatch_(std::move(m), from);
  }
}

bool FingerprintExchange::read_windows(const std::string& prefix, int my_node,
                                       std::vector<NodeFingerprints>* out) {
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(prefix, &kvs, nullptr)) return false;
  for (const KeyValue& kv : kvs) {
    NodeFingerprints f;
    std::string why;
    if (!parse_node_fingerprints(kv.value, &f, &why)) {
      trust_->ignore(kv, why);
      continue;
    }
    if (f.node == my_node) continue;
    if (node_of_key(kv.key, dir_) != f.node) {
      trust_->ignore(kv, "it names node " + std::to_string(f.node) + " under another node's key");
    } else if (trust_->trusted(kv, f.node)) {
      out->push_back(std::move(f));
    }
  }
  return true;
}

void FingerprintExchange::requeue(const std::vector<PendingMismatch>& pending) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.insert(pending_.begin(), pending.begin(), pending.end());
}

bool FingerprintExchange::round(int my_node, const std::vector<NodeProgress>& others) {
  std::optional<NodeFingerprints> offer;
  std::set<uint64_t> comms;
  std::vector<PendingMismatch> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offer.swap(offer_);
    comms = comms_;
    pending.swap(pending_);
  }
  std::map<int, std::set<uint64_t>> comms_of_node;
  for (const NodeProgress& p : others) {
    std::set<uint64_t>& c = comms_of_node[p.node];
    for (const RankSample& s : p.snapshot.ranks) {
      for (const proto::CommSlot& slot : s.comms) c.insert(slot.comm_hash);
    }
  }

  if (offer) {
    // What this node issued since its last window (if anything), then its
    // peers' last windows (one node per communicator: the ring of its member
    // nodes). The store keeps a node's last kWindowsKept windows: each
    // collective is written once, and is there for a few periods.
    bool any = false;
    for (const CommWindow& c : offer->comms) any = any || !c.runs.empty();
    if (any) {
      const std::string key = window_key(my_node, unix_now_s());
      if (!store_->put(key, node_fingerprints_text(*offer))) {
        requeue(pending);
        return false;
      }
      keys_put_.push_back(key);
    }
    while (keys_put_.size() > kWindowsKept) {
      if (stopping()) return true;
      if (!store_->remove(keys_put_.front())) {
        requeue(pending);
        return false;
      }
      keys_put_.pop_front();
    }
    const std::set<int> peers = fingerprint_peers(my_node, comms, comms_of_node);
    std::vector<NodeFingerprints> docs;
    for (const int peer : peers) {
      if (stopping()) return true;
      if (!read_windows(dir_ + std::to_string(peer) + "/", my_node, &docs)) {
        requeue(pending);
        return false;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    peers_.assign(peers.begin(), peers.end());
    for (NodeFingerprints& d : docs) peer_windows_.push_back(std::move(d));
    while (peer_windows_.size() > kMaxPeerDocsQueued) peer_windows_.erase(peer_windows_.begin());
  }

  // Our published mismatches leave the store once every node had time to
  // read them (each reads the alarms every period): alarm reads stay small.
  while (!mismatches_put_.empty() &&
         unix_now_s() - mismatches_put_.front().first > kMismatchKeepS) {
    if (stopping() || !store_->remove(mismatches_put_.front().second)) {
      requeue(pending);
      return stopping();
    }
    mismatches_put_.erase(mismatches_put_.begin());
  }
  if (pending.empty() || stopping()) {
    requeue(pending);
    return true;
  }
  // A disagreement between two nodes: every node's window, once, for the
  // job-wide groups, published for every node to report.
  std::vector<NodeFingerprints> all;
  if (!read_windows(dir_, my_node, &all)) {
    requeue(pending);
    return false;
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingMismatch& p = pending[i];
    std::vector<NodeFingerprints> windows = all;
    windows.push_back(p.mine);
    Mismatch m = mismatch_from_windows(p.comm_hash, p.seq, windows);
    if (m.groups.size() < 2) continue;  // cannot happen: the two nodes' windows disagree
    m.detected_at_unix_s = unix_now_s();
    const std::string key = alarms_ + NodeAlarms::kMismatchKeyPrefix + comm_hex(p.comm_hash) + "-" +
                            std::to_string(p.seq);
    if (!store_->put(key, job_mismatch_text(m, my_node))) {
      pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(i));
      requeue(pending);
      return false;
    }
    mismatches_put_.emplace_back(m.detected_at_unix_s, key);
  }
  return true;
}

}  // namespace xpu_timer::supervisor
