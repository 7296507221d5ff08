// The job view refreshes its lease a third of the lease's TTL apart, as
// etcd's own clients do, not at every round: one request less a second for
// each node of the job (bench/results/2026-11-29-etcd-keepalive-ttl3.md).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/coordination/job_view.h"
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

}  // namespace
}  // namespace xpu_timer::supervisor
