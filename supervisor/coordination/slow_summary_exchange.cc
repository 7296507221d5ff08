#include "supervisor/coordination/slow_summary_exchange.h"

#include <utility>
#include <vector>

namespace xpu_timer::supervisor {

SlowSummaryExchange::SlowSummaryExchange(CoordinationStore* store, KeyTrust* trust,
                                         const std::string& root)
    : store_(store), trust_(trust), dir_(root + "/slow/") {}

void SlowSummaryExchange::offer(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  offer_ = std::move(text);
}

std::map<int, std::string> SlowSummaryExchange::summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summaries_;
}

bool SlowSummaryExchange::round(int my_node, double now_s) {
  if (now_s - last_round_s_ < kPeriodS) return true;
  std::optional<std::string> offer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offer.swap(offer_);
  }
  if (offer && !store_->put(dir_ + std::to_string(my_node), *offer)) return false;
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(dir_, &kvs, nullptr)) return false;
  last_round_s_ = now_s;
  std::map<int, std::string> summaries;
  for (const KeyValue& kv : kvs) {
    const int node = node_of_key(kv.key, dir_);
    if (kv.key != dir_ + std::to_string(node)) {
      trust_->ignore(kv, "not a node's slow-rank summary");
      continue;
    }
    if (trust_->trusted(kv, node)) summaries[node] = kv.value;
  }
  std::lock_guard<std::mutex> lock(mu_);
  summaries_ = std::move(summaries);
  return true;
}

}  // namespace xpu_timer::supervisor
