#include "supervisor/coordination/job_view.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/clock.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

JobView::JobView(std::unique_ptr<CoordinationStore> store, std::string url, std::string job_id,
                 int publish_ms, RequestHandler on_request, MismatchHandler on_mismatch)
    : store_(std::move(store)),
      url_(std::move(url)),
      job_id_(std::move(job_id)),
      publish_ms_(publish_ms),
      on_request_(std::move(on_request)),
      trust_(store_.get(), url_, "/xpu_timer/" + job_id_),
      alarms_(store_.get(), &trust_, "/xpu_timer/" + job_id_),
      leader_(store_.get(), &trust_, "/xpu_timer/" + job_id_),
      progress_(store_.get(), &trust_, &leader_, url_, "/xpu_timer/" + job_id_),
      dumps_(store_.get(), &trust_, url_, "/xpu_timer/" + job_id_),
      fingerprints_(store_.get(), &trust_, "/xpu_timer/" + job_id_, &stop_, std::move(on_mismatch)),
      slow_(store_.get(), &trust_, &leader_, "/xpu_timer/" + job_id_) {
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
  fresh_s_ = std::max(kFreshS, timeout_s * kFreshFraction);
  if (!mine_) return local;
  std::map<int, NodeProgress> known = gone_;
  for (const auto& [node, p] : last_known_) known[node] = p;
  // Without the store, news stops: an alarm's (a second old when the
  // store went) is merged while fresh, then silent; a quiet job's
  // documents say where its ranks were when their shape last changed, so
  // they are silent at once.
  if (!status_.connected) {
    return merge_progress(local, mine_->node, mine_->world_size, known, true,
                          status_.alarm ? fresh_s_ : -1e9, heard_unix_s_, /*connected=*/false);
  }
  return merge_progress(local, mine_->node, mine_->world_size, known, status_.alarm, fresh_s_,
                        heard_unix_s_);
}

void JobView::wake() {
  // Under the lock the thread's wait checks the parts under: it either has
  // not checked yet, or waits already and is woken.
  { std::lock_guard<std::mutex> lock(mu_); }
  wake_.notify_all();
}

void JobView::request_dumps(const std::string& reason) {
  dumps_.ask(reason);
  wake();
}

JobViewStatus JobView::status() const {
  JobViewStatus s;
  const double now_s = unix_now_s();
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = status_;
    for (const std::map<int, NodeProgress>* nodes : {&last_known_, &gone_}) {
      for (const auto& [node, p] : *nodes) {
        const auto heard = heard_unix_s_.find(node);
        const double silent_s =
            now_s - (heard != heard_unix_s_.end() ? heard->second : p.snapshot.now_unix_s);
        if (status_.connected && silent_s <= fresh_s_) continue;
        s.silent_nodes.push_back(SilentNode{node, p.host, silent_s, nodes == &gone_});
      }
    }
  }
  std::sort(s.silent_nodes.begin(), s.silent_nodes.end(),
            [](const SilentNode& a, const SilentNode& b) { return a.node < b.node; });
  s.fingerprint_peers = fingerprints_.peers();
  return s;
}

void JobView::heard(bool alarm, double now_s, int me, const std::vector<NodeProgress>* others) {
  // Under mu_. A node's owner key says its supervisor kept its lease: heard
  // from, when no news is expected (no alarm).
  const std::map<int, int64_t>& owners = trust_.owners();
  if (!alarm) {
    for (const auto& [node, lease] : owners) {
      if (node != me) heard_unix_s_[node] = now_s;
    }
  }
  // A node whose owner key left the store (its lease ended) is gone at
  // once: the exchange that would see its keys gone may be minutes away.
  for (auto it = last_known_.begin(); it != last_known_.end();) {
    if (owners.count(it->first) != 0) {
      ++it;
      continue;
    }
    status_.nodes.erase(std::remove(status_.nodes.begin(), status_.nodes.end(), it->first),
                        status_.nodes.end());
    gone_[it->first] = std::move(it->second);
    it = last_known_.erase(it);
  }
  if (others == nullptr) return;
  for (const NodeProgress& p : *others) {
    double& h = heard_unix_s_[p.node];
    h = std::max(h, std::min(p.snapshot.now_unix_s, now_s));
  }
  // A node whose keys left the store stays, silent, until heard again.
  for (auto& [node, p] : last_known_) gone_[node] = std::move(p);
  for (const NodeProgress& p : *others) gone_.erase(p.node);
}

void JobView::offer_fingerprints(NodeFingerprints window, std::set<uint64_t> comms) {
  fingerprints_.offer(std::move(window), std::move(comms));
}

std::vector<NodeFingerprints> JobView::take_peer_fingerprints() {
  return fingerprints_.take_peer_windows();
}

void JobView::publish_mismatch(uint64_t comm_hash, uint64_t seq, NodeFingerprints mine) {
  fingerprints_.publish_mismatch(comm_hash, seq, std::move(mine));
  wake();
}

void JobView::offer_slow_summary(std::string text) { slow_.offer(std::move(text)); }

std::map<int, std::string> JobView::slow_summaries() const { return slow_.summaries(); }

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
      return stop_ || (ok && (dumps_.pending() || fingerprints_.pending()));
    });
  }
}

bool JobView::round() {
  std::optional<NodeProgress> mine;
  bool mine_alarm = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine = mine_;
    mine_alarm = mine_alarm_;
    if (mine) trust_.set_job(job_shape(mine->world_size, local_world_size_));
  }
  std::vector<std::string> requests = dumps_.take();
  // Alarms first: a node that learns of one in this round publishes its
  // document in this round too. Then who writes for each node, before
  // anything of theirs is read.
  if (mine && !alarms_.put(mine->node, mine_alarm)) {
    dumps_.requeue(requests);
    return false;
  }
  // The folders every node reads every round, and the leader's key, in one
  // request (etcd: a transaction of four ranges) instead of four; each read
  // below takes its answer, or asks again where this node wrote since. A
  // failed prefetch ends the round as a failed read would (etcd down: one
  // call timeout, not one per read).
  std::vector<PrefixQuery> ahead{alarms_.next_query(), leader_.next_query(), dumps_.next_query()};
  if (mine) ahead.push_back(trust_.next_owners_query());
  if (!store_->prefetch(ahead) || (mine && !trust_.read_owners(mine->node, mine->host))) {
    dumps_.requeue(requests);
    return false;
  }
  // Whatever we put under a lease that was not the owner's does not count.
  if (mine && !trust_.owns_node()) progress_.forget_published();
  std::vector<KeyValue> mismatches;
  if (!alarms_.read(&mismatches) || !leader_.round(mine ? mine->node : -1)) {
    dumps_.requeue(requests);
    return false;
  }
  // Job-wide mismatches are handed on, not alarms.
  fingerprints_.note_mismatches(mismatches);
  const bool alarm = !alarms_.alarmed().empty();
  const double now_s = unix_now_s();
  const bool exchange = progress_.due(mine, alarm, now_s);
  // A quiet exchange moves only what changed of the nodes' shapes.
  if (exchange && mine && !progress_.publish(*mine, !alarm)) {
    dumps_.requeue(requests);
    return false;
  }
  if (stopping()) return true;  // the supervisor exits: no more waits on the store
  // The lease a third of its TTL apart (etcd's own clients do so): a
  // request less a second for each node; a lease lost meanwhile (etcd
  // restarted empty) is found by the next put or refresh.
  const uint64_t now_ns = monotonic_ns();
  const uint64_t keep_every_ns = static_cast<uint64_t>(store_->lease_ttl_s()) * 1'000'000'000 / 3;
  if (kept_alive_ns_ == 0 || now_ns - kept_alive_ns_ >= keep_every_ns) {
    if (!store_->keep_alive()) {
      dumps_.requeue(requests);
      return false;
    }
    kept_alive_ns_ = now_ns;
  }
  // Without a node yet, nothing names the requests: they are dropped.
  if (mine && !dumps_.put(requests, mine->node, now_s)) return false;

  std::vector<NodeProgress> others;
  if (stopping()) return true;
  if (exchange) {
    if (!progress_.read(mine, &others, !alarm)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    status_.docs_read = progress_.docs_read();
    status_.full_reads = progress_.full_reads();
    status_.stamp_reads = progress_.stamp_reads();
    status_.digest_reads = progress_.digest_reads();
  }
  std::vector<std::pair<std::string, int>> asked;
  if (!dumps_.read(alarms_.alarmed(), &asked)) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.alarm = alarm;
    status_.leading = leader_.leading();
    heard(alarm, now_s, mine ? mine->node : -1, exchange ? &others : nullptr);
    if (exchange) {
      status_.nodes.clear();
      for (const NodeProgress& p : others) status_.nodes.push_back(p.node);
      // A node whose keys are gone leaves the exchange: what it said lasts
      // no longer than its keys (a forger's keys deleted, a lease expired,
      // etcd restarted empty); heard() keeps it as silent.
      last_known_.clear();
      for (const NodeProgress& p : others) last_known_[p.node] = p;
      progress_.exchanged(mine.has_value(), now_s, std::move(others));
    }
  }
  for (const auto& [reason, node] : asked) on_request_(reason, node);
  return !mine || stopping() ||
         (fingerprints_.round(mine->node, progress_.others()) &&
          slow_.round(mine->node, unix_now_s()));
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
         // This node reads every stamp for all (the leader), and the
         // exchanges that read the stamps or the leader's digest.
         {"leading", s.leading},
         {"stamp_reads", s.stamp_reads},
         {"digest_reads", s.digest_reads},
         {"last_error", s.last_error.empty() ? json(nullptr) : json(s.last_error)}};
  json silent = json::array();
  for (const SilentNode& n : s.silent_nodes) {
    silent.push_back(json{
        {"node", n.node}, {"host", n.host}, {"silent_s", n.silent_s}, {"keys_gone", n.keys_gone}});
  }
  j["silent_nodes"] = std::move(silent);
  j["collectives"] = json{{"peers", s.fingerprint_peers},
                          {"compared_through", compared_through},
                          {"unaligned", unaligned}};
  return j;
}

}  // namespace xpu_timer::supervisor
