// Two JobViews (two nodes' supervisors) on a real etcd: documents are
// exchanged while an alarm stands and merged, in a steady hang only the
// stamps move (a document is read again only when it changes, or when etcd
// lost its data), a node that stops is dropped, dump requests reach the
// other node once, and requests older than a view are not replayed to it.
// Skipped, with the reason, where etcd is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervisor/analysis/hang_detector.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/coordination/node_progress.h"
#include "supervisor/ranks/rank_sampler.h"
#include "tests/harness/etcd_server.h"

namespace xpu_timer::supervisor {
namespace {

// The test's own clients (a forger, a reader checking the store) set up and
// check what the supervisors see; on a loaded machine etcd may answer them
// after the supervisors' 2 s, which is not what a test checks.
constexpr std::chrono::milliseconds kSetupCallTimeout{20000};

using std::chrono::seconds;
using xpu_timer::testing::EtcdServer;
using xpu_timer::testing::wait_until;

constexpr int kPublishMs = 100;

// One registered rank of `node`, with an AllReduce in flight for `ago_s`.
Snapshot node_snapshot(int rank, int node, double ago_s) {
  Snapshot s;
  s.now_ns = monotonic_ns();
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

// A node in a steady hang: its rank's AllReduce was launched `ago_s` before
// the node was made and never ends; only the clocks and the heartbeat move.
class SteadyNode {
 public:
  SteadyNode(int rank, int node, double ago_s)
      : base_(node_snapshot(rank, node, ago_s)), made_(std::chrono::steady_clock::now()) {}
  Snapshot now() const {
    Snapshot s = base_;
    s.now_ns = monotonic_ns();
    s.now_unix_s = unix_now_s();
    for (RankSample& r : s.ranks) r.heartbeat_ns = s.now_ns;
    return s;
  }
  // Something else moves: a new collective is issued.
  void issue() {
    for (RankSample& r : base_.ranks) ++r.issued_total;
  }
  double age_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - made_).count();
  }

 private:
  Snapshot base_;
  std::chrono::steady_clock::time_point made_;
};

double in_flight_s(const Snapshot& m, size_t i) {
  return static_cast<double>(m.now_ns - m.ranks[i].oldest_inflight.launch_ns) / 1e9;
}

struct Requests {
  std::mutex mu;
  std::vector<std::pair<std::string, int>> got;
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return got.size();
  }
};

struct Mismatches {
  std::mutex mu;
  std::vector<std::pair<Mismatch, int>> got;
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

  JobView& view(Requests* requests, Mismatches* mismatches = nullptr) {
    std::string error;
    auto store = open_coordination_store(etcd_->url(), 10, &error);
    EXPECT_NE(store, nullptr) << error;
    views_.push_back(std::make_unique<JobView>(
        std::move(store), etcd_->url(), "job", kPublishMs,
        [requests](const std::string& reason, int node) {
          std::lock_guard<std::mutex> lock(requests->mu);
          requests->got.emplace_back(reason, node);
        },
        [mismatches](Mismatch m, int from) {
          if (mismatches == nullptr) return;
          std::lock_guard<std::mutex> lock(mismatches->mu);
          mismatches->got.emplace_back(std::move(m), from);
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

// Nodes start at different times. A node that learnt of one other node
// before the third published must not wait the quiet refresh (2 minutes) to
// learn of it: the nodes exchange until every rank of the world is known.
TEST_F(JobViewProcessTest, ANodeThatStartsLastIsLearntWithoutWaitingForTheQuietRefresh) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  JobView& node1 = view(&ignored);
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(node_snapshot(0, 0, 0.0), 0, 3, "host0", false);
        node1.offer(node_snapshot(1, 1, 0.0), 1, 3, "host1", false);
        return node0.status().nodes == std::vector<int>{1};
      },
      seconds(30)));
  JobView& node2 = view(&ignored);
  // Far less than kQuietRefreshS: the test's own bound is 30 s.
  static_assert(JobView::kQuietRefreshS > 60);
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(node_snapshot(0, 0, 0.0), 0, 3, "host0", false);
        node1.offer(node_snapshot(1, 1, 0.0), 1, 3, "host1", false);
        node2.offer(node_snapshot(2, 2, 0.0), 2, 3, "host2", false);
        return node0.status().nodes == std::vector<int>{1, 2} &&
               node1.status().nodes == std::vector<int>{0, 2};
      },
      seconds(30)))
      << "node 0 knows " << node0.status().nodes.size() << " other node(s)";
  EXPECT_FALSE(node0.status().alarm);
  // Then quiet: every rank known, the documents are no longer read.
  const uint64_t read = node0.status().docs_read;
  const uint64_t rounds = node0.status().rounds;
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(node_snapshot(0, 0, 0.0), 0, 3, "host0", false);
        return node0.status().rounds >= rounds + 5;
      },
      seconds(30)));
  EXPECT_EQ(node0.status().docs_read, read);
}

