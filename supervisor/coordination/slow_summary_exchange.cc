#include "supervisor/coordination/slow_summary_exchange.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "supervisor/analysis/slow_summary.h"

namespace xpu_timer::supervisor {

SlowSummaryExchange::SlowSummaryExchange(CoordinationStore* store, KeyTrust* trust,
                                         const LeaderElection* leader, const std::string& root)
    : store_(store),
      trust_(trust),
      leader_(leader),
      dir_(root + "/slow/"),
      digest_key_(root + "/leader/slow") {}

void SlowSummaryExchange::offer(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  offer_ = std::move(text);
}

std::map<int, std::string> SlowSummaryExchange::summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summaries_;
}

bool SlowSummaryExchange::read_all(std::map<int, std::string>* out) {
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(dir_, &kvs, nullptr)) return false;
  ++whole_reads_;
  for (const KeyValue& kv : kvs) {
    const int node = node_of_key(kv.key, dir_);
    if (kv.key != dir_ + std::to_string(node)) {
      trust_->ignore(kv, "not a node's slow-rank summary");
      continue;
    }
    if (trust_->trusted(kv, node)) (*out)[node] = kv.value;
  }
  return true;
}

bool SlowSummaryExchange::read_digest(double now_s, std::optional<SlowDigest>* out) {
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(digest_key_, &kvs, nullptr)) return false;
  for (const KeyValue& kv : kvs) {
    // Only the leader's own: one put under another lease is ignored.
    if (kv.key != digest_key_ || !leader_->from_leader(kv)) continue;
    SlowDigest d;
    std::string why;
    if (!parse_slow_digest(kv.value, trust_->job().node_count, &d, &why)) {
      trust_->ignore(kv, why);
      continue;
    }
    if (d.leader == leader_->leader_node() && d.now_unix_s >= now_s - kDigestMaxAgeS &&
        d.now_unix_s <= now_s + kMaxClockSkewS) {
      *out = std::move(d);
    }
  }
  return true;
}

bool SlowSummaryExchange::put_digest(int my_node, double now_s,
                                     const std::map<int, std::string>& texts) {
  const int world = trust_->job().world_size;
  if (world <= 0) return true;  // nothing to check the summaries against yet
  std::vector<NodeSlowSummary> nodes;
  for (const auto& [node, text] : texts) {
    NodeSlowSummary s;
    std::string why;
    // What the other nodes would refuse or drop as old is left out here.
    if (!parse_slow_summary(text, world, &s, &why) || s.node != node ||
        std::fabs(s.unix_s - now_s) > kSlowSummaryMaxAgeS) {
      continue;
    }
    nodes.push_back(std::move(s));
  }
  SlowDigest d;
  d.leader = my_node;
  d.now_unix_s = now_s;
  for (const NodeSlowSummary& s : reduce_slow_summaries(nodes)) {
    d.summaries[s.node] = slow_summary_text(s);
  }
  return store_->put(digest_key_, slow_digest_text(d));
}

bool SlowSummaryExchange::round(int my_node, double now_s) {
  if (now_s - last_round_s_ < kPeriodS) return true;
  std::optional<std::string> offer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offer.swap(offer_);
  }
  if (offer && !store_->put(dir_ + std::to_string(my_node), *offer)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!offer_) offer_ = std::move(offer);  // put again next round
    return false;
  }
  std::map<int, std::string> summaries;
  std::optional<SlowDigest> digest;
  if (!leader_->leading() && leader_->leader_lease() != 0 && !read_digest(now_s, &digest)) {
    return false;
  }
  if (digest) {
    summaries = std::move(digest->summaries);
    ++digest_reads_;
  } else if (!read_all(&summaries) ||
             (leader_->leading() && !put_digest(my_node, now_s, summaries))) {
    return false;
  }
  last_round_s_ = now_s;
  std::lock_guard<std::mutex> lock(mu_);
  summaries_ = std::move(summaries);
  return true;
}

}  // namespace xpu_timer::supervisor
