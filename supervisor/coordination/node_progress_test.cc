#include "supervisor/coordination/node_progress.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/op_names.h"
#include "supervisor/analysis/hang_detector.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kS = 1000000000ull;
constexpr uint64_t kComm = 0x1a2b3c4d5e6f7a8bull;

// A registered rank of `node` in AllReduce #seq on kComm, launched and
// started `ago_s` before `now_ns` (ago_s < 0: nothing in flight), having
// issued `issued` collectives on it.
RankSample rank_in_allreduce(int rank, int node, uint64_t now_ns, double ago_s, uint64_t seq,
                             uint64_t issued) {
  RankSample s;
  s.rank = rank;
  s.registered = true;
  s.local_rank = rank % 2;
  s.node = node;
  s.pid = 1000 + rank;
  s.host = "host" + std::to_string(node);
  s.alive = s.connected = s.page_ok = true;
  s.registered_ns = now_ns - 100 * kS;
  s.heartbeat_ns = now_ns - kS / 100;
  s.issued_total = issued;
  s.completed_total = issued - (ago_s >= 0 ? 1 : 0);
  proto::CommSlot c{};
  c.comm_hash = kComm;
  c.nranks = 4;
  c.rank = rank;
  c.issued_seq = issued;
  c.completed_seq = s.completed_total;
  std::strncpy(c.name, "dp_group", sizeof(c.name) - 1);
  s.comms.push_back(c);
  if (ago_s >= 0) {
    s.inflight_count = 1;
    proto::OpRef& o = s.oldest_inflight;
    o.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
    o.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
    o.group_size = 1;
    o.comm_hash = kComm;
    o.seq = seq;
    o.launch_ns = now_ns - static_cast<uint64_t>(ago_s * 1e9);
    o.started_ns = o.launch_ns + 1000;
    o.bytes = 4096;
  }
  return s;
}

NodeProgress node_with(int node, uint64_t now_ns, double now_unix_s,
                       std::vector<RankSample> ranks) {
  NodeProgress p;
  p.node = node;
  p.host = "host" + std::to_string(node);
  p.world_size = 4;
  p.snapshot.now_ns = now_ns;
  p.snapshot.now_unix_s = now_unix_s;
  p.snapshot.ranks = std::move(ranks);
  return p;
}

TEST(NodeProgress, RoundTripsEveryFieldTheDetectorReads) {
  const uint64_t now = 5000 * kS;
  NodeProgress p = node_with(1, now, 1.7e9, {rank_in_allreduce(2, 1, now, 3.5, 6, 6)});
  p.snapshot.ranks[0].page_flags = 3;
  p.snapshot.ranks[0].queue_depth = 17;
  NodeProgress back;
  std::string error;
  ASSERT_TRUE(parse_node_progress(node_progress_text(p), &back, &error)) << error;
  EXPECT_EQ(back.node, 1);
  EXPECT_EQ(back.host, "host1");
  EXPECT_EQ(back.world_size, 4);
  EXPECT_EQ(back.snapshot.now_ns, now);
  EXPECT_DOUBLE_EQ(back.snapshot.now_unix_s, 1.7e9);
  ASSERT_EQ(back.snapshot.ranks.size(), 1u);
  const RankSample& a = p.snapshot.ranks[0];
  const RankSample& b = back.snapshot.ranks[0];
  EXPECT_EQ(b.rank, a.rank);
  EXPECT_EQ(b.node, a.node);
  EXPECT_EQ(b.pid, a.pid);
  EXPECT_EQ(b.heartbeat_ns, a.heartbeat_ns);
  EXPECT_EQ(b.completed_total, a.completed_total);
  EXPECT_EQ(b.page_flags, 3u);
  EXPECT_EQ(b.queue_depth, 17u);
  EXPECT_EQ(std::memcmp(&b.oldest_inflight, &a.oldest_inflight, sizeof(proto::OpRef)), 0);
  ASSERT_EQ(b.comms.size(), 1u);
  EXPECT_EQ(b.comms[0].comm_hash, kComm);
  EXPECT_EQ(b.comms[0].issued_seq, 6u);
  EXPECT_STREQ(b.comms[0].name, "dp_group");
}

TEST(NodeProgress, AnythingElseIsOneLineAndNoCrash) {
  const uint64_t now = 5000 * kS;
  const std::string good =
      node_progress_text(node_with(1, now, 1.7e9, {rank_in_allreduce(2, 1, now, 3.5, 6, 6)}));
  NodeProgress out;
  std::string error;
  for (const std::string& bad :
       {std::string(""), std::string("[]"), std::string("{\"format\":1}"),
        std::string("{\"format\":2,\"node\":0}"), good.substr(0, good.size() / 2),
        std::string("{\"format\":2,\"node\":-3,\"doc\":5,\"host\":\"h\",\"world_size\":4,"
                    "\"now_ns\":1,\"now_unix_s\":1,\"ranks\":[]}"),
        std::string("{\"format\":2,\"node\":0,\"doc\":5,\"host\":\"h\",\"world_size\":4,"
                    "\"now_ns\":1,\"now_unix_s\":1,\"ranks\":[{\"rank\":\"zero\"}]}")}) {
    error.clear();
    EXPECT_FALSE(parse_node_progress(bad, &out, &error)) << bad;
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // Another version's document says so.
  EXPECT_FALSE(parse_node_progress("{\"format\":1}", &out, &error));
  EXPECT_EQ(error, "format 1, this build reads 2");
  // Every truncation of a good document fails cleanly.
  for (size_t n = 0; n < good.size(); n += 7) {
    EXPECT_FALSE(parse_node_progress(good.substr(0, n), &out, &error));
  }
}

// Node 1's clocks are unrelated to ours; its snapshot was published 0.4 s
// ago by the wall clocks. Its rank 2 launched its AllReduce 3.5 s before
// its snapshot: 3.9 s before our now.
TEST(NodeProgress, RemoteTimesAreRebasedOntoTheLocalClockAsOfTheRemoteSnapshot) {
  const uint64_t local_now = 777 * kS, remote_now = 123456 * kS;
  Snapshot local;
  local.now_ns = local_now;
  local.now_unix_s = 1.7e9 + 0.4;
  local.ranks = {rank_in_allreduce(0, 0, local_now, 1.0, 6, 6)};
  const NodeProgress remote =
      node_with(1, remote_now, 1.7e9, {rank_in_allreduce(2, 1, remote_now, 3.5, 6, 6)});
  const Snapshot merged = merge_job_snapshot(local, 0, {remote}, 2);
  ASSERT_EQ(merged.ranks.size(), 3u);  // ranks 0 and 2, and rank 1 never registered anywhere
  EXPECT_EQ(merged.ranks[0].rank, 0);
  EXPECT_EQ(merged.ranks[1].rank, 1);
  EXPECT_FALSE(merged.ranks[1].registered);
  const RankSample& r2 = merged.ranks[2];
  EXPECT_EQ(r2.rank, 2);
  EXPECT_EQ(r2.node, 1);
  // As of the remote snapshot's instant (0.4 s ago by the wall clocks): the
  // ages it gave, not 0.4 s more.
  const double launched_ago = static_cast<double>(local_now - r2.oldest_inflight.launch_ns) / 1e9;
  EXPECT_NEAR(launched_ago, 3.5, 1e-6);
  const double heartbeat_age = static_cast<double>(local_now - r2.heartbeat_ns) / 1e9;
  EXPECT_NEAR(heartbeat_age, 0.01, 1e-6);
  // When its page was read stays on node 1's clock (the stall tracker's
  // measure: how long apart node 1 read it); ours are "now".
  EXPECT_EQ(r2.read_ns, remote_now);
  EXPECT_EQ(merged.ranks[0].read_ns, 0u);
}

// A hang across two nodes, judged on node 0: its ranks 0 and 1 and node 1's
// rank 3 wait in AllReduce #6; node 1's rank 2 never issued it. Only the
// merged snapshot names rank 2, on node 1.
// Ranks 0 and 1 on this node in AllReduce #6 for 12 s; on node 1, rank 2
// behind (#5 its last) and rank 3 in it for 11 s, as of node 1's snapshot.
struct TwoNodeHang {
  Snapshot local;
  NodeProgress node1;
};
TwoNodeHang two_node_hang() {
  const uint64_t now = 1000 * kS, remote_now = 50 * kS;
  TwoNodeHang h;
  h.local.now_ns = now;
  h.local.now_unix_s = 1.7e9;
  h.local.ranks = {rank_in_allreduce(0, 0, now, 12.0, 6, 6),
                   rank_in_allreduce(1, 0, now, 12.0, 6, 6)};
  h.node1 = node_with(1, remote_now, 1.7e9 - 0.5,
                      {rank_in_allreduce(2, 1, remote_now, -1, 0, 5),
                       rank_in_allreduce(3, 1, remote_now, 11.0, 6, 6)});
  return h;
}

TEST(NodeProgress, TheMergedSnapshotNamesTheCulpritOnAnotherNode) {
  const TwoNodeHang h = two_node_hang();
  const Snapshot& local = h.local;
  const NodeProgress& node1 = h.node1;
  const HangReport alone = classify_snapshot(local, 10.0);
  ASSERT_TRUE(alone.hung);
  for (const RankVerdict& v : alone.ranks) EXPECT_NE(v.state, RankState::kMissing);

  const HangReport job = classify_snapshot(merge_job_snapshot(local, 0, {node1}, 4), 10.0);
  ASSERT_TRUE(job.hung) << job.summary;
  ASSERT_EQ(job.ranks.size(), 4u);
  EXPECT_EQ(job.ranks[0].state, RankState::kStuck);
  EXPECT_EQ(job.ranks[1].state, RankState::kStuck);
  EXPECT_EQ(job.ranks[2].state, RankState::kMissing);
  EXPECT_EQ(job.ranks[2].node, 1);
  EXPECT_EQ(job.ranks[3].state, RankState::kStuck);  // 11 s, as of its snapshot
  EXPECT_NE(job.summary.find("ranks 0,1,3 stuck in AllReduce #6"), std::string::npos)
      << job.summary;
  EXPECT_NE(job.summary.find("rank 2 missing"), std::string::npos) << job.summary;
}

// The culprit's own node took its stacks: its place travels with that node's
// document (through text, as the store carries it), and the other node's
// sentence names it; the document changed, so it is published again.
TEST(NodeProgress, ACulpritsPlaceOnAnotherNodeReachesTheSentence) {
  TwoNodeHang h = two_node_hang();
  const Snapshot& local = h.local;
  NodeProgress& node1 = h.node1;
  const uint64_t before = node_document_id(node1);
  node1.snapshot.ranks[0].where = {CodeFrame{"stuck_in_host_code", "/w/sim_trainer.py", 185, true},
                                   CodeFrame{"train_step", "/w/sim_trainer.py", 227, true}};
  EXPECT_NE(node_document_id(node1), before);
  NodeProgress read;
  std::string error;
  ASSERT_TRUE(parse_node_progress(node_progress_text(node1), &read, &error)) << error;
  EXPECT_EQ(read.snapshot.ranks[0].where, node1.snapshot.ranks[0].where);
  EXPECT_TRUE(read.snapshot.ranks[1].where.empty());
  const HangReport job = classify_snapshot(merge_job_snapshot(local, 0, {read}, 4), 10.0);
  EXPECT_NE(job.summary.find("rank 2 missing (last completed #5 on that comm), in "
                             "stuck_in_host_code (sim_trainer.py:185) <- train_step "
                             "(sim_trainer.py:227)"),
            std::string::npos)
      << job.summary;
  // A place of another shape, or longer than a place is, refuses the document.
  std::string text = node_progress_text(node1);
  const std::string line = "\"line\":185";
  std::string bad = text;
  bad.replace(bad.find(line), line.size(), "\"line\":1.5");
  EXPECT_FALSE(parse_node_progress(bad, &read, &error));
  EXPECT_EQ(error, "malformed: line is not an integer");
  node1.snapshot.ranks[0].where.push_back(node1.snapshot.ranks[0].where[0]);
  EXPECT_FALSE(parse_node_progress(node_progress_text(node1), &read, &error));
  EXPECT_EQ(error, "malformed: where: not an array of at most kMaxWhereFrames");
}

// This node's own view of a rank wins over what another node says of it;
// between two other nodes, the more recent snapshot wins.
TEST(NodeProgress, LocalRanksWinAndNewerSnapshotsWin) {
  const uint64_t now = 1000 * kS;
  Snapshot local;
  local.now_ns = now;
  local.now_unix_s = 1.7e9;
  local.ranks = {rank_in_allreduce(0, 0, now, -1, 0, 9)};
  NodeProgress old_claim =
      node_with(1, now, 1.7e9 - 2,
                {rank_in_allreduce(0, 1, now, -1, 0, 1), rank_in_allreduce(2, 1, now, -1, 0, 1)});
  NodeProgress new_claim = node_with(2, now, 1.7e9 - 1, {rank_in_allreduce(2, 2, now, -1, 0, 2)});
  const Snapshot merged = merge_job_snapshot(local, 0, {new_claim, old_claim}, 0);
  ASSERT_EQ(merged.ranks.size(), 2u);
  EXPECT_EQ(merged.ranks[0].issued_total, 9u);
  EXPECT_EQ(merged.ranks[1].issued_total, 2u);
  EXPECT_EQ(merged.ranks[1].node, 2);
}

// A node asks for the job's view once a rank's operation is in flight for
// half the hang timeout, or its detector wants it (a verdict stands, or its
// ranks stood still for half the stall time); not for a short one or an
// idle rank alone.
TEST(NodeProgress, TheJobViewIsWantedFromHalfTheTimeout) {
  const uint64_t now = 1000 * kS;
  Snapshot local;
  local.now_ns = now;
  local.ranks = {rank_in_allreduce(0, 0, now, 1.4, 6, 6), rank_in_allreduce(1, 0, now, -1, 0, 5)};
  EXPECT_FALSE(wants_job_view(local, 3.0, false));
  EXPECT_TRUE(wants_job_view(local, 3.0, true));
  local.ranks[0] = rank_in_allreduce(0, 0, now, 1.6, 6, 6);
  EXPECT_TRUE(wants_job_view(local, 3.0, false));
}

// A document's id covers everything but the times a stamp carries: the
// clocks and the heartbeats move, the id stays; anything else changes it.
TEST(NodeProgress, ADocumentsIdIgnoresOnlyItsTimes) {
  const uint64_t now = 5000 * kS;
  const NodeProgress p =
      node_with(1, now, 1.7e9,
                {rank_in_allreduce(2, 1, now, 3.5, 6, 6), rank_in_allreduce(3, 1, now, 3.5, 6, 6)});
  NodeProgress later = p;
  later.snapshot.now_ns += 7 * kS;
  later.snapshot.now_unix_s += 7;
  later.snapshot.ranks[0].heartbeat_ns += 7 * kS;
  EXPECT_EQ(node_document_id(later), node_document_id(p));
  for (const auto& change : std::vector<void (*)(NodeProgress*)>{
           [](NodeProgress* q) { q->snapshot.ranks[1].completed_total += 1; },
           [](NodeProgress* q) { q->snapshot.ranks[0].oldest_inflight.started_ns += 1; },
           [](NodeProgress* q) { q->snapshot.ranks[0].alive = false; },
           [](NodeProgress* q) { q->snapshot.ranks[1].registered_ns += 1; },
           [](NodeProgress* q) { q->snapshot.ranks.pop_back(); },
           [](NodeProgress* q) { q->world_size = 8; },
       }) {
    NodeProgress changed = later;
    change(&changed);
    EXPECT_NE(node_document_id(changed), node_document_id(p));
  }
  // The text carries the id; parsing gives it back.
  NodeProgress back;
  std::string error;
  ASSERT_TRUE(parse_node_progress(node_progress_text(p), &back, &error)) << error;
  EXPECT_EQ(back.doc, node_document_id(p));
  EXPECT_NE(back.doc, 0u);
}

// A node's document read once, then only its stamps: applying the latest
// stamp gives exactly the snapshot the node has now, and merges as such.
TEST(NodeProgress, AStampAppliedToItsDocumentGivesTheLatestSnapshot) {
  const uint64_t then = 5000 * kS;
  NodeProgress p = node_with(
      1, then, 1.7e9,
      {rank_in_allreduce(2, 1, then, 3.5, 6, 6), rank_in_allreduce(3, 1, then, 3.5, 6, 6)});
  p.snapshot.ranks[1].heartbeat_ns = 0;  // no heartbeat yet: stays 0
  NodeProgress read_then;
  std::string error;
  ASSERT_TRUE(parse_node_progress(node_progress_text(p), &read_then, &error)) << error;

  // 20 s later, nothing moved but the clocks and rank 2's heartbeat (one
  // even a little after the snapshot's instant).
  NodeProgress now = p;
  now.snapshot.now_ns = then + 20 * kS;
  now.snapshot.now_unix_s = 1.7e9 + 20;
  now.snapshot.ranks[0].heartbeat_ns = now.snapshot.now_ns + 3;
  const std::string stamp_text = node_stamp_text(now);
  EXPECT_LT(stamp_text.size(), 200u) << stamp_text;
  NodeStamp stamp;
  ASSERT_TRUE(parse_node_stamp(stamp_text, &stamp, &error)) << error;
  EXPECT_EQ(stamp.node, 1);
  EXPECT_EQ(stamp.doc, read_then.doc);
  EXPECT_EQ(stamp.heartbeat_ns, (std::vector<uint64_t>{then + 20 * kS + 3, 0}));

  NodeProgress applied = read_then;
  ASSERT_TRUE(apply_node_stamp(stamp, &applied));
  EXPECT_EQ(node_progress_text(applied), node_progress_text(now));

  // Merged 0.5 s after the stamp's instant, as of that instant: its
  // AllReduce 20 + 3.5 s in flight, its heartbeat fresh.
  Snapshot local;
  local.now_ns = 77 * kS;
  local.now_unix_s = 1.7e9 + 20.5;
  const Snapshot merged = merge_job_snapshot(local, 0, {applied}, 0);
  ASSERT_EQ(merged.ranks.size(), 2u);
  EXPECT_NEAR(static_cast<double>(local.now_ns - merged.ranks[0].oldest_inflight.launch_ns) / 1e9,
              23.5, 1e-6);
  EXPECT_NEAR(
      static_cast<double>(static_cast<int64_t>(local.now_ns - merged.ranks[0].heartbeat_ns)) / 1e9,
      0.0, 1e-6);
}

// A stamp of another document (the node changed it since it was read) or
// of another node is refused and leaves the document as it was.
TEST(NodeProgress, AStampOfAnotherDocumentIsRefused) {
  const uint64_t now = 5000 * kS;
  const NodeProgress p = node_with(1, now, 1.7e9, {rank_in_allreduce(2, 1, now, 3.5, 6, 6)});
  NodeProgress read;
  std::string error;
  ASSERT_TRUE(parse_node_progress(node_progress_text(p), &read, &error)) << error;
  const std::string before = node_progress_text(read);

  NodeProgress changed = p;
  changed.snapshot.ranks[0].completed_total += 1;
  NodeStamp stamp;
  ASSERT_TRUE(parse_node_stamp(node_stamp_text(changed), &stamp, &error)) << error;
  EXPECT_FALSE(apply_node_stamp(stamp, &read));
  NodeProgress other_node = p;
  other_node.node = 2;
  ASSERT_TRUE(parse_node_stamp(node_stamp_text(other_node), &stamp, &error)) << error;
  EXPECT_FALSE(apply_node_stamp(stamp, &read));
  EXPECT_EQ(node_progress_text(read), before);
}

TEST(NodeProgress, AnythingElseThanAStampIsOneLineAndNoCrash) {
  const uint64_t now = 5000 * kS;
  const std::string good =
      node_stamp_text(node_with(1, now, 1.7e9, {rank_in_allreduce(2, 1, now, 3.5, 6, 6)}));
  NodeStamp out;
  std::string error;
  ASSERT_TRUE(parse_node_stamp(good, &out, &error)) << error;
  for (const std::string& bad :
       {std::string(""), std::string("[]"), std::string("{\"format\":2}"),
        std::string("{\"format\":1,\"node\":1}"),
        std::string("{\"format\":2,\"node\":1,\"doc\":0,\"now_ns\":1,\"now_unix_s\":1,"
                    "\"heartbeat_ago_ns\":[]}"),
        std::string("{\"format\":2,\"node\":-1,\"doc\":5,\"now_ns\":1,\"now_unix_s\":1,"
                    "\"heartbeat_ago_ns\":[]}"),
        std::string("{\"format\":2,\"node\":1,\"doc\":5,\"now_ns\":1,\"now_unix_s\":1,"
                    "\"heartbeat_ago_ns\":[1.5]}"),
        std::string("{\"format\":2,\"node\":1,\"doc\":5,\"now_ns\":1,\"now_unix_s\":1,"
                    "\"heartbeat_ago_ns\":{}}")}) {
    error.clear();
    EXPECT_FALSE(parse_node_stamp(bad, &out, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  for (size_t n = 0; n < good.size(); n += 3) {
    EXPECT_FALSE(parse_node_stamp(good.substr(0, n), &out, &error));
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor
