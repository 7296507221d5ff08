// The job view's dump-request part (job_view.h): a node that declares a hang
// asks every other node to dump (request_dumps: "hang", ...), since they may
// not see it yet. The next round puts each request as
// <root>/dumps/<unix_ms>-<node>; every round brings its copy of
// <root>/dumps/ up to date (prefix_copy.h: only what changed) and hands
// on a request of another node that this node has not seen (once; the
// requests already there at this node's first read are only marked seen).
// A request is obeyed only from a node's owner (KeyTrust) whose alarm
// stands, at most one every DumpRequestGate::kMinIntervalS; one from an
// owner whose alarm this node has not read yet is looked at again for
// kRequestWaitS (its alarm is put just before it). What is refused is said
// in one line per round.
// A request lives kRequestLifeS: then the node that put it removes it
// (every node reads dumps/ every round, seconds apart), so that neither
// dumps/ nor a lease's keys grow with every hang of a long job; and a node
// forgets the requests it saw once they have left the store.
//
// Threads: ask() and pending() from any thread; the rest on the view's
// thread.
#pragma once

#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"
#include "supervisor/coordination/prefix_copy.h"
#include "supervisor/coordination/store_trust.h"

namespace xpu_timer::supervisor {

class DumpRequests {
 public:
  static constexpr double kRequestWaitS = 10;
  // How long a request stays in the store (a multiple of kRequestWaitS).
  static constexpr double kRequestLifeS = 60;

  // `store` and `trust` must outlive this.
  DumpRequests(CoordinationStore* store, KeyTrust* trust, std::string url, const std::string& root);

  // Queues a request of this node (reason: "hang", ...).
  void ask(const std::string& reason);
  // Whether a request waits to be put.
  bool pending() const;

  // The queued requests, taken to be put.
  std::vector<std::string> take();
  // Requests taken but not put (a store call failed before): first again.
  void requeue(const std::vector<std::string>& reasons);
  // Puts `reasons` as requests of `node`, made at `now_s`, then removes
  // this node's requests older than kRequestLifeS. False when a store call
  // failed: the rest of the requests are lost (a node that cares saw the
  // hang too); an old request not yet removed is removed by a later call.
  bool put(const std::vector<std::string>& reasons, int node, double now_s);
  // Requests this node remembers having seen (for tests).
  size_t remembered() const { return seen_.size(); }
  // Reads <root>/dumps/; the requests to hand on (reason, node that asked)
  // go to `asked`. `alarmed`: the nodes whose alarm stands. False when the
  // store call failed.
  bool read(const std::set<int>& alarmed, std::vector<std::pair<std::string, int>>* asked);
  // What read() asks the store first (CoordinationStore::prefetch).
  PrefixQuery next_query() const { return keys_.next_query(); }

 private:
  std::vector<std::pair<std::string, int>> admit(const std::vector<KeyValue>& kvs,
                                                 const std::set<int>& alarmed);
  // When the request under `key` was made (from its name; 0 if unreadable).
  double asked_at_s(const std::string& key) const;

  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const std::string url_;
  const std::string dir_;  // <root>/dumps/
  PrefixCopy keys_;        // the view's thread only
  mutable std::mutex mu_;
  std::vector<std::string> queued_;  // mu_
  // The view's thread only.
  std::set<std::string> seen_;
  std::deque<std::pair<std::string, double>> mine_;  // this node's requests, oldest first
  bool first_read_ = true;
  DumpRequestGate gate_;
};

}  // namespace xpu_timer::supervisor
