// JobView's part of the job-wide slow-rank verdict (analysis/slow_summary.h):
// every kSlowPeriodS, put this node's window summary and read every node's.
// A summary counts only under its node's owner lease (store_trust.h); what
// it says is checked by its parser on the asio side.
#include "common/clock.h"
#include "supervisor/coordination/job_view.h"

namespace xpu_timer::supervisor {

void JobView::offer_slow_summary(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  slow_offer_ = std::move(text);
}

std::map<int, std::string> JobView::slow_summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slow_docs_;
}

bool JobView::slow_round(int my_node) {
  const double now_s = unix_now_s();
  if (now_s - slow_round_s_ < kSlowPeriodS) return true;
  std::optional<std::string> offer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offer.swap(slow_offer_);
  }
  const std::string dir = root_ + "/slow/";
  if (offer && !store_->put(dir + std::to_string(my_node), *offer)) return false;
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(dir, &kvs, nullptr)) return false;
  slow_round_s_ = now_s;
  std::map<int, std::string> docs;
  for (const KeyValue& kv : kvs) {
    const int node = node_of_key(kv.key, dir);
    if (kv.key != dir + std::to_string(node)) {
      ignore_key(kv, "not a node's slow-rank summary");
      continue;
    }
    if (trusted(kv, node)) docs[node] = kv.value;
  }
  std::lock_guard<std::mutex> lock(mu_);
  slow_docs_ = std::move(docs);
  return true;
}

}  // namespace xpu_timer::supervisor
