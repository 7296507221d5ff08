// Two JobViews (two nodes' supervisors) on a real etcd: documents are
// exchanged while an alarm stands and merged, dump requests reach the other
// node once, and requests older than a view are not replayed to it.
// Skipped, with the reason, where etcd is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "supervisor/job_view.h"
#include "supervisor/rank_sampler.h"
#include "tests/harness/etcd_server.h"

namespace xpu_timer::supervisor {
namespace {

using std::chrono::seconds;
using xpu_timer::testing::EtcdServer;
using xpu_timer::testing::wait_until;

constexpr int kPublishMs = 100;

// One registered rank of `node`, with an AllReduce in flight for `ago_s`.
Snapshot node_snapshot(int rank, int node, double ago_s) {
  Snapshot s;
  s.now_ns = monotonic_now_ns();
  s.now_unix_s = unix_now_s();
  RankSample r;
  r.rank = rank;
  r.node = node;
  r.registered = r.alive = r.connected = r.page_ok = true;
  r.pid = 100 + rank;
  r.heartbeat_ns = s.now_ns;
  r.issued_total = 6;
  r.completed_total = 5;
  r.inflight_count = 1;
  r.oldest_inflight.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  r.oldest_inflight.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  r.oldest_inflight.seq = 6;
  r.oldest_inflight.launch_ns = s.now_ns - static_cast<uint64_t>(ago_s * 1e9);
  s.ranks.push_back(r);
  return s;
}

struct Requests {
  std::mutex mu;
  std::vector<std::pair<std::string, int>> got;
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return got.size();
  }
};

class JobViewProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (EtcdServer::binary().empty()) GTEST_SKIP() << EtcdServer::kEtcdMissing;
    char tmpl[] = "/tmp/xpu-jobview-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    etcd_ = std::make_unique<EtcdServer>(dir_);
    ASSERT_TRUE(etcd_->start(dir_ + "/data"));
  }
  void TearDown() override {
    views_.clear();
    etcd_.reset();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  JobView& view(Requests* requests) {
    std::string error;
    auto store = open_coordination_store(etcd_->url(), 10, &error);
    EXPECT_NE(store, nullptr) << error;
    views_.push_back(std::make_unique<JobView>(std::move(store), etcd_->url(), "job", kPublishMs,
                                               [requests](const std::string& reason, int node) {
                                                 std::lock_guard<std::mutex> lock(requests->mu);
                                                 requests->got.emplace_back(reason, node);
                                               }));
    return *views_.back();
  }

  std::string dir_;
  std::unique_ptr<EtcdServer> etcd_;
  std::vector<std::unique_ptr<JobView>> views_;
};

TEST_F(JobViewProcessTest, AnAlarmedNodeIsMergedAndItsDumpRequestReachesTheOtherOnce) {
  Requests on0, on1;
  JobView& node0 = view(&on0);
  // A request made before node 1's view existed is history, not news.
  node0.offer(node_snapshot(0, 0, 0.0), 0, 2, "host0", false);
  node0.request_dumps("old");
  ASSERT_TRUE(wait_until([&] { return node0.status().rounds >= 3; }, seconds(30)));
  JobView& node1 = view(&on1);

  // Rank 0 (node 0) past half of a 3 s timeout: node 0 raises the alarm,
  // and node 1 merges its document of that moment.
  const auto rank1_snapshot = [] { return node_snapshot(1, 1, 0.0); };
  const auto in_flight_s = [](const Snapshot& m) {
    return static_cast<double>(m.now_ns - m.ranks[0].oldest_inflight.launch_ns) / 1e9;
  };
  Snapshot merged;
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(node_snapshot(0, 0, 2.0), 0, 2, "host0", true);
        node1.offer(rank1_snapshot(), 1, 2, "host1", false);
        merged = node1.merge(rank1_snapshot());
        return node1.status().alarm && merged.ranks.size() == 2 && in_flight_s(merged) >= 2.0;
      },
      seconds(30)));
  EXPECT_EQ(node1.status().nodes, std::vector<int>{0});
  EXPECT_EQ(merged.ranks[0].node, 0);
  // Rebased: as old as node 0 said, plus its document's age (merged only
  // while at most kFreshS old).
  EXPECT_LE(in_flight_s(merged), 2.0 + JobView::kFreshS);

  node0.request_dumps("hang");
  ASSERT_TRUE(wait_until([&] { return on1.size() >= 1; }, seconds(30)));
  // A few more rounds: it must not come again.
  const uint64_t rounds = node1.status().rounds;
  ASSERT_TRUE(wait_until([&] { return node1.status().rounds >= rounds + 5; }, seconds(30)));
  {
    std::lock_guard<std::mutex> lock(on1.mu);
    ASSERT_EQ(on1.got.size(), 1u);
    EXPECT_EQ(on1.got[0].first, "hang");
    EXPECT_EQ(on1.got[0].second, 0);
  }
  EXPECT_EQ(on0.size(), 0u);  // its own requests are not handed back to it
}

// Without an alarm the nodes stop exchanging, and a document older than
// kFreshS is no longer merged: a quiet node judges its own ranks.
TEST_F(JobViewProcessTest, WithoutAnAlarmStaleDocumentsAreNotMerged) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  JobView& node1 = view(&ignored);
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(node_snapshot(0, 0, 0.0), 0, 2, "host0", false);
        node1.offer(node_snapshot(1, 1, 0.0), 1, 2, "host1", false);
        return node1.status().nodes == std::vector<int>{0};
      },
      seconds(30)));
  // Fresh, it is merged; quiet from now on, it ages past kFreshS and is not.
  ASSERT_TRUE(wait_until([&] { return node1.merge(node_snapshot(1, 1, 0.0)).ranks.size() == 2; },
                         seconds(30)));
  ASSERT_TRUE(wait_until([&] { return node1.merge(node_snapshot(1, 1, 0.0)).ranks.size() == 1; },
                         seconds(30)));
  EXPECT_FALSE(node1.status().alarm);
}

// With the store gone and a dump request pending, the view retries once per
// publish period, not in a loop (a refused connection fails at once).
TEST_F(JobViewProcessTest, AFailingStoreIsRetriedOncePerPeriodWithARequestPending) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  node0.offer(node_snapshot(0, 0, 0.0), 0, 1, "host0", false);
  ASSERT_TRUE(wait_until([&] { return node0.status().connected; }, seconds(30)));
  etcd_->stop();
  node0.request_dumps("hang");
  const uint64_t failures_before = node0.status().failures;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      wait_until([&] { return node0.status().failures >= failures_before + 3; }, seconds(30)));
  const JobViewStatus st = node0.status();
  const double periods =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1000.0 /
      kPublishMs;
  EXPECT_FALSE(st.connected);
  EXPECT_LE(static_cast<double>(st.failures - failures_before), periods + 2) << st.failures;
}

}  // namespace
}  // namespace xpu_timer::supervisor