// The weak point of exchanging whole documents: in a steady hang each node
// read every node's document every round. Now, after the first exchange,
// only stamps are read, and the merged snapshot still has node 0's rank
// with fresh times (older than kFreshS, its document alone would not be
// merged); a document that changes is read again, once.
TEST_F(JobViewProcessTest, InASteadyAlarmOnlyAChangedDocumentIsReadAgain) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  JobView& node1 = view(&ignored);
  SteadyNode n0(0, 0, 2.0), n1(1, 1, 0.0);
  const auto offer = [&] {
    node0.offer(n0.now(), 0, 2, "host0", true);
    node1.offer(n1.now(), 1, 2, "host1", false);
  };
  Snapshot merged;
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        merged = node1.merge(n1.now());
        return node1.status().alarm && merged.ranks.size() == 2;
      },
      // A bound, not a wait: a sanitized build on two loaded cores once took
      // longer than 30 s for the first exchange.
      seconds(90)))
      << "alarm " << node1.status().alarm << ", merged " << merged.ranks.size() << " rank(s), "
      << node1.status().rounds << " rounds, last error '" << node1.status().last_error << "'";
  const JobViewStatus first = node1.status();
  EXPECT_GE(first.docs_read, 1u);
  EXPECT_EQ(first.full_reads, 1u);

  // Long enough for the document read to be older than kFreshS.
  const auto rounds = static_cast<uint64_t>((JobView::kFreshS + 1) * 1000 / kPublishMs);
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        return node1.status().rounds >= first.rounds + rounds;
      },
      seconds(60)));
  const double elapsed_s = n0.age_s();
  merged = node1.merge(n1.now());
  const JobViewStatus steady = node1.status();
  EXPECT_EQ(steady.docs_read, first.docs_read) << "documents read again in a steady hang";
  EXPECT_EQ(steady.full_reads, 1u);
  EXPECT_EQ(steady.nodes, std::vector<int>{0});
  ASSERT_EQ(merged.ranks.size(), 2u) << "node 0 not merged: its times are not fresh";
  EXPECT_EQ(merged.ranks[0].node, 0);
  // Node 0's AllReduce, launched 2 s before n0 was made, as old on node 1's
  // clock as it is (less at most the stamp's age); its heartbeat fresh.
  EXPECT_LE(in_flight_s(merged, 0), 2.0 + elapsed_s + 0.05);
  EXPECT_GE(in_flight_s(merged, 0), 2.0 + elapsed_s - JobView::kFreshS);
  EXPECT_LE(static_cast<double>(merged.now_ns - merged.ranks[0].heartbeat_ns) / 1e9,
            JobView::kFreshS);

  // Node 0 issues a collective: its document is read again, then no more.
  n0.issue();
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        merged = node1.merge(n1.now());
        return merged.ranks.size() == 2 && merged.ranks[0].issued_total == 7;
      },
      seconds(30)));
  const JobViewStatus changed = node1.status();
  EXPECT_GT(changed.docs_read, steady.docs_read);
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        return node1.status().rounds >= changed.rounds + 10;
      },
      seconds(30)));
  EXPECT_EQ(node1.status().docs_read, changed.docs_read);
}

// A node whose document cannot be read (written by something else, or
// another build) is left out, warned about once, and does not make every
// read take every document again.
TEST_F(JobViewProcessTest, AnUnreadableDocumentIsNotReadAgainAndAgain) {
  std::string error;
  // Nobody keeps this writer's lease alive: its TTL outlasts the test (with
  // 10 s, a slow machine saw node 5's keys expire mid-test, and the change
  // of the listing was, rightly, read).
  std::unique_ptr<CoordinationStore> other =
      open_coordination_store(etcd_->url(), 600, &error, kSetupCallTimeout);
  ASSERT_NE(other, nullptr) << error;
  NodeProgress five;
  five.node = 5;
  five.host = "host5";
  five.world_size = 6;
  five.snapshot = node_snapshot(5, 5, 0.0);
  ASSERT_TRUE(other->put("/xpu_timer/job/nodes/5", "not a document")) << other->error();
  ASSERT_TRUE(other->put("/xpu_timer/job/stamps/5", node_stamp_text(five))) << other->error();

  Requests ignored;
  JobView& node0 = view(&ignored);
  JobView& node1 = view(&ignored);
  SteadyNode n0(0, 0, 2.0), n1(1, 1, 0.0);
  const auto offer = [&] {
    node0.offer(n0.now(), 0, 6, "host0", true);
    node1.offer(n1.now(), 1, 6, "host1", false);
  };
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        return node1.status().nodes == std::vector<int>{0};
      },
      seconds(30)));
  const JobViewStatus before = node1.status();
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        return node1.status().rounds >= before.rounds + 10;
      },
      seconds(30)));
  const JobViewStatus after = node1.status();
  EXPECT_EQ(after.full_reads, before.full_reads);
  EXPECT_EQ(after.docs_read, before.docs_read);
  EXPECT_EQ(after.nodes, std::vector<int>{0});
}

// A node whose supervisor stopped: while its keys stay (its lease runs) and
// after they are gone, its ranks stay in the merge silent (not judged on
// its last news) and the view names it among the nodes not heard from.
TEST_F(JobViewProcessTest, ANodeThatStopsIsSilentBeforeAndAfterItsKeysAreGone) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  JobView& node1 = view(&ignored);
  SteadyNode n0(0, 0, 2.0), n1(1, 1, 0.0);
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(n0.now(), 0, 2, "host0", true);
        node1.offer(n1.now(), 1, 2, "host1", true);
        return node1.merge(n1.now()).ranks.size() == 2;
      },
      seconds(30)));
  views_.front().reset();  // node 0's supervisor is gone; its keys stay until its lease ends
  Snapshot merged;
  ASSERT_TRUE(wait_until(
      [&] {
        node1.offer(n1.now(), 1, 2, "host1", true);
        merged = node1.merge(n1.now());
        return merged.ranks.size() == 2 && !merged.ranks[0].page_ok;
      },
      seconds(60)));
  EXPECT_TRUE(merged.ranks[0].registered);
  EXPECT_EQ(merged.ranks[0].inflight_count, 0u);
  // Silent: not judged on its old news, and its node said not heard from.
  EXPECT_GT(merged.ranks[0].silent_s, JobView::kFreshS);
  EXPECT_EQ(classify_snapshot(merged, 300).ranks[0].state, RankState::kSilent);
  JobViewStatus st = node1.status();
  ASSERT_EQ(st.silent_nodes.size(), 1u);
  EXPECT_EQ(st.silent_nodes[0].node, 0);
  EXPECT_EQ(st.silent_nodes[0].host, "host0");
  EXPECT_GT(st.silent_nodes[0].silent_s, JobView::kFreshS);
  // Its lease ends: its keys are gone, what it said with them; it stays,
  // silent, its ranks never "never registered".
  ASSERT_TRUE(wait_until(
      [&] {
        node1.offer(n1.now(), 1, 2, "host1", true);
        merged = node1.merge(n1.now());
        st = node1.status();
        return st.nodes.empty() && st.silent_nodes.size() == 1 && st.silent_nodes[0].keys_gone;
      },
      seconds(60)));
  ASSERT_EQ(merged.ranks.size(), 2u);
  EXPECT_GT(merged.ranks[0].silent_s, JobView::kFreshS);
  EXPECT_TRUE(merged.ranks[0].registered);
  // Rank 1's AllReduce, launched > 3 s ago, never started: with a 1 s
  // timeout rank 1 is stuck, and the verdict says what it cannot see.
  const HangReport r = classify_snapshot(merged, 1.0);
  ASSERT_TRUE(r.hung);
  EXPECT_NE(r.summary.find("; node 0 not heard from for "), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find(" s (rank 0)"), std::string::npos) << r.summary;
}

// etcd restarted empty (its revision starts again from 1): the view reads
// every document again, and so gets a document node 0 changed meanwhile.
TEST_F(JobViewProcessTest, AnEtcdThatLostItsDataIsReadInFullAgain) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  JobView& node1 = view(&ignored);
  SteadyNode n0(0, 0, 2.0), n1(1, 1, 0.0);
  const auto offer = [&] {
    node0.offer(n0.now(), 0, 2, "host0", true);
    node1.offer(n1.now(), 1, 2, "host1", false);
  };
  // Enough rounds that etcd's revision is well past where a new one starts.
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        return node1.merge(n1.now()).ranks.size() == 2 && node1.status().rounds >= 30;
      },
      seconds(30)));
  const uint64_t full_reads = node1.status().full_reads;
  const int port = etcd_->client_port();
  etcd_->stop();
  n0.issue();
  ASSERT_TRUE(etcd_->start(dir_ + "/fresh"));
  ASSERT_EQ(etcd_->client_port(), port) << "etcd had to move to other ports";
  Snapshot merged;
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        merged = node1.merge(n1.now());
        return merged.ranks.size() == 2 && merged.ranks[0].issued_total == 7;
      },
      seconds(60)));
  EXPECT_GT(node1.status().full_reads, full_reads);
  EXPECT_TRUE(node1.status().connected);
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

// The fingerprint exchange through a real etcd: each node writes what it
// issued since its last window, the store keeps its last few, a node reads
// its peer's, and a mismatch published by one node reaches both, once.
TEST_F(JobViewProcessTest, FingerprintWindowsReachThePeerAndAMismatchReachesEveryNode) {
  constexpr uint64_t kComm = 0xabcdefull;
  const auto snapshot = [](int node) {
    Snapshot s = node_snapshot(node, node, 0.0);
    proto::CommSlot c{};
    c.comm_hash = kComm;
    c.nranks = 2;
    s.ranks[0].comms = {c};
    return s;
  };
  // Node `node`'s window of collectives [from, to], rank `node` its member.
  const auto window = [](int node, uint64_t from, uint64_t to, uint64_t odd_seq) {
    NodeFingerprints f;
    f.node = node;
    CommWindow w;
    w.comm_hash = kComm;
    w.nranks = 2;
    w.members = {node};
    for (uint64_t seq = from; seq <= to; ++seq) {
      Fingerprint fp;
      fp.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
      fp.count = seq == odd_seq ? 2048 : 1024;
      w.runs.push_back({seq, 1, fp});
    }
    f.comms = {w};
    return f;
  };
  Requests ignored;
  Mismatches on0, on1;
  JobView& node0 = view(&ignored, &on0);
  JobView& node1 = view(&ignored, &on1);
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(snapshot(0), 0, 2, "host0", false);
        node1.offer(snapshot(1), 1, 2, "host1", false);
        return node0.status().nodes == std::vector<int>{1} &&
               node1.status().nodes == std::vector<int>{0};
      },
      seconds(30)));
  // Node 0 offers six windows of 10 collectives; node 1 reads them.
  std::set<uint64_t> seen_by_1;
  for (uint64_t i = 0; i < 6; ++i) {
    const uint64_t rounds = node0.status().rounds;
    node0.offer_fingerprints(window(0, 10 * i + 1, 10 * i + 10, 0), {kComm});
    ASSERT_TRUE(wait_until([&] { return node0.status().rounds >= rounds + 2; }, seconds(30)));
  }
  ASSERT_TRUE(wait_until(
      [&] {
        node1.offer_fingerprints(window(1, 1, 60, 0), {kComm});
        for (const NodeFingerprints& f : node1.take_peer_fingerprints()) {
          EXPECT_EQ(f.node, 0);
          for (const auto& [comm, last] : f.last_seqs()) seen_by_1.insert(last);
        }
        return seen_by_1.count(60) != 0;
      },
      seconds(30)));
  EXPECT_EQ(node1.status().fingerprint_peers, std::vector<int>{0});
  // The store holds node 0's last windows only.
  std::string error;
  auto store = open_coordination_store(etcd_->url(), 10, &error, kSetupCallTimeout);
  ASSERT_NE(store, nullptr) << error;
  std::vector<KeyValue> kvs;
  ASSERT_TRUE(store->get_prefix("/xpu_timer/job/fingerprints/0/", &kvs, nullptr));
  EXPECT_EQ(kvs.size(), JobView::kFingerprintWindowsKept);

  // Node 1 found collective #25 disagreeing: node 0 said 1024, node 1 2048.
  node1.publish_mismatch(kComm, 25, window(1, 21, 30, 25));
  ASSERT_TRUE(wait_until([&] { return on0.size() >= 1 && on1.size() >= 1; }, seconds(30)));
  const uint64_t rounds = node0.status().rounds;
  ASSERT_TRUE(wait_until([&] { return node0.status().rounds >= rounds + 5; }, seconds(30)));
  for (Mismatches* m : {&on0, &on1}) {
    std::lock_guard<std::mutex> lock(m->mu);
    ASSERT_EQ(m->got.size(), 1u) << "once";
    const Mismatch& x = m->got[0].first;
    EXPECT_EQ(m->got[0].second, 1);
    EXPECT_EQ(x.seq, 25u);
    EXPECT_EQ(x.kind, "count");
    EXPECT_EQ(x.ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(x.nodes, (std::map<int, int>{{0, 0}, {1, 1}}));
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor

namespace xpu_timer::supervisor {
namespace {

// A writer of the job's prefix that is not one of its supervisors: its own
// client, its own lease.
class Forger {
 public:
  explicit Forger(const std::string& url) {
    std::string error;
    store_ = open_coordination_store(url, 10, &error, kSetupCallTimeout);
    EXPECT_NE(store_, nullptr) << error;
  }
  void put(const std::string& key, const std::string& value) {
    ASSERT_TRUE(store_->put("/xpu_timer/job/" + key, value)) << store_->error();
    keys_.push_back("/xpu_timer/job/" + key);
  }
  void claim(const std::string& key) {
    bool created = false;
    ASSERT_TRUE(store_->create("/xpu_timer/job/" + key, "forger", &created)) << store_->error();
    keys_.push_back("/xpu_timer/job/" + key);
  }
  // Its lease lapses 10 s after the last call (and the next call puts its
  // keys again, as new): a writer that must not change its keys keeps it.
  void keep_alive() { ASSERT_TRUE(store_->keep_alive()) << store_->error(); }
  void remove_all() {
    for (const std::string& k : keys_) ASSERT_TRUE(store_->remove(k)) << store_->error();
    keys_.clear();
  }

 private:
  std::unique_ptr<CoordinationStore> store_;
  std::vector<std::string> keys_;
};

// The probe's forged document: node `node` (not in the job), `n` ranks from
// 0 (the world has 2), every one stuck in an AllReduce for an hour, its
// clock an hour ahead.
NodeProgress forged_document(int node, int n) {
  NodeProgress p;
  p.node = node;
  p.host = "forger";
  p.world_size = 2;
  p.snapshot.now_ns = monotonic_ns();
  p.snapshot.now_unix_s = unix_now_s() + 3600;
  for (int r = 0; r < n; ++r) {
    Snapshot one = node_snapshot(r, node, 3600.0);
    p.snapshot.ranks.push_back(one.ranks[0]);
  }
  return p;
}

// Forged documents, stamps, alarms and dump requests, from a node outside
// the job and in the name of a real node, under the forger's own lease:
// the verdict stays the real nodes', nothing is dumped, and nothing of it
// is said more than once per key.
TEST_F(JobViewProcessTest, AForgerInTheJobsPrefixChangesNeitherTheVerdictNorTheDumps) {
  Requests on0, on1;
  JobView& node0 = view(&on0);
  JobView& node1 = view(&on1);
  SteadyNode n0(0, 0, 2.0), n1(1, 1, 0.0);
  const auto offer = [&] {
    node0.offer(n0.now(), 0, 2, "host0", true);
    node1.offer(n1.now(), 1, 2, "host1", false);
  };
  ASSERT_TRUE(wait_until(
      [&] {
        offer();
        return node0.merge(n0.now()).ranks.size() == 2 && node0.status().nodes.size() == 1;
      },
      seconds(30)));

  Forger forger(etcd_->url());
  const NodeProgress outsider = forged_document(7, 1004);
  forger.put("nodes/7", node_progress_text(outsider));
  forger.put("stamps/7", node_stamp_text(outsider));
  forger.put("alarms/7", "1");
  NodeProgress as_node1 = forged_document(1, 1);
  as_node1.snapshot.ranks[0].rank = 1;
  forger.put("nodes/1", node_progress_text(as_node1));
  forger.put("stamps/1", node_stamp_text(as_node1));
  forger.put("owners/7", "forger");
  for (int i = 0; i < 20; ++i) {
    char key[64];
    std::snprintf(key, sizeof(key), "dumps/%013lld-%d",
                  static_cast<long long>(unix_now_s() * 1000) + i, i % 2 == 0 ? 9 : 1);
    forger.put(key, nlohmann::json{{"reason", "hang"}, {"node", i % 2 == 0 ? 9 : 1}}.dump());
  }
  // Many rounds of both nodes (the real node 1 rewrites its stamp, and its
  // document once it is found changed).
  const uint64_t rounds = node0.status().rounds;
  n1.issue();
  for (;;) {
    offer();
    const JobViewStatus before = node0.status();
    const Snapshot merged = node0.merge(n0.now(), 3.0);
    const JobViewStatus after = node0.status();
    // On a loaded machine a store call can time out: for that round the
    // node decides over its own ranks alone, which is not the forger's
    // doing. Node 1's rank may be missing only then.
    const bool store_failed =
        !before.connected || !after.connected || after.failures != before.failures;
    if (!store_failed || merged.ranks.size() != 1) {
      ASSERT_EQ(merged.ranks.size(), 2u) << "store failures: " << after.failures;
      EXPECT_EQ(merged.ranks[1].rank, 1);
    }
    if (node0.status().rounds >= rounds + 20) {
      // Node 1's own news: its rank has issued one more, nothing stuck.
      ASSERT_TRUE(wait_until(
          [&] {
            offer();
            const Snapshot m = node0.merge(n0.now(), 3.0);
            return m.ranks.size() == 2 && m.ranks[1].issued_total == 7 &&
                   in_flight_s(m, 1) < 600;
          },
          seconds(30)));
      break;
    }
    ASSERT_TRUE(wait_until([&] { return node0.status().rounds > rounds; }, seconds(30)));
  }
  EXPECT_EQ(node0.status().nodes, std::vector<int>{1});
  EXPECT_EQ(on0.size(), 0u);
  EXPECT_EQ(on1.size(), 0u);
}

// One round of node 0, in an alarm, while node 1's writer stamps: true once
// node 1's rank is merged.
bool merged_with_node1(JobView& node0, SteadyNode& n0, const std::function<void()>& stamp,
                       Snapshot* merged) {
  stamp();
  node0.offer(n0.now(), 0, 2, "host0", true);
  *merged = node0.merge(n0.now());
  return merged->ranks.size() == 2 && merged->ranks[1].registered;
}

// A forger that holds the slot of a node that never started (and so looks
// like that node): what it says lasts no longer than its keys (the node is
// then one not heard from).
TEST_F(JobViewProcessTest, WhatADeletedNodeSaidLeavesWithItsKeys) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  SteadyNode n0(0, 0, 2.0);
  Forger forger(etcd_->url());
  // A world of 2, node 1 never started: the forger claims it.
  NodeProgress node1 = forged_document(1, 1);
  node1.snapshot.ranks[0].rank = 1;
  node1.snapshot.now_unix_s = unix_now_s();
  forger.claim("owners/1");
  forger.put("nodes/1", node_progress_text(node1));
  const auto stamp = [&] {
    node1.snapshot.now_unix_s = unix_now_s();
    node1.snapshot.now_ns = monotonic_ns();
    forger.put("stamps/1", node_stamp_text(node1));
  };
  Snapshot merged;
  ASSERT_TRUE(wait_until(
      [&] { return merged_with_node1(node0, n0, stamp, &merged); },
      seconds(30)));
  forger.remove_all();
  // What it said goes; the node it claimed to be stays, not heard from.
  ASSERT_TRUE(wait_until(
      [&] {
        node0.offer(n0.now(), 0, 2, "host0", true);
        merged = node0.merge(n0.now());
        return merged.ranks.size() == 2 && merged.ranks[1].silent_s > 0 &&
               merged.ranks[1].inflight_count == 0 && node0.status().nodes.empty();
      },
      seconds(30)));
}

// A node's document read before its owner key (a reader that read the owners,
// then the node claimed its key and published, then the reader read the
// document: what a loaded store once gave the steady-alarm test): refused
// then, merged once the owner is known, although the document never changes
// again (a steady hang) and so is never read again.
TEST_F(JobViewProcessTest, ADocumentReadBeforeItsOwnerKeyCountsOnceTheOwnerIsKnown) {
  Requests ignored;
  JobView& node0 = view(&ignored);
  SteadyNode n0(0, 0, 2.0);
  Forger node1_writer(etcd_->url());  // node 1's supervisor, as far as the store can tell
  NodeProgress node1 = forged_document(1, 1);
  node1.host = "host1";
  node1.snapshot.ranks[0].rank = 1;
  node1.snapshot.now_unix_s = unix_now_s();
  const auto stamp = [&] {
    node1.snapshot.now_unix_s = unix_now_s();
    node1.snapshot.now_ns = monotonic_ns();
    node1_writer.put("stamps/1", node_stamp_text(node1));
    node1_writer.keep_alive();  // else its keys are put again, and read again, as new
  };
  node1_writer.put("nodes/1", node_progress_text(node1));  // before its owner key
  const uint64_t start = node0.status().rounds;
  ASSERT_TRUE(wait_until(
      [&] {
        stamp();
        node0.offer(n0.now(), 0, 2, "host0", true);
        return node0.status().rounds >= start + 3 && node0.status().docs_read >= 1;
      },
      seconds(30)));
  Snapshot merged = node0.merge(n0.now());
  ASSERT_EQ(merged.ranks.size(), 1u) << "a document without its owner key was merged";
  node1_writer.claim("owners/1");  // the same lease the document was put under
  ASSERT_TRUE(wait_until(
      [&] { return merged_with_node1(node0, n0, stamp, &merged); },
      seconds(30)))
      << "node 1's document, unchanged since its owner key appeared, never merged ("
      << node0.status().docs_read << " document(s) read, " << node0.status().full_reads
      << " full read(s))";
  EXPECT_EQ(node0.status().nodes, std::vector<int>{1});
}

}  // namespace
}  // namespace xpu_timer::supervisor
