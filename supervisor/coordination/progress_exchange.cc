#include "supervisor/coordination/progress_exchange.h"

#include <algorithm>

#include "common/clock.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

Snapshot merge_progress(const Snapshot& local, int node, int world_size,
                        const std::map<int, NodeProgress>& known, bool alarm, double fresh_s,
                        const std::map<int, double>& heard_unix_s, bool connected) {
  std::vector<NodeProgress> fresh;
  for (const auto& [other, p] : known) {
    const double age_s = local.now_unix_s - p.snapshot.now_unix_s;
    if (age_s <= fresh_s) {
      // Judged on, but dated: a snapshot taken before a collective's first
      // wait cannot say whether these ranks issued it since (quiet nodes
      // put their progress only when its shape changes, and answer an
      // alarm a round or two late on a busy machine). HangDetector waits
      // for their news before naming them behind (RankSample::news_age_s).
      NodeProgress dated = p;
      for (RankSample& r : dated.snapshot.ranks) {
        r.news_age_s = std::max(age_s, 1e-3);
        r.news_pending = connected;
      }
      fresh.push_back(std::move(dated));
    } else if (alarm) {
      // Its news is late (a busy node or store), its supervisor is gone, or
      // the store is. Dropping its ranks would make them "never
      // registered", and the verdict flap with each late stamp; judging
      // them on old news would name what may not have happened (a
      // heartbeat that only stopped reaching us). Its ranks stay, silent:
      // the detector does not judge them, and names their node as not
      // heard from; their communicators say which collectives they are
      // members of, nothing more (nothing in flight).
      const auto heard = heard_unix_s.find(other);
      const double silent_s =
          std::max(1e-3, heard != heard_unix_s.end() ? local.now_unix_s - heard->second : age_s);
      NodeProgress blind = p;
      const auto age_ns = static_cast<uint64_t>(std::min(age_s, 1e9) * 1e9);
      for (RankSample& r : blind.snapshot.ranks) {
        r.silent_s = silent_s;
        r.news_age_s = std::max(silent_s, age_s);
        r.news_pending = connected && silent_s < fresh_s;
        r.page_ok = false;
        r.inflight_count = 0;
        r.oldest_inflight = proto::OpRef{};
        for (uint64_t* t : {&r.heartbeat_ns, &r.registered_ns}) {
          if (*t != 0) *t = *t > age_ns ? *t - age_ns : 1;
        }
      }
      fresh.push_back(std::move(blind));
    }
  }
  if (fresh.empty()) return local;
  return merge_job_snapshot(local, node, fresh, world_size);
}

ProgressExchange::ProgressExchange(CoordinationStore* store, KeyTrust* trust,
                                   const LeaderElection* leader, std::string url,
                                   const std::string& root)
    : store_(store),
      trust_(trust),
      leader_(leader),
      url_(std::move(url)),
      nodes_dir_(root + "/nodes/"),
      stamps_dir_(root + "/stamps/"),
      digest_key_(root + "/leader/digest") {}

bool ProgressExchange::due(const std::optional<NodeProgress>& mine, bool alarm,
                           double now_s) const {
  bool known_others = false;
  if (mine) {
    size_t ranks = mine->snapshot.ranks.size();
    for (const NodeProgress& p : others_) ranks += p.snapshot.ranks.size();
    known_others = !others_.empty() && ranks >= static_cast<size_t>(mine->world_size);
  }
  // This node's shape changed since it was put (a rank registered, learnt
  // its node or restarted): the others learn of it now, not at the refresh.
  const bool reshaped = mine && node_shape_id(*mine) != put_shape_;
  return alarm || !known_others || reshaped || now_s - last_exchange_s_ >= kQuietRefreshS;
}

bool ProgressExchange::publish(const NodeProgress& mine, bool quiet) {
  const std::string node = std::to_string(mine.node);
  const uint64_t id = node_document_id(mine);
  const uint64_t shape = node_shape_id(mine);
  if (quiet && put_doc_ != 0 && shape == put_shape_) return true;
  if (id != put_doc_) {
    if (!store_->put(nodes_dir_ + node, node_progress_text(mine))) return false;
    put_doc_ = id;
    put_shape_ = shape;
  }
  // After the document: a reader that sees this stamp finds its document.
  return store_->put(stamps_dir_ + node, node_stamp_text(mine));
}

void ProgressExchange::exchanged(bool published, double now_s, std::vector<NodeProgress> others) {
  // Until we published, the others could not know us: exchange again next
  // period (the rounds before a rank registered).
  if (published) last_exchange_s_ = now_s;
  others_ = std::move(others);
}

void ProgressExchange::keep_previous(int node, std::vector<NodeProgress>* out) const {
  for (const NodeProgress& p : others_) {
    if (p.node == node) out->push_back(p);
  }
}

bool ProgressExchange::read_digest(double now_s, std::optional<ProgressDigest>* digest) {
  leading_ = leader_->leading();
  if (leading_ || leader_->leader_lease() == 0) return true;
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(digest_key_, &kvs, nullptr)) return false;
  const KeyValue* text = nullptr;
  for (const KeyValue& kv : kvs) {
    if (kv.key == digest_key_) text = &kv;
  }
  // Only the leader's own: a digest put under another lease is ignored.
  if (text == nullptr || !leader_->from_leader(*text)) return true;
  ProgressDigest d;
  std::string why;
  if (!parse_progress_digest(text->value, &d, &why)) {
    trust_->ignore(*text, why);
    return true;
  }
  // A digest older than a few periods is a leader gone or late: the
  // stamps are read instead until its lease ends and another leads.
  if (d.leader != leader_->leader_node() || d.now_unix_s < now_s - kDigestMaxAgeS ||
      d.now_unix_s > now_s + kMaxClockSkewS) {
    return true;
  }
  *digest = std::move(d);
  return true;
}

bool ProgressExchange::read_stamps(int me, double now_s, std::vector<NodeStamp>* stamps,
                                   std::set<int>* refused, std::map<int, std::string>* texts) {
  const JobShape& job = trust_->job();
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(stamps_dir_, &kvs, nullptr)) return false;
  ++stamp_reads_;
  if (job.node_count <= 0) return true;  // no rank registered here: nothing to judge by
  for (const KeyValue& kv : kvs) {
    NodeStamp st;
    std::string why;
    const int key_node = node_of_key(kv.key, stamps_dir_);
    if (!parse_node_stamp(kv.value, &st, &why)) {
      trust_->ignore(kv, why);
    } else if (st.node == me && key_node == me) {
      continue;
    } else if (!(why = stamp_refusal(st, key_node, job, now_s)).empty()) {
      trust_->ignore(kv, why);
      refused->insert(key_node);
    } else if (trust_->trusted(kv, key_node)) {
      (*texts)[st.node] = kv.value;
      stamps->push_back(std::move(st));
    } else {
      refused->insert(key_node);
    }
  }
  return true;
}

bool ProgressExchange::stamps_from_digest(const ProgressDigest& d, int me, double now_s,
                                          std::vector<NodeStamp>* stamps) {
  const JobShape& job = trust_->job();
  std::vector<NodeStamp> carried;
  std::set<int> carried_nodes;
  for (const std::string& text : d.stamps) {
    NodeStamp st;
    std::string why;
    // Checked by the leader against its node's owner; checked again here
    // for what this node can check alone.
    if (!parse_node_stamp(text, &st, &why) || !stamp_refusal(st, st.node, job, now_s).empty() ||
        !carried_nodes.insert(st.node).second) {
      return false;
    }
    if (st.node != me) carried.push_back(std::move(st));
  }
  // The plain nodes as this node knows them: they must be the leader's.
  std::map<int, uint64_t> plain;
  for (const auto& [node, p] : docs_) {
    if (carried_nodes.count(node) == 0) plain[node] = p.doc;
  }
  if (me >= 0 && carried_nodes.count(me) == 0) plain[me] = put_doc_;
  if (plain_nodes_hash(plain) != d.plain_hash) return false;
  *stamps = std::move(carried);
  for (const auto& [node, p] : docs_) {
    if (node != me && carried_nodes.count(node) == 0) {
      stamps->push_back(plain_stamp(p, d.fresh_unix_s));
    }
  }
  return true;
}

bool ProgressExchange::put_digest(const std::optional<NodeProgress>& mine, double now_s,
                                  const std::vector<NodeStamp>& stamps,
                                  const std::map<int, std::string>& texts) {
  ProgressDigest d;
  d.leader = mine->node;
  d.now_unix_s = now_s;
  d.fresh_unix_s = now_s;
  std::map<int, uint64_t> plain;
  for (const NodeStamp& st : stamps) {
    const auto doc = docs_.find(st.node);
    if (doc != docs_.end() && stamp_is_plain(st, doc->second, now_s)) {
      plain[st.node] = st.doc;
      d.fresh_unix_s = std::min(d.fresh_unix_s, st.now_unix_s);
    } else {
      d.stamps.push_back(texts.at(st.node));
    }
  }
  d.stamps.push_back(node_stamp_text(*mine));
  d.plain_hash = plain_nodes_hash(plain);
  return store_->put(digest_key_, progress_digest_text(d));
}

