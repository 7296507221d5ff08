// What a job view's rounds ask of the store. It refreshes its lease a third
// of the lease's TTL apart, as etcd's own clients do, not at every round: one
// request less a second for each node of the job
// (bench/results/2026-11-29-etcd-keepalive-ttl3.md). It reads the folders
// every round reads (alarms, owners, dump requests) and the leader's key in
// one prefetch (a transaction of ranges on etcd), not one request each.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/coordination/prefetched_ranges.h"
#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using xpu_timer::testing::MemoryKeyspace;
using xpu_timer::testing::MemoryStore;

// A node's client of the keyspace whose lease has a TTL, counting refreshes.
class LeasedStore final : public CoordinationStore {
 public:
  LeasedStore(MemoryKeyspace* keyspace, int ttl_s, std::atomic<int>* keep_alives)
      : store_(keyspace, 1), ttl_s_(ttl_s), keep_alives_(keep_alives) {}
  bool put(const std::string& key, const std::string& value) override {
    return store_.put(key, value);
  }
  bool get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                  int64_t min_mod_revision, int64_t* count) override {
    return store_.get_prefix(prefix, out, revision, min_mod_revision, count);
  }
  bool create(const std::string& key, const std::string& value, bool* created) override {
    return store_.create(key, value, created);
  }
  int64_t lease() const override { return store_.lease(); }
  bool remove(const std::string& key) override { return store_.remove(key); }
  bool keep_alive() override {
    keep_alives_->fetch_add(1);
    return store_.keep_alive();
  }
  int lease_ttl_s() const override { return ttl_s_; }
  const std::string& error() const override { return store_.error(); }

 private:
  MemoryStore store_;
  const int ttl_s_;
  std::atomic<int>* const keep_alives_;
};

TEST(JobViewLease, TheLeaseIsRefreshedAThirdOfItsTtlApartNotEveryRound) {
  constexpr int kTtlS = 3;        // refreshed every second
  constexpr int kPublishMs = 50;  // twenty rounds a second
  constexpr uint64_t kRounds = 30;
  MemoryKeyspace keyspace;
  std::atomic<int> keep_alives{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto view =
      std::make_unique<JobView>(std::make_unique<LeasedStore>(&keyspace, kTtlS, &keep_alives),
                                "etcd://memory", "job", kPublishMs, [](const std::string&, int) {});
  const auto deadline = t0 + std::chrono::seconds(60);
  while (view->status().rounds < kRounds && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const uint64_t rounds = view->status().rounds;
  view.reset();  // no round after this
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_GE(rounds, kRounds) << "the view did not run its rounds";
  // The first round refreshes, then one each kTtlS / 3 s at most.
  EXPECT_GE(keep_alives.load(), 1);
  EXPECT_LE(keep_alives.load(), 1 + static_cast<int>(elapsed_s / (kTtlS / 3.0)))
      << rounds << " rounds in " << elapsed_s << " s";
}

// A node's client of the keyspace that prefetches as EtcdStore does (one
// request for all the queries), counting the requests that reach the store
// by the folder they read.
class PrefetchingStore final : public CoordinationStore {
 public:
  struct Counts {
    std::atomic<int> prefetches{0};
    std::atomic<int> alarms{0}, owners{0}, dumps{0}, leader{0}, other{0};
  };
  PrefetchingStore(MemoryKeyspace* keyspace, Counts* counts)
      : store_(keyspace, 1), counts_(counts) {}
  bool put(const std::string& key, const std::string& value) override {
    prefetched_.written(key);
    return store_.put(key, value);
  }
  bool get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                  int64_t min_mod_revision, int64_t* count) override {
    if (prefetched_.take(prefix, min_mod_revision, monotonic_ns(), out, revision, count)) {
      return true;
    }
    counted(prefix)->fetch_add(1);
    return store_.get_prefix(prefix, out, revision, min_mod_revision, count);
  }
  bool prefetch(const std::vector<PrefixQuery>& queries) override {
    counts_->prefetches.fetch_add(1);
    std::vector<PrefixAnswer> answers(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      if (!store_.get_prefix(queries[i].prefix, &answers[i].kvs, &answers[i].revision,
                             queries[i].min_mod_revision, &answers[i].count)) {
        prefetched_.clear();
        return false;
      }
    }
    prefetched_.keep(queries, std::move(answers), monotonic_ns());
    return true;
  }
  bool create(const std::string& key, const std::string& value, bool* created) override {
    prefetched_.written(key);
    return store_.create(key, value, created);
  }
  int64_t lease() const override { return store_.lease(); }
  bool remove(const std::string& key) override {
    prefetched_.written(key);
    return store_.remove(key);
  }
  bool keep_alive() override { return store_.keep_alive(); }
  int lease_ttl_s() const override { return 30; }
  const std::string& error() const override { return store_.error(); }

 private:
  std::atomic<int>* counted(const std::string& prefix) {
    for (auto [folder, n] : {std::pair{"/alarms/", &counts_->alarms},
                             {"/owners/", &counts_->owners},
                             {"/dumps/", &counts_->dumps},
                             {"/leader/node", &counts_->leader}}) {
      if (prefix.find(folder) != std::string::npos) return n;
    }
    return &counts_->other;
  }
  MemoryStore store_;
  Counts* const counts_;
  PrefetchedRanges prefetched_;
};

TEST(JobViewRequests, EveryRoundReadsItsFoldersAndTheLeaderInOnePrefetch) {
  constexpr int kPublishMs = 50;
  constexpr uint64_t kRounds = 30;
  MemoryKeyspace keyspace;
  PrefetchingStore::Counts counts;
  auto view =
      std::make_unique<JobView>(std::make_unique<PrefetchingStore>(&keyspace, &counts),
                                "etcd://memory", "job", kPublishMs, [](const std::string&, int) {});
  Snapshot local;
  local.now_ns = monotonic_ns();
  local.now_unix_s = unix_now_s();
  RankSample r;
  r.rank = 0;
  r.node = 0;
  r.registered = r.alive = r.connected = r.page_ok = true;
  r.pid = 100;
  r.heartbeat_ns = local.now_ns;
  local.ranks.push_back(r);
  view->offer(local, 0, 2, "host0", false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (view->status().rounds < kRounds && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const uint64_t rounds = view->status().rounds;
  view.reset();  // no round after this
  ASSERT_GE(rounds, kRounds) << "the view did not run its rounds";
  EXPECT_GE(counts.prefetches.load(), static_cast<int>(rounds));
  // Read by themselves only where this node wrote under them first: its
  // owner key (the first round) and its alarm (put when it changes).
  EXPECT_LE(counts.owners.load(), 2);
  EXPECT_LE(counts.alarms.load(), 2);
  EXPECT_LE(counts.dumps.load(), 2);
  EXPECT_LE(counts.leader.load(), 2);
}

}  // namespace
}  // namespace xpu_timer::supervisor
