// The job view's slow-rank part (job_view.h): the job-wide slow-rank
// verdict (analysis/slow_summary.h) needs every node's window summary.
// Every kPeriodS a round puts this node's latest summary as
// <root>/slow/<node>. The job's leader (leader_election.h) reads every
// node's and puts <root>/leader/slow: what the others need of them to
// confirm the same stragglers (reduce_slow_summaries: the stragglers, and
// the quickest rank of each communicator holding one), a few hundred
// bytes whatever the job's size. Every other node reads that instead of the
// summaries, so a period costs the store O(nodes) and not O(nodes²); it
// reads the summaries itself when the digest does not count (not under
// the leader's lease, or older than kDigestMaxAgeS: a leader gone, until
// another leads). A summary counts only under its node's owner lease
// (KeyTrust); what it says is checked again by its parser on the asio side.
// What a node merges is thus up to two periods older than the summaries
// (the leader's read, then this node's).
//
// Threads: offer() and summaries() from any thread; round() on the view's
// thread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"
#include "supervisor/coordination/leader_election.h"
#include "supervisor/coordination/progress_digest.h"

namespace xpu_timer::supervisor {

class SlowSummaryExchange {
 public:
  static constexpr double kPeriodS = 5;
  static constexpr double kDigestMaxAgeS = 3 * kPeriodS;

  // `store`, `trust` and `leader` must outlive this.
  SlowSummaryExchange(CoordinationStore* store, KeyTrust* trust, const LeaderElection* leader,
                      const std::string& root);

  // This node's summary, put by the next round.
  void offer(std::string text);
  // The texts of the summaries that count (by node, this node's included
  // when read whole), as of the last round: every node's, or the leader's
  // reduced ones.
  std::map<int, std::string> summaries() const;
  // Puts the offered summary and reads the others (the digest, or every
  // summary and, leading, puts the digest), if kPeriodS passed since the
  // last time it did (`now_s`: unix time); false when a store call failed.
  bool round(int my_node, double now_s);
  // Periods that read every summary, and those that took the digest.
  uint64_t whole_reads() const { return whole_reads_; }
  uint64_t digest_reads() const { return digest_reads_; }

 private:
  // Every summary that counts, by node.
  bool read_all(std::map<int, std::string>* out);
  // The leader's digest, if it counts.
  bool read_digest(double now_s, std::optional<SlowDigest>* out);
  bool put_digest(int my_node, double now_s, const std::map<int, std::string>& texts);

  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const LeaderElection* const leader_;
  const std::string dir_;         // <root>/slow/
  const std::string digest_key_;  // <root>/leader/slow
  mutable std::mutex mu_;         // guards the next two
  std::optional<std::string> offer_;
  std::map<int, std::string> summaries_;
  double last_round_s_ = -1e9;  // the view's thread only, as the counts
  uint64_t whole_reads_ = 0;
  uint64_t digest_reads_ = 0;
};

}  // namespace xpu_timer::supervisor