bool ProgressExchange::read_docs(int me, double now_s, std::set<std::string>* arrived) {
  const JobShape& job = trust_->job();
  std::vector<KeyValue> kvs;
  // The documents changed since the last read, or all of them.
  int64_t revision = 0;
  if (!store_->get_prefix(nodes_dir_, &kvs, &revision, read_all_docs_ ? 0 : docs_revision_ + 1)) {
    return false;
  }
  if (!read_all_docs_ && revision < docs_revision_) {
    SUP_LOG_INFO(
        "coordinator %s: the store's revision went back from %lld to %lld (it lost its data): "
        "reading every node's document again",
        url_.c_str(), static_cast<long long>(docs_revision_), static_cast<long long>(revision));
    read_all_docs_ = true;
    if (!store_->get_prefix(nodes_dir_, &kvs, &revision, 0)) return false;
  }
  const bool all = read_all_docs_;
  if (all) {  // what is not read now is gone
    docs_.clear();
    unreadable_docs_.clear();
    untrusted_docs_.clear();
  }
  read_all_docs_ = false;
  docs_revision_ = revision;
  for (const KeyValue& kv : kvs) {
    arrived->insert(kv.key);
    NodeProgress p;
    std::string why;
    const int key_node = node_of_key(kv.key, nodes_dir_);
    untrusted_docs_.erase(key_node);  // what the key held before is gone
    if (!parse_node_progress(kv.value, &p, &why)) {
      trust_->ignore(kv, why);
      unreadable_docs_.insert(kv.key);
      continue;
    }
    if (p.node == me && key_node == me) continue;
    // Refused like an unreadable one: a stamp naming it does not make
    // every later read a full one.
    if (!(why = document_refusal(p, key_node, job, now_s)).empty()) {
      trust_->ignore(kv, why);
    } else if (trust_->trusted(kv, key_node)) {
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
  const std::map<int, int64_t>& owners = trust_->owners();
  for (auto it = untrusted_docs_.begin(); it != untrusted_docs_.end();) {
    const auto owner = owners.find(it->first);
    if (owner == owners.end() || owner->second != it->second.second) {
      ++it;
      continue;
    }
    unreadable_docs_.erase(nodes_dir_ + std::to_string(it->first));
    doc_leases_[it->first] = it->second.second;
    docs_[it->first] = std::move(it->second.first);
    it = untrusted_docs_.erase(it);
  }
  // A document counts while its node's owner is the one that wrote it.
  for (auto it = docs_.begin(); it != docs_.end();) {
    const auto owner = owners.find(it->first);
    if (owner == owners.end() || owner->second != doc_leases_[it->first]) {
      doc_leases_.erase(it->first);
      it = docs_.erase(it);
    } else {
      ++it;
    }
  }
  docs_read_ += kvs.size();
  if (all) ++full_reads_;
  return true;
}

bool ProgressExchange::read(const std::optional<NodeProgress>& mine,
                            std::vector<NodeProgress>* others, bool quiet) {
  const int me = mine ? mine->node : -1;
  const double now_s = unix_now_s();
  if (quiet) {
    if (trust_->job().node_count <= 0) return true;  // no rank registered here
    std::set<std::string> arrived;
    if (!read_docs(me, now_s, &arrived)) return false;
    for (const auto& [node, p] : docs_) {
      if (node != me) others->push_back(p);
    }
    return resolve_rank_conflicts(mine, others);
  }
  std::optional<ProgressDigest> digest;
  if (!read_digest(now_s, &digest)) return false;
  // Stamps before documents: the document a stamp names was put before it,
  // so the read of the documents that follows finds it (or a newer one).
  // A node that takes the leader's digest reads no stamp (unless the digest
  // does not cover the documents it holds: then it reads them, and the
  // documents changed since, after all).
  std::vector<NodeStamp> stamps;
  std::set<int> refused_stamps;  // nodes whose stamp key holds what does not count
  std::map<int, std::string> stamp_texts;
  if (!digest && !read_stamps(me, now_s, &stamps, &refused_stamps, &stamp_texts)) return false;
  if (trust_->job().node_count <= 0) return true;  // no rank registered here: nothing to judge by
  std::set<std::string> arrived;                   // keys of documents read, readable or not
  if (!read_docs(me, now_s, &arrived)) return false;
  if (digest) {
    if (stamps_from_digest(*digest, me, now_s, &stamps)) {
      ++digest_reads_;
    } else if (!read_stamps(me, now_s, &stamps, &refused_stamps, &stamp_texts) ||
               !read_docs(me, now_s, &arrived)) {
      return false;
    }
  }
  if (leading_ && mine && trust_->owns_node() && !put_digest(mine, now_s, stamps, stamp_texts)) {
    return false;
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
    // round. Meanwhile the node's previous snapshot stands (merge_progress
    // drops it once it is no longer fresh).
    const std::string key = nodes_dir_ + std::to_string(st.node);
    if (arrived.count(key) == 0 && unreadable_docs_.count(key) == 0) read_all_docs_ = true;
    keep_previous(st.node, others);
  }
  // A stamp key that holds something else now (a forger overwrote it): the
  // node's previous snapshot stands until its next stamp (merge_progress
  // judges its age), as for a stamp naming a document we lack.
  for (const int node : refused_stamps) {
    if (docs_.count(node) > 0) keep_previous(node, others);
  }
  return resolve_rank_conflicts(mine, others);
}

bool ProgressExchange::resolve_rank_conflicts(const std::optional<NodeProgress>& mine,
                                              std::vector<NodeProgress>* others) {
  // One node per rank: this node's ranks, then the documents in node order.
  std::vector<std::pair<int, std::string>> refused;
  *others =
      without_rank_conflicts(mine ? mine->snapshot : Snapshot{}, std::move(*others), &refused);
  for (const auto& [node, why] : refused) {
    KeyValue kv;
    kv.key = nodes_dir_ + std::to_string(node);
    trust_->ignore(kv, why);
  }
  return true;
}

}  // namespace xpu_timer::supervisor
