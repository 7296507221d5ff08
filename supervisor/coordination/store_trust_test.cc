// What a node believes of the store (store_trust.h): forged documents and
// stamps (a node outside the job, ranks outside the world or of another
// node, a clock from the future), owners, and the dump request gate.
#include "supervisor/coordination/store_trust.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

constexpr double kNow = 1.8e9;

// A document of `node` with `ranks`, in a world of 4 with 2 ranks a node.
NodeProgress doc(int node, std::vector<int> ranks, double clock_s = kNow - 1) {
  NodeProgress p;
  p.node = node;
  p.world_size = 4;
  p.snapshot.now_unix_s = clock_s;
  for (int r : ranks) {
    RankSample s;
    s.rank = r;
    s.node = node;
    s.registered = true;
    p.snapshot.ranks.push_back(s);
  }
  return p;
}

TEST(JobShape, NodeCountIsTheWorldOverTheRanksOfANode) {
  EXPECT_EQ(job_shape(4, 2).node_count, 2);
  EXPECT_EQ(job_shape(5, 2).node_count, 3);
  EXPECT_EQ(job_shape(8, 8).node_count, 1);
  EXPECT_EQ(job_shape(0, 1).node_count, 0);
  EXPECT_EQ(job_shape(2, 4).node_count, 0);  // nonsense: nothing trusted
}

TEST(NodeOfKey, OnlyPlainDecimalNodes) {
  const std::string d = "/xpu_timer/j/nodes/";
  EXPECT_EQ(node_of_key(d + "3", d), 3);
  EXPECT_EQ(node_of_key(d + "3/1700000000000", d), 3);
  EXPECT_EQ(node_of_key(d + "03", d), -1);
  EXPECT_EQ(node_of_key(d + "-1", d), -1);
  EXPECT_EQ(node_of_key(d + "1004x", d), -1);
  EXPECT_EQ(node_of_key("/xpu_timer/k/nodes/3", d), -1);
  EXPECT_EQ(node_of_key(d + "1700000000000-2", d, true), 2);
  EXPECT_EQ(node_of_key(d + "1700000000000", d, true), -1);
}

TEST(DocumentRefusal, AcceptsARealNodesDocument) {
  EXPECT_EQ(document_refusal(doc(1, {2, 3}), 1, job_shape(4, 2), kNow), "");
}

TEST(DocumentRefusal, RefusesANodeOutsideTheJob) {
  EXPECT_EQ(document_refusal(doc(7, {2}), 7, job_shape(4, 2), kNow),
            "node 7 is not in a job of 2 node(s)");
  EXPECT_EQ(document_refusal(doc(1, {2}), 0, job_shape(4, 2), kNow),
            "it names node 1 under node 0's key");
  EXPECT_EQ(document_refusal(doc(1, {2}), 1, JobShape{}, kNow),
            "this node does not know the job's size yet");
}

TEST(DocumentRefusal, RefusesRanksOutsideTheWorldOrMoreThanANodeHas) {
  // The probe's forgery: 1,004 ranks in a world of 4.
  std::vector<int> many;
  for (int r = 0; r < 1004; ++r) many.push_back(r);
  EXPECT_EQ(document_refusal(doc(1, many), 1, job_shape(4, 2), kNow), "1004 ranks, a node has 2");
  EXPECT_EQ(document_refusal(doc(1, {2, 9}), 1, job_shape(4, 2), kNow),
            "rank 9 is not in a world of 4");
  EXPECT_EQ(document_refusal(doc(1, {-1}), 1, job_shape(4, 2), kNow),
            "rank -1 is not in a world of 4");
  EXPECT_EQ(document_refusal(doc(1, {2, 2}), 1, job_shape(4, 2), kNow), "rank 2 twice");
  NodeProgress other_world = doc(1, {2});
  other_world.world_size = 1004;
  EXPECT_EQ(document_refusal(other_world, 1, job_shape(4, 2), kNow),
            "world size 1004, the job's is 4");
  NodeProgress moved = doc(1, {2});
  moved.snapshot.ranks[0].node = 0;
  EXPECT_EQ(document_refusal(moved, 1, job_shape(4, 2), kNow), "rank 2 says it runs on node 0");
}

TEST(DocumentRefusal, RefusesAClockFromTheFuture) {
  EXPECT_EQ(document_refusal(doc(1, {2}, kNow + kMaxClockSkewS - 0.5), 1, job_shape(4, 2), kNow),
            "");
  EXPECT_EQ(document_refusal(doc(1, {2}, kNow + 3600), 1, job_shape(4, 2), kNow),
            "its clock is 3600.0 s ahead of this node's (more than 10 s)");
  NodeStamp st;
  st.node = 1;
  st.doc = 5;
  st.now_unix_s = kNow + 3600;
  EXPECT_EQ(stamp_refusal(st, 1, job_shape(4, 2), kNow),
            "its clock is 3600.0 s ahead of this node's (more than 10 s)");
  st.now_unix_s = kNow;
  EXPECT_EQ(stamp_refusal(st, 1, job_shape(4, 2), kNow), "");
  EXPECT_EQ(stamp_refusal(st, 5, job_shape(4, 2), kNow), "it names node 1 under node 5's key");
  st.heartbeat_ns.assign(3, 1);
  EXPECT_EQ(stamp_refusal(st, 1, job_shape(4, 2), kNow), "3 heartbeats, a node has 2 ranks");
}

TEST(RankConflicts, ANodeCannotClaimRanksOfThisNodeOrOfALowerOne) {
  Snapshot local = doc(0, {0, 1}).snapshot;
  std::vector<std::pair<int, std::string>> refused;
  // Node 2 (a forger owning an unused slot) claims rank 3 before node 1 does
  // in the order read; node 1 is still taken first (node order), node 3
  // claims this node's rank 0.
  std::vector<NodeProgress> kept = without_rank_conflicts(
      local, {doc(2, {3}), doc(1, {2, 3}), doc(3, {0})}, &refused);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].node, 1);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0], std::make_pair(2, std::string("rank 3 is node 1's")));
  EXPECT_EQ(refused[1], std::make_pair(3, std::string("rank 0 is this node's")));
}

TEST(Owners, OnlyTheOwnersLeaseWritesForANode) {
  const std::string d = "/xpu_timer/j/owners/";
  std::vector<KeyValue> kvs(3);
  kvs[0].key = d + "0";
  kvs[0].lease = 11;
  kvs[1].key = d + "1";
  kvs[1].lease = 22;
  kvs[2].key = d + "7";  // not a node of a 2-node job
  kvs[2].lease = 99;
  const std::map<int, int64_t> owners = owner_leases(kvs, d, job_shape(4, 2));
  EXPECT_EQ(owners, (std::map<int, int64_t>{{0, 11}, {1, 22}}));
  KeyValue v;
  v.key = "/xpu_timer/j/nodes/1";
  v.lease = 22;
  std::string why;
  EXPECT_TRUE(written_by_owner(v, 1, owners, &why));
  v.lease = 99;  // a forger's own lease
  EXPECT_FALSE(written_by_owner(v, 1, owners, &why));
  EXPECT_EQ(why, "written under lease 99, not node 1's (22)");
  EXPECT_FALSE(written_by_owner(v, 7, owners, &why));
  EXPECT_EQ(why, "node 7 has no owner in the job (not one of its nodes)");
}

TEST(DumpRequestGate, OnlyAnAlarmedOwnerAndOncePerInterval) {
  DumpRequestGate gate;
  std::string why;
  EXPECT_FALSE(gate.admit(false, true, kNow, &why));
  EXPECT_EQ(why, "not from a node of the job");
  EXPECT_FALSE(gate.admit(true, false, kNow, &why));
  EXPECT_EQ(why, "the asking node raises no alarm");
  EXPECT_TRUE(gate.admit(true, true, kNow, &why));
  EXPECT_FALSE(gate.admit(true, true, kNow + 1, &why));
  EXPECT_EQ(why, "another node's request was obeyed 1 s ago (at most one every 60 s)");
  EXPECT_TRUE(gate.admit(true, true, kNow + DumpRequestGate::kMinIntervalS, &why));
}

}  // namespace
}  // namespace xpu_timer::supervisor
