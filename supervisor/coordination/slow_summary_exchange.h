// The job view's slow-rank part (job_view.h): the job-wide slow-rank
// verdict (analysis/slow_summary.h) needs every node's window summary.
// Every kPeriodS a round puts this node's latest summary as
// <root>/slow/<node> and reads every node's. A summary counts only under its
// node's owner lease (KeyTrust); what it says is checked by its parser on
// the asio side, which knows the world.
//
// Threads: offer() and summaries() from any thread; round() on the view's
// thread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"

namespace xpu_timer::supervisor {

class SlowSummaryExchange {
 public:
  static constexpr double kPeriodS = 5;

  // `store` and `trust` must outlive this.
  SlowSummaryExchange(CoordinationStore* store, KeyTrust* trust, const std::string& root);

  // This node's summary, put by the next round.
  void offer(std::string text);
  // The texts of the nodes' summaries that count (by node, this node's
  // included), as of the last round.
  std::map<int, std::string> summaries() const;
  // Puts the offered summary and reads every node's, if kPeriodS passed
  // since the last time it did (`now_s`: unix time); false when a store
  // call failed.
  bool round(int my_node, double now_s);

 private:
  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const std::string dir_;  // <root>/slow/
  mutable std::mutex mu_;  // guards the next two
  std::optional<std::string> offer_;
  std::map<int, std::string> summaries_;
  double last_round_s_ = -1e9;  // the view's thread only
};

}  // namespace xpu_timer::supervisor
