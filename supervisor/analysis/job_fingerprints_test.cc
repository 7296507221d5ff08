#include "supervisor/analysis/job_fingerprints.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

using proto::DType;
using proto::OpName;
using recorder::RecordData;

constexpr uint64_t kComm = 0x1a2b3c4d5e6f7a8bull;
constexpr uint64_t kLocalComm = 0x77ull;  // every member on one node: never published
constexpr uint64_t kSec = 1000ull * 1000 * 1000;

RecordData coll(uint64_t seq, uint64_t count, OpName name = OpName::kAllReduce,
                uint64_t comm = kComm, uint32_t nranks = 4) {
  RecordData d;
  d.name = static_cast<uint16_t>(name);
  d.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  d.dtype = static_cast<uint8_t>(DType::kBF16);
  d.red_op = name == OpName::kAllReduce ? 1 : 0;
  d.comm_hash = comm;
  d.seq = seq;
  d.count = count;
  d.nranks = nranks;
  return d;
}

proto::CommSlot slot(uint64_t comm, int nranks) {
  proto::CommSlot c{};
  c.comm_hash = comm;
  c.nranks = nranks;
  return c;
}

// Node `node` of a 2-node job of 4 ranks: ranks 2*node and 2*node+1, each
// in the world communicator (4 ranks, across both nodes) and in one of its
// own node (2 ranks).
Snapshot node_snapshot(int node) {
  Snapshot s;
  for (int r = 2 * node; r < 2 * node + 2; ++r) {
    RankSample x;
    x.rank = r;
    x.registered = true;
    x.comms = {slot(kComm, 4), slot(kLocalComm, 2)};
    s.ranks.push_back(x);
  }
  return s;
}

// A node's log after its ranks issued collectives 1..n of the world
// communicator, `odd` (rank, seq, record) replacing one.
FingerprintLog node_log(int node, uint64_t n, int odd_rank = -1, uint64_t odd_seq = 0,
                        RecordData odd = {}) {
  FingerprintLog log;
  log.note_members(node_snapshot(node));
  for (uint64_t seq = 1; seq <= n; ++seq) {
    for (int r = 2 * node; r < 2 * node + 2; ++r) {
      log.add(r, r == odd_rank && seq == odd_seq ? odd : coll(seq, seq % 3 == 0 ? 4096 : 1024));
      log.add(r, coll(seq, 8, OpName::kAllReduce, kLocalComm, 2));
    }
  }
  return log;
}

NodeFingerprints round_trip(const NodeFingerprints& f) {
  NodeFingerprints back;
  std::string error;
  EXPECT_TRUE(parse_node_fingerprints(node_fingerprints_text(f), &back, &error)) << error;
  return back;
}

TEST(JobFingerprints, WindowHoldsRunsOfTheCrossNodeCommunicatorOnly) {
  const NodeFingerprints w = node_log(1, 9, 3, 5, coll(5, 999)).window(1);
  ASSERT_EQ(w.comms.size(), 1u);  // the node-local communicator is not published
  const CommWindow& c = w.comms[0];
  EXPECT_EQ(c.comm_hash, kComm);
  EXPECT_EQ(c.nranks, 4u);
  EXPECT_EQ(c.members, (std::vector<int>{2, 3}));
  // 1024 x2, 4096, 1024 x2, 4096, 1024 x2, 4096: six runs.
  ASSERT_EQ(c.runs.size(), 6u);
  EXPECT_EQ(c.runs[0].first_seq, 1u);
  EXPECT_EQ(c.runs[0].count, 2u);
  EXPECT_EQ(c.runs[1].fp.count, 4096u);
  ASSERT_EQ(c.exceptions.size(), 1u);
  EXPECT_EQ(c.exceptions[0].seq, 5u);
  EXPECT_EQ(c.exceptions[0].rank, 3);
  EXPECT_EQ(c.exceptions[0].fp.count, 999u);

  std::map<int, Fingerprint> at5;
  ASSERT_TRUE(c.at(5, &at5));
  EXPECT_EQ(at5[2].count, 1024u);
  EXPECT_EQ(at5[3].count, 999u);
  std::map<int, Fingerprint> at10;
  EXPECT_FALSE(c.at(10, &at10));

  const NodeFingerprints back = round_trip(w);
  ASSERT_EQ(back.comms.size(), 1u);
  EXPECT_EQ(back.node, 1);
  EXPECT_EQ(back.comms[0].runs.size(), 6u);
  EXPECT_EQ(back.comms[0].exceptions.size(), 1u);
  EXPECT_EQ(node_fingerprints_text(back), node_fingerprints_text(w));
}

TEST(JobFingerprints, NumbersNotEveryMemberIssuedAreLeftOut) {
  FingerprintLog log;
  log.note_members(node_snapshot(0));
  for (uint64_t seq = 1; seq <= 5; ++seq) log.add(0, coll(seq, 1024));
  for (uint64_t seq = 1; seq <= 3; ++seq) log.add(1, coll(seq, 1024));
  const NodeFingerprints w = log.window(0);
  ASSERT_EQ(w.comms.size(), 1u);
  ASSERT_EQ(w.comms[0].runs.size(), 1u);
  EXPECT_EQ(w.comms[0].runs[0].count, 3u);
  EXPECT_TRUE(log.local_at(kComm, 4).empty());
  EXPECT_EQ(log.local_at(kComm, 3).size(), 2u);
}

TEST(JobFingerprints, RecordsReadBeforeThePagesNameTheCommunicatorAreKept) {
  // The supervisor may read a ring before the page lists the communicator.
  FingerprintLog log;
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    for (int r = 0; r < 2; ++r) {
      log.add(r, coll(seq, 1024));
      log.add(r, coll(seq, 8, OpName::kAllReduce, kLocalComm, 2));
    }
  }
  EXPECT_TRUE(log.window(0).comms.empty()) << "members unknown yet";
  log.note_members(node_snapshot(0));
  const NodeFingerprints w = log.window(0);
  ASSERT_EQ(w.comms.size(), 1u);
  EXPECT_EQ(w.comms[0].comm_hash, kComm);
  ASSERT_EQ(w.comms[0].runs.size(), 1u);
  EXPECT_EQ(w.comms[0].runs[0].first_seq, 1u);
  EXPECT_EQ(w.comms[0].runs[0].count, 4u);
  EXPECT_EQ(log.comms(), (std::set<uint64_t>{kComm}));
}

TEST(JobFingerprints, AWindowAfterWhatWasPublishedHoldsOnlyWhatIsNew) {
  const FingerprintLog log = node_log(0, 9);
  const NodeFingerprints first = log.window(0);
  EXPECT_EQ(first.last_seqs(), (std::map<uint64_t, uint64_t>{{kComm, 9}}));
  const NodeFingerprints none = log.window(0, first.last_seqs());
  ASSERT_EQ(none.comms.size(), 1u);  // the communicator, with nothing new
  EXPECT_TRUE(none.comms[0].runs.empty());
  EXPECT_TRUE(none.last_seqs().empty());
  const NodeFingerprints later = log.window(0, {{kComm, 6}});
  ASSERT_EQ(later.comms[0].runs.size(), 2u);  // 7-8 (1024), 9 (4096)
  EXPECT_EQ(later.comms[0].runs[0].first_seq, 7u);
  EXPECT_EQ(later.comms[0].runs[0].count, 2u);
  EXPECT_EQ(later.comms[0].runs[1].first_seq, 9u);
}

TEST(JobFingerprints, OnlyTheLatestNumbersAreKept) {
  FingerprintLog log;
  log.note_members(node_snapshot(0));
  const uint64_t n = FingerprintLog::kKeepSeqs + 100;
  for (uint64_t seq = 1; seq <= n; ++seq) {
    for (int r = 0; r < 2; ++r) log.add(r, coll(seq, 1024));
  }
  EXPECT_TRUE(log.local_at(kComm, 100).empty());
  EXPECT_FALSE(log.local_at(kComm, n).empty());
  const NodeFingerprints w = log.window(0);
  ASSERT_EQ(w.comms[0].runs.size(), 1u);
  EXPECT_EQ(w.comms[0].runs[0].count, FingerprintLog::kPublishSeqs);
  EXPECT_EQ(w.comms[0].runs[0].first_seq + w.comms[0].runs[0].count - 1, n);
}

TEST(JobFingerprints, AnotherNodesOddRankIsFoundAndNamedWithItsNode) {
  const FingerprintLog mine = node_log(0, 12);
  const FingerprintLog theirs = node_log(1, 12, 3, 7, coll(7, 1024, OpName::kAllGather));
  std::set<uint64_t> unaligned;
  std::map<uint64_t, uint64_t> through;
  const NodeFingerprints other = round_trip(theirs.window(1));
  std::vector<Disagreement> d = compare_windows(mine, other, {}, &unaligned, &through);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].comm_hash, kComm);
  EXPECT_EQ(d[0].seq, 7u);
  EXPECT_EQ(through[kComm], 6u);
  EXPECT_TRUE(unaligned.empty());
  // Reported: the numbers after it are compared, and agree.
  d = compare_windows(mine, other, {{kComm, 7}}, &unaligned, &through);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(through[kComm], 12u);

  Mismatch m = mismatch_from_windows(kComm, 7, {mine.window(0), other});
  EXPECT_EQ(m.kind, "op");
  EXPECT_EQ(m.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.odd_ranks, (std::vector<int>{3}));
  EXPECT_EQ(m.nodes, (std::map<int, int>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}));
  m.summary = mismatch_sentence(m);
  EXPECT_NE(m.summary.find("the odd one out: rank 3 on node 1"), std::string::npos) << m.summary;
  const nlohmann::json j = mismatch_json(m);
  EXPECT_EQ(j["odd_nodes"], nlohmann::json::array({1}));

  // Through the store and back: the same mismatch.
  m.detected_at_unix_s = 1234.5;
  Mismatch back;
  int from = -1;
  std::string error;
  ASSERT_TRUE(parse_job_mismatch(job_mismatch_text(m, 1), &back, &from, &error)) << error;
  EXPECT_EQ(from, 1);
  EXPECT_EQ(back.odd_ranks, m.odd_ranks);
  EXPECT_EQ(back.nodes, m.nodes);
  EXPECT_EQ(back.kind, "op");
  EXPECT_EQ(back.seq, 7u);
  EXPECT_EQ(back.nranks, 4u);
  EXPECT_EQ(back.detected_at_unix_s, 1234.5);
}

TEST(JobFingerprints, ADisagreementAmongTheOtherNodesOwnRanksIsFoundToo) {
  // Node 1's two ranks disagree with each other: node 0 (agreeing with rank
  // 2) still finds it, and the job-wide groups make rank 3 the odd one.
  const FingerprintLog mine = node_log(0, 9);
  const FingerprintLog theirs = node_log(1, 9, 3, 4, coll(4, 2048));
  std::set<uint64_t> unaligned;
  std::map<uint64_t, uint64_t> through;
  const auto d = compare_windows(mine, theirs.window(1), {}, &unaligned, &through);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].seq, 4u);
  const Mismatch m = mismatch_from_windows(kComm, 4, {mine.window(0), theirs.window(1)});
  EXPECT_EQ(m.kind, "count");
  EXPECT_EQ(m.odd_ranks, (std::vector<int>{3}));
}

TEST(JobFingerprints, AgreeingNodesGiveNothing) {
  std::set<uint64_t> unaligned;
  std::map<uint64_t, uint64_t> through;
  // The other node is ahead: only the numbers both hold are compared.
  EXPECT_TRUE(compare_windows(node_log(0, 50), node_log(1, 80).window(1), {}, &unaligned, &through)
                  .empty());
  EXPECT_EQ(through[kComm], 50u);
}

TEST(JobFingerprints, SequencesThatNoLongerCorrespondStopTheComparison) {
  RecordData send = coll(5, 1024, OpName::kSend);
  send.group_size = 1;
  const FingerprintLog mine = node_log(0, 10);
  const FingerprintLog theirs = node_log(1, 10, 2, 5, send);
  std::set<uint64_t> unaligned;
  std::map<uint64_t, uint64_t> through;
  // Rank 3 also differs later: not reported, the numbers no longer match.
  EXPECT_TRUE(compare_windows(mine, theirs.window(1), {}, &unaligned, &through).empty());
  EXPECT_EQ(unaligned, (std::set<uint64_t>{kComm}));
}

TEST(JobFingerprints, PeersFormARingPerCommunicator) {
  // Communicator A on nodes 0, 2, 3; B on nodes 1 and 3.
  const uint64_t a = 1, b = 2;
  const std::map<int, std::set<uint64_t>> comms = {{0, {a}}, {1, {b}}, {2, {a}}, {3, {a, b}}};
  EXPECT_EQ(fingerprint_peers(0, {a}, comms), (std::set<int>{2}));
  EXPECT_EQ(fingerprint_peers(2, {a}, comms), (std::set<int>{3}));
  EXPECT_EQ(fingerprint_peers(3, {a, b}, comms), (std::set<int>{0, 1}));
  EXPECT_EQ(fingerprint_peers(1, {b}, comms), (std::set<int>{3}));
  EXPECT_TRUE(fingerprint_peers(1, {a + 10}, comms).empty());
}

TEST(JobFingerprints, MalformedDocumentsAreRefusedWithOneLine) {
  const std::string good = node_fingerprints_text(node_log(1, 6).window(1));
  NodeFingerprints f;
  std::string error;
  ASSERT_TRUE(parse_node_fingerprints(good, &f, &error)) << error;
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  const std::string bad[] = {
      "",
      "[]",
      good.substr(0, good.size() / 2),
      replaced("\"format\":1", "\"format\":9"),
      replaced("\"runs\":[[1,", "\"runs\":[[1,0,0],[1,"),  // an empty run
      replaced("\"runs\":[[1,2,0]", "\"runs\":[[1,2,7]"),  // a fingerprint that is not there
      replaced("\"runs\":[[1,2,0],[3,", "\"runs\":[[1,2,0],[2,"),  // overlapping runs
      replaced("\"node\":1", "\"node\":-1"),
  };
  for (const std::string& text : bad) {
    error.clear();
    EXPECT_FALSE(parse_node_fingerprints(text, &f, &error)) << text;
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  Mismatch m;
  int from = 0;
  EXPECT_FALSE(parse_job_mismatch("{\"format\":1}", &m, &from, &error));
  EXPECT_FALSE(parse_job_mismatch("nonsense", &m, &from, &error));
}

// The checker on one node of several: a disagreement on a communicator with
// members elsewhere waits for the job-wide comparison, and is not reported
// here once that reported it.
TEST(JobFingerprints, TheLocalCheckerLeavesCrossNodeCommunicatorsToTheJob) {
  for (const bool job_reports : {false, true}) {
    CollectiveChecker c;
    c.set_cross_node_settle(30 * kSec);
    FingerprintLog log;
    log.note_members(node_snapshot(1));
    c.note_cross_node(log.comms());
    c.add(2, coll(3, 1024));
    c.add(3, coll(3, 2048));
    EXPECT_TRUE(c.check(kSec, 1).empty());
    EXPECT_TRUE(c.check(10 * kSec, 10).empty()) << "waits longer than kSettleNs";
    if (job_reports) c.mark_reported(kComm, 3);
    const std::vector<Mismatch> found = c.check(32 * kSec, 32);
    EXPECT_EQ(found.size(), job_reports ? 0u : 1u);
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor
