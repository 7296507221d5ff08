#include "supervisor/coordination/job_view.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/parse_number.h"
#include "supervisor/log_tee.h"
#include "supervisor/ranks/rank_sampler.h"

namespace xpu_timer::supervisor {

JobView::JobView(std::unique_ptr<CoordinationStore> store, std::string url, std::string job_id,
                 int publish_ms, RequestHandler on_request, MismatchHandler on_mismatch)
    : store_(std::move(store)),
      url_(std::move(url)),
      job_id_(std::move(job_id)),
      root_("/xpu_timer/" + job_id_),
      publish_ms_(publish_ms),
      on_request_(std::move(on_request)),
      on_mismatch_(on_mismatch ? std::move(on_mismatch) : [](Mismatch, int) {}) {
  status_.url = url_;
  status_.job_id = job_id_;
  thread_ = std::thread([this] { run(); });
}

JobView::~JobView() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void JobView::offer(const Snapshot& local, int node, int world_size, const std::string& host,
                    bool alarm, int local_world_size) {
  if (node < 0) return;
  NodeProgress p;
  p.node = node;
  p.host = host;
  p.world_size = world_size;
  p.snapshot = local;
  std::lock_guard<std::mutex> lock(mu_);
  mine_ = std::move(p);
  mine_alarm_ = alarm;
  local_world_size_ = local_world_size;
}

Snapshot JobView::merge(const Snapshot& local, double timeout_s) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!status_.connected || !mine_) return local;
  const double fresh_s = std::max(kFreshS, timeout_s * kFreshFraction);
  std::vector<NodeProgress> fresh;
  for (const auto& [node, p] : last_known_) {
    const double age_s = local.now_unix_s - p.snapshot.now_unix_s;
    if (age_s <= fresh_s) {
      fresh.push_back(p);
    } else if (status_.alarm) {
      // Its news is late (a busy node or store) or its supervisor is gone
      // (its stamp expired with its lease). Dropping its ranks would make
      // them "never registered", and the verdict flap with each late
      // stamp; keeping its operations would judge the job on old news. Its
      // ranks stay, without news: nothing in flight, no communicators, the
      // heartbeats as last heard (unresponsive once older than the detector
      // allows).
      NodeProgress blind = p;
      const auto age_ns = static_cast<uint64_t>(std::min(age_s, 1e9) * 1e9);
      for (RankSample& r : blind.snapshot.ranks) {
        r.page_ok = false;
        r.inflight_count = 0;
        r.oldest_inflight = proto::OpRef{};
        r.comms.clear();
        for (uint64_t* t : {&r.heartbeat_ns, &r.registered_ns}) {
          if (*t != 0) *t = *t > age_ns ? *t - age_ns : 1;
        }
      }
      fresh.push_back(std::move(blind));
    }
  }
  if (fresh.empty()) return local;
  return merge_job_snapshot(local, mine_->node, fresh, mine_->world_size);
}

void JobView::request_dumps(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(reason);
  }
  wake_.notify_all();
}

JobViewStatus JobView::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void JobView::run() {
  bool was_connected = true;  // the first failure is news
  bool ever_connected = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    const bool ok = round();
    lock.lock();
    ++status_.rounds;
    status_.connected = ok;
    if (!ok) {
      ++status_.failures;
      status_.last_error = store_->error();
      if (was_connected) {
        SUP_LOG_WARN("coordinator %s: %s; deciding over this node's ranks alone until it answers",
                     url_.c_str(), status_.last_error.c_str());
      }
    } else if (!was_connected || !ever_connected) {
      SUP_LOG_INFO("coordinator %s: job '%s' shared with %zu other node(s)", url_.c_str(),
                   job_id_.c_str(), status_.nodes.size());
      ever_connected = true;
    }
    was_connected = ok;
    // A dump request is sent at once, unless the store just failed: a
    // refused connection fails at once, and a pending request must not turn
    // the retries into a busy loop.
    wake_.wait_for(lock, std::chrono::milliseconds(publish_ms_), [this, ok] {
      return stop_ || (ok && (!requests_.empty() || !fp_pending_.empty()));
    });
  }
}

void JobView::ignore_key(const KeyValue& kv, const std::string& why) {
  if (bad_keys_.insert(kv.key).second) {
    SUP_LOG_WARN("coordinator %s: ignoring %s: %s", url_.c_str(), kv.key.c_str(), why.c_str());
  }
}

bool JobView::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool JobView::round() {
  std::optional<NodeProgress> mine;
  bool mine_alarm = false;
  std::vector<std::string> requests;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine = mine_;
    mine_alarm = mine_alarm_;
    requests.swap(requests_);
    if (mine) job_ = job_shape(mine->world_size, local_world_size_);
  }
  auto requeue = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.insert(requests_.begin(), requests.begin(), requests.end());
  };
  // Alarms first: a node that learns of one in this round publishes its
  // document in this round too.
  std::vector<KeyValue> kvs;
  if (mine && mine_alarm != alarm_put_) {
    const std::string key = root_ + "/alarms/" + std::to_string(mine->node);
    if (!(mine_alarm ? store_->put(key, "1") : store_->remove(key))) {
      requeue();
      return false;
    }
    alarm_put_ = mine_alarm;
  }
  // Who writes for each node, before anything of theirs is read.
  if (mine && !read_owners(*mine)) {
    requeue();
    return false;
  }
  if (!store_->get_prefix(root_ + "/alarms/", &kvs, nullptr)) {
    requeue();
    return false;
  }
  // A node's alarm, or job-wide mismatches (handed on, not alarms).
  const bool alarm = note_alarm_keys(kvs);
  const double now_s = unix_now_s();
  // Quiet periods exchange rarely, once the other nodes are known: every
  // rank of the world is on this node or in another node's document (nodes
  // start at different times; one that came before the others must not wait
  // for the quiet refresh to learn of them).
  bool known_others = false;
  if (mine) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t ranks = mine->snapshot.ranks.size();
    for (const NodeProgress& p : others_) ranks += p.snapshot.ranks.size();
    known_others = !others_.empty() && ranks >= static_cast<size_t>(mine->world_size);
  }
  const bool exchange = alarm || !known_others || now_s - last_exchange_s_ >= kQuietRefreshS;
  if (exchange && mine && !publish(*mine)) {
    requeue();
    return false;
  }
  if (stopping()) return true;  // the supervisor exits: no more waits on the store
  if (!store_->keep_alive()) {
    requeue();
    return false;
  }
  for (const std::string& reason : requests) {
    if (!mine) break;  // no node yet: nothing to name the request by
    char key[96];
    std::snprintf(key, sizeof(key), "/dumps/%013llu-%d",
                  static_cast<unsigned long long>(now_s * 1000), mine->node);
    const std::string k = root_ + key;
    seen_requests_.insert(k);  // ours: not handed back to us
    const nlohmann::json v = {{"reason", reason}, {"node", mine->node}};
    if (!store_->put(k, v.dump())) return false;  // lost: a node that cares saw the hang too
  }

  std::vector<NodeProgress> others;
  if (stopping()) return true;
  if (exchange && !read_others(mine, &others)) return false;

  if (!store_->get_prefix(root_ + "/dumps/", &kvs, nullptr)) return false;
  const std::vector<std::pair<std::string, int>> asked = admit_requests(kvs);
  first_read_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.alarm = alarm;
    if (exchange) {
      // Until we published, the others could not know us: exchange again
      // next period (the rounds before a rank registered).
      if (mine) last_exchange_s_ = now_s;
      status_.nodes.clear();
      for (const NodeProgress& p : others) status_.nodes.push_back(p.node);
      // A node whose keys are gone leaves: what it said lasts no longer
      // than its keys (a forger's keys deleted, a lease expired, etcd
      // restarted empty).
      last_known_.clear();
      for (const NodeProgress& p : others) last_known_[p.node] = p;
      others_ = std::move(others);
    }
  }
  for (const auto& [reason, node] : asked) on_request_(reason, node);
  return !mine || stopping() || (fingerprint_round(mine->node) && slow_round(mine->node));
}

bool JobView::publish(const NodeProgress& mine) {
  const std::string node = std::to_string(mine.node);
  const uint64_t id = node_document_id(mine);
  if (id != put_doc_) {
    if (!store_->put(root_ + "/nodes/" + node, node_progress_text(mine))) return false;
    put_doc_ = id;
  }
  // After the document: a reader that sees this stamp finds its document.
  return store_->put(root_ + "/stamps/" + node, node_stamp_text(mine));
}

bool JobView::read_others(const std::optional<NodeProgress>& mine,
                          std::vector<NodeProgress>* others) {
  const int me = mine ? mine->node : -1;
  // Stamps before documents: the document a stamp names was put before it,
  // so the read of the documents that follows finds it (or a newer one).
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(root_ + "/stamps/", &kvs, nullptr)) return false;
  std::vector<NodeStamp> stamps;
  std::set<int> refused_stamps;  // nodes whose stamp key holds what does not count
  const double now_s = unix_now_s();
  if (job_.node_count <= 0) return true;  // no rank registered here: nothing to judge by
  for (const KeyValue& kv : kvs) {
    NodeStamp st;
    std::string why;
    const int key_node = node_of_key(kv.key, root_ + "/stamps/");
    if (!parse_node_stamp(kv.value, &st, &why)) {
      ignore_key(kv, why);
    } else if (st.node == me && key_node == me) {
      continue;
    } else if (!(why = stamp_refusal(st, key_node, job_, now_s)).empty()) {
      ignore_key(kv, why);
      refused_stamps.insert(key_node);
    } else if (trusted(kv, key_node)) {
      stamps.push_back(std::move(st));
    } else {
      refused_stamps.insert(key_node);
    }
  }

  // The documents changed since the last read, or all of them.
  const std::string nodes = root_ + "/nodes/";
  int64_t revision = 0;
  if (!store_->get_prefix(nodes, &kvs, &revision, read_all_docs_ ? 0 : docs_revision_ + 1)) {
    return false;
  }
  if (!read_all_docs_ && revision < docs_revision_) {
    SUP_LOG_INFO(
        "coordinator %s: the store's revision went back from %lld to %lld (it lost its data): "
        "reading every node's document again",
        url_.c_str(), static_cast<long long>(docs_revision_), static_cast<long long>(revision));
    read_all_docs_ = true;
    if (!store_->get_prefix(nodes, &kvs, &revision, 0)) return false;
  }
  const bool all = read_all_docs_;
  if (all) {  // what is not read now is gone
    docs_.clear();
    unreadable_docs_.clear();
    untrusted_docs_.clear();
  }
  read_all_docs_ = false;
  docs_revision_ = revision;
  std::set<std::string> arrived;  // keys, readable or not
  for (const KeyValue& kv : kvs) {
    arrived.insert(kv.key);
    NodeProgress p;
    std::string why;
    const int key_node = node_of_key(kv.key, nodes);
    untrusted_docs_.erase(key_node);  // what the key held before is gone
    if (!parse_node_progress(kv.value, &p, &why)) {
      ignore_key(kv, why);
      unreadable_docs_.insert(kv.key);
      continue;
    }
    if (p.node == me && key_node == me) continue;
    // Refused like an unreadable one: a stamp naming it does not make
    // every later read a full one.
    if (!(why = document_refusal(p, key_node, job_, now_s)).empty()) {
      ignore_key(kv, why);
    } else if (trusted(kv, key_node)) {
      unreadable_docs_.erase(kv.key);
      doc_leases_[p.node] = kv.lease;
      docs_[p.node] = std::move(p);
      continue;
    } else {
      untrusted_docs_[key_node] = {std::move(p), kv.lease};
    }
    // The node's document read before stays: a forger overwriting a real
    // node's key must not take the node out of the view.
    unreadable_docs_.insert(kv.key);
  }
  // A document refused for its lease counts once that lease owns its node
  // (the owners are read every round): it was put under the owner's lease,
  // only read before this node knew so.
  for (auto it = untrusted_docs_.begin(); it != untrusted_docs_.end();) {
    const auto owner = owners_.find(it->first);
    if (owner == owners_.end() || owner->second != it->second.second) {
      ++it;
      continue;
    }
    unreadable_docs_.erase(nodes + std::to_string(it->first));
    doc_leases_[it->first] = it->second.second;
    docs_[it->first] = std::move(it->second.first);
    it = untrusted_docs_.erase(it);
  }
  // A document counts while its node's owner is the one that wrote it.
  for (auto it = docs_.begin(); it != docs_.end();) {
    const auto owner = owners_.find(it->first);
    if (owner == owners_.end() || owner->second != doc_leases_[it->first]) {
      doc_leases_.erase(it->first);
      it = docs_.erase(it);
    } else {
      ++it;
    }
  }

  for (const NodeStamp& st : stamps) {
    const auto it = docs_.find(st.node);
    if (it != docs_.end()) {
      NodeProgress p = it->second;
      if (apply_node_stamp(st, &p)) {
        others->push_back(std::move(p));
        continue;
      }
    }
    // We lack the document this stamp belongs to. One read just now is
    // newer than the stamp (put between our two reads): the next stamp
    // matches it. One we cannot read stays unread (warned about once).
    // Otherwise the store lost it or we missed it: read every document next
    // round. Meanwhile the node's previous snapshot stands (merge() drops it
    // once it is kFreshS old).
    const std::string key = nodes + std::to_string(st.node);
    if (arrived.count(key) == 0 && unreadable_docs_.count(key) == 0) read_all_docs_ = true;
    std::lock_guard<std::mutex> lock(mu_);
    for (const NodeProgress& p : others_) {
      if (p.node == st.node) others->push_back(p);
    }
  }
  // A stamp key that holds something else now (a forger overwrote it): the
  // node's previous snapshot stands until its next stamp (merge() judges
  // its age), as for a stamp naming a document we lack.
  for (const int node : refused_stamps) {
    if (docs_.count(node) == 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    for (const NodeProgress& p : others_) {
      if (p.node == node) others->push_back(p);
    }
  }
  // One node per rank: this node's ranks, then the documents in node order.
  std::vector<std::pair<int, std::string>> refused;
  *others = without_rank_conflicts(mine ? mine->snapshot : Snapshot{}, std::move(*others), &refused);
  for (const auto& [node, why] : refused) {
    KeyValue kv;
    kv.key = nodes + std::to_string(node);
    ignore_key(kv, why);
  }
  std::lock_guard<std::mutex> lock(mu_);
  status_.docs_read += kvs.size();
  if (all) ++status_.full_reads;
  return true;
}

bool JobView::read_owners(const NodeProgress& mine) {
  const std::string dir = root_ + "/owners/";
  if (!claimed_) {
    bool created = false;
    if (!store_->create(dir + std::to_string(mine.node), mine.host, &created)) return false;
    claimed_ = true;
  }
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(dir, &kvs, nullptr)) return false;
  owners_ = owner_leases(kvs, dir, job_);
  owners_reread_ = false;
  const auto it = owners_.find(mine.node);
  if (it != owners_.end() && it->second == store_->lease()) {
    owner_lost_said_ = false;
    return true;
  }
  // Not ours (yet, or any more): claimed again next round; free once its
  // holder's lease ends.
  claimed_ = false;
  put_doc_ = 0;  // whatever we put under a lease that was not the owner's does not count
  if (it != owners_.end() && !owner_lost_said_) {
    owner_lost_said_ = true;
    SUP_LOG_WARN(
        "coordinator %s: node %d's owner key is held by lease %lld, not this supervisor's (%lld): "
        "the other nodes ignore what this node publishes until it is ours (another supervisor "
        "running as node %d?)",
        url_.c_str(), mine.node, static_cast<long long>(it->second),
        static_cast<long long>(store_->lease()), mine.node);
  }
  return true;
}

bool JobView::trusted(const KeyValue& kv, int node) {
  std::string why;
  if (written_by_owner(kv, node, owners_, &why)) return true;
  // A node claims its owner key before it writes anything else, but this
  // round read the owners before its other keys: a key of a node of the job
  // with no owner yet, or another one, reads the owners again (once a round).
  if (!owners_reread_ && node >= 0 && node < job_.node_count) {
    owners_reread_ = true;
    const std::string dir = root_ + "/owners/";
    std::vector<KeyValue> kvs;
    if (store_->get_prefix(dir, &kvs, nullptr)) owners_ = owner_leases(kvs, dir, job_);
    if (written_by_owner(kv, node, owners_, &why)) return true;
  }
  ignore_key(kv, why);
  return false;
}

std::vector<std::pair<std::string, int>> JobView::admit_requests(const std::vector<KeyValue>& kvs) {
  std::vector<std::pair<std::string, int>> asked;
  const std::string dir = root_ + "/dumps/";
  const double now_s = unix_now_s();
  size_t refused = 0;
  std::string first;
  for (const KeyValue& kv : kvs) {
    if (!seen_requests_.insert(kv.key).second || first_read_) continue;
    const nlohmann::json v = nlohmann::json::parse(kv.value, nullptr, false);
    const int node = node_of_key(kv.key, dir, /*after_dash=*/true);
    std::string why;
    bool from_owner = false;
    if (!v.is_object() || !v.contains("reason") || !v["reason"].is_string()) {
      why = "not a dump request";
    } else if (!v.contains("node") || !v["node"].is_number_integer() ||
               v["node"].get<int64_t>() != node) {
      why = "its key and its body name different nodes";
    } else {
      from_owner = written_by_owner(kv, node, owners_, &why);
    }
    // The asking node's alarm may reach the store after our read of the
    // alarms (it is put first, but read first too): its request waits.
    std::string_view asked_ms = std::string_view(kv.key).substr(dir.size());
    const double asked_s = static_cast<double>(take_int(&asked_ms).value_or(0)) / 1000;
    if (from_owner && alarmed_.count(node) == 0 && now_s - asked_s < kRequestWaitS) {
      seen_requests_.erase(kv.key);
      continue;
    }
    if (from_owner && dump_gate_.admit(true, alarmed_.count(node) > 0, now_s, &why)) {
      asked.emplace_back(v["reason"].get<std::string>(), node);
      continue;
    }
    if (refused++ == 0) first = kv.key + ": " + why;
  }
  // One line per round, however many: a flood is one line, not many.
  if (refused > 0) {
    SUP_LOG_WARN("coordinator %s: ignoring %zu dump request(s) (%s%s)", url_.c_str(), refused,
                 first.c_str(), refused > 1 ? "; ..." : "");
  }
  return asked;
}

nlohmann::json coordinator_json(const JobViewStatus& s, const nlohmann::json& compared_through,
                                const nlohmann::json& unaligned) {
  using nlohmann::json;
  json j{{"url", s.url},
         {"job_id", s.job_id},
         {"connected", s.connected},
         {"alarm", s.alarm},
         {"other_nodes", s.nodes},
         {"rounds", s.rounds},
         {"failed_rounds", s.failures},
         // Other nodes' documents read, and reads of all of them.
         {"documents_read", s.docs_read},
         {"full_reads", s.full_reads},
         {"last_error", s.last_error.empty() ? json(nullptr) : json(s.last_error)}};
  j["collectives"] = json{{"peers", s.fingerprint_peers},
                          {"compared_through", compared_through},
                          {"unaligned", unaligned}};
  return j;
}

}  // namespace xpu_timer::supervisor
