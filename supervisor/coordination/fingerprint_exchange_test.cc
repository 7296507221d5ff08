// FingerprintExchange (fingerprint_exchange.h) on a store in memory: a
// window put and read by the peer that shares its communicator, and a disagreement completed from
// every node's window and handed once to every node (its owner's only).
#include "supervisor/coordination/fingerprint_exchange.h"

#include <gtest/gtest.h>

#include "common/op_names.h"
#include "common/status_page_layout.h"
#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";
constexpr uint64_t kComm = 0x1a2b;

// Node `node`'s window: its two ranks issued collectives [1, 4] of kComm,
// the AllReduce of `count` elements.
NodeFingerprints window(int node, uint64_t count) {
  CommWindow c;
  c.comm_hash = kComm;
  c.nranks = 4;
  c.members = {2 * node, 2 * node + 1};
  CommWindow::Run run;
  run.first_seq = 1;
  run.count = 4;
  run.fp.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  run.fp.count = count;
  c.runs.push_back(run);
  NodeFingerprints f;
  f.node = node;
  f.comms.push_back(c);
  return f;
}

// The progress of node `node` as the other nodes read it: its ranks in kComm.
NodeProgress member(int node) {
  NodeProgress p;
  p.node = node;
  RankSample s;
  s.rank = 2 * node;
  proto::CommSlot slot{};
  slot.comm_hash = kComm;
  s.comms.push_back(slot);
  p.snapshot.ranks.push_back(s);
  return p;
}

struct Node {
  Node(MemoryKeyspace* keyspace, int node, int64_t lease)
      : node(node),
        store(keyspace, lease),
        trust(&store, "etcd://memory", kRoot),
        exchange(&store, &trust, kRoot, &stop,
                 [this](Mismatch m, int from) { got.emplace_back(std::move(m), from); }) {
    trust.set_job(job_shape(4, 2));
  }
  int node;
  std::atomic<bool> stop{false};
  MemoryStore store;
  KeyTrust trust;
  FingerprintExchange exchange;
  std::vector<std::pair<Mismatch, int>> got;
};

// Two nodes that know each other's owner.
class FingerprintExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(a.trust.read_owners(0, "host-a"));
    ASSERT_TRUE(b.trust.read_owners(1, "host-b"));
    ASSERT_TRUE(a.trust.read_owners(0, "host-a"));
  }
  MemoryKeyspace keyspace;
  Node a{&keyspace, 0, 100};
  Node b{&keyspace, 1, 200};
};

TEST_F(FingerprintExchangeTest, AWindowReachesThePeerThatSharesItsCommunicator) {
  a.exchange.offer(window(0, 8), {kComm});
  ASSERT_TRUE(a.exchange.round(0, {member(1)}));
  int64_t revision = 0;
  EXPECT_EQ(keyspace.range(kRoot + "/fingerprints/0/", 0, &revision).size(), 1u);
  b.exchange.offer(window(1, 8), {kComm});
  ASSERT_TRUE(b.exchange.round(1, {member(0)}));
  EXPECT_EQ(b.exchange.peers(), (std::vector<int>{0}));
  const std::vector<NodeFingerprints> peer = b.exchange.take_peer_windows();
  ASSERT_FALSE(peer.empty());
  EXPECT_EQ(peer[0].node, 0);
  EXPECT_EQ(peer[0].comms[0].runs[0].fp.count, 8u);
  EXPECT_TRUE(b.exchange.take_peer_windows().empty());
}

TEST_F(FingerprintExchangeTest, AMismatchIsCompletedAndHandedToEveryNodeOnce) {
  a.exchange.offer(window(0, 8), {kComm});
  ASSERT_TRUE(a.exchange.round(0, {member(1)}));
  b.exchange.publish_mismatch(kComm, 3, window(1, 16));
  EXPECT_TRUE(b.exchange.pending());
  ASSERT_TRUE(b.exchange.round(1, {member(0)}));
  EXPECT_FALSE(b.exchange.pending());

  int64_t revision = 0;
  std::vector<KeyValue> alarms = keyspace.range(kRoot + "/alarms/", 0, &revision);
  ASSERT_EQ(alarms.size(), 1u);
  KeyValue forged = alarms[0];
  forged.key += "0";
  forged.lease = 666;
  alarms.push_back(forged);
  for (Node* n : {&a, &b}) {
    for (int i = 0; i < 2; ++i) n->exchange.note_mismatches(alarms);
    ASSERT_EQ(n->got.size(), 1u);
    EXPECT_EQ(n->got[0].second, 1);
    EXPECT_EQ(n->got[0].first.seq, 3u);
    EXPECT_EQ(n->got[0].first.ranks, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(n->got[0].first.groups.size(), 2u);
  }
}

TEST_F(FingerprintExchangeTest, AMismatchNotPublishedForAFailedStoreWaitsForTheNextRound) {
  b.exchange.publish_mismatch(kComm, 3, window(1, 16));
  b.store.fail = true;
  EXPECT_FALSE(b.exchange.round(1, {}));
  EXPECT_TRUE(b.exchange.pending());
}

}  // namespace
}  // namespace xpu_timer::supervisor
