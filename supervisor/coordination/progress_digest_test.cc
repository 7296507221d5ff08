// The leader's digest (progress_digest.h): its text, which stamps it may
// leave out, and the stamps rebuilt from it (never later than the true ones).
// The exchange through it is tested in progress_exchange_test.cc.
#include "supervisor/coordination/progress_digest.h"

#include <gtest/gtest.h>

#include "common/clock.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kS = 1'000'000'000;

// Node 1's document, two ranks beating, as of `clock_s` (wall) and
// 1000 s + `clock_s` - `start_s` (monotonic).
NodeProgress node_one(double clock_s, double start_s) {
  NodeProgress p;
  p.node = 1;
  p.world_size = 6;
  p.snapshot.now_ns = 1000 * kS + static_cast<uint64_t>((clock_s - start_s) * 1e9);
  p.snapshot.now_unix_s = clock_s;
  p.snapshot.ranks.resize(2);
  for (int i = 0; i < 2; ++i) {
    p.snapshot.ranks[i].rank = 2 + i;
    p.snapshot.ranks[i].registered = true;
    p.snapshot.ranks[i].heartbeat_ns = p.snapshot.now_ns;
  }
  return p;
}

TEST(ProgressDigest, TextRoundTripsAndRefusesWhatIsNotADigest) {
  ProgressDigest d;
  d.leader = 2;
  d.now_unix_s = 1.8e9;
  d.fresh_unix_s = 1.8e9 - 1;
  d.plain_hash = plain_nodes_hash({{0, 11}, {1, 12}});
  d.stamps = {"{\"x\":1}"};
  ProgressDigest back;
  std::string why;
  ASSERT_TRUE(parse_progress_digest(progress_digest_text(d), &back, &why)) << why;
  EXPECT_EQ(back.leader, 2);
  EXPECT_EQ(back.fresh_unix_s, d.fresh_unix_s);
  EXPECT_EQ(back.plain_hash, d.plain_hash);
  EXPECT_EQ(back.stamps, d.stamps);
  EXPECT_NE(plain_nodes_hash({{0, 11}, {1, 12}}), plain_nodes_hash({{0, 11}, {1, 13}}));
  for (const char* bad : {"", "[]", "{\"format\":1}", "{\"format\":9}",
                          "{\"format\":1,\"leader\":-1,\"now_unix_s\":1,\"fresh_unix_s\":1,"
                          "\"plain_hash\":1,\"stamps\":[]}",
                          "{\"format\":1,\"leader\":1,\"now_unix_s\":1,\"fresh_unix_s\":2,"
                          "\"plain_hash\":1,\"stamps\":[]}",
                          "{\"format\":1,\"leader\":1,\"now_unix_s\":1,\"fresh_unix_s\":1,"
                          "\"plain_hash\":1,\"stamps\":[3]}"}) {
    EXPECT_FALSE(parse_progress_digest(bad, &back, &why)) << bad;
  }
}

// A stamp is plain while it is recent, its heartbeats beat and its clocks
// kept their pairing; the stamp rebuilt from the digest is never later.
TEST(ProgressDigest, OnlyRecentBeatingStampsArePlainAndTheirRebuildIsNeverLater) {
  const double t0 = 1.8e9;
  NodeProgress doc = node_one(t0, t0);
  std::string why;
  ASSERT_TRUE(parse_node_progress(node_progress_text(doc), &doc, &why)) << why;
  NodeProgress later = node_one(t0 + 30, t0);
  NodeStamp st;
  ASSERT_TRUE(parse_node_stamp(node_stamp_text(later), &st, &why)) << why;
  EXPECT_TRUE(stamp_is_plain(st, doc, t0 + 31));
  EXPECT_FALSE(stamp_is_plain(st, doc, t0 + 30 + kPlainLagS + 0.5));  // late
  NodeStamp stopped = st;
  stopped.heartbeat_ns[1] = st.now_ns - 3 * kS;
  EXPECT_FALSE(stamp_is_plain(stopped, doc, t0 + 31));
  NodeStamp jumped = st;
  jumped.now_unix_s += 1;  // the wall clock stepped
  EXPECT_FALSE(stamp_is_plain(jumped, doc, t0 + 31));

  const NodeStamp rebuilt = plain_stamp(doc, t0 + 30);
  EXPECT_EQ(rebuilt.doc, doc.doc);
  EXPECT_LE(rebuilt.now_ns, st.now_ns);
  EXPECT_GE(rebuilt.now_ns, st.now_ns - static_cast<uint64_t>(2 * kClockSlackS * 1e9));
  EXPECT_EQ(rebuilt.heartbeat_ns, std::vector<uint64_t>(2, rebuilt.now_ns));
}

TEST(SlowDigest, TextRoundTripsAndRefusesNodesOutsideTheJob) {
  SlowDigest d;
  d.leader = 1;
  d.now_unix_s = 1700000000.25;
  d.summaries = {{0, "a"}, {2, "c"}};
  SlowDigest back;
  std::string error;
  ASSERT_TRUE(parse_slow_digest(slow_digest_text(d), 3, &back, &error)) << error;
  EXPECT_EQ(back.leader, 1);
  EXPECT_DOUBLE_EQ(back.now_unix_s, d.now_unix_s);
  EXPECT_EQ(back.summaries, d.summaries);
  EXPECT_FALSE(parse_slow_digest(slow_digest_text(d), 2, &back, &error));  // node 2 of 2
  EXPECT_NE(error.find("not a node of the job"), std::string::npos) << error;
  for (const char* bad : {R"({"format":1,"leader":0,"now_unix_s":1,"summaries":{"01":"x"}})",
                          R"({"format":1,"leader":0,"now_unix_s":1,"summaries":[]})",
                          R"({"format":1,"leader":5,"now_unix_s":1,"summaries":{}})",
                          R"({"format":1,"leader":0,"now_unix_s":1,"summaries":{"0":7}})", "[]"}) {
    EXPECT_FALSE(parse_slow_digest(bad, 3, &back, &error)) << bad;
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor
