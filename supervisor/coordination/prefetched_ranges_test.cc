#include "supervisor/coordination/prefetched_ranges.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kT = 1000ull * 1000 * 1000 * 1000;  // a clock far from 0 (an uptime)

PrefixAnswer answer(const std::string& key, int64_t revision, int64_t count) {
  PrefixAnswer a;
  a.kvs.push_back(KeyValue{key, "v", revision, 7});
  a.revision = revision;
  a.count = count;
  return a;
}

TEST(PrefetchedRanges, EachAnswerIsTakenOnceByTheSameQuery) {
  PrefetchedRanges p;
  p.keep({{"/j/alarms/", 5}, {"/j/leader/node", 0}},
         {answer("/j/alarms/3", 9, 2), answer("/j/leader/node", 9, 1)}, kT);
  std::vector<KeyValue> out;
  int64_t revision = 0, count = 0;
  EXPECT_FALSE(p.take("/j/alarms/", 0, kT + 1, &out, &revision, &count));  // another revision
  EXPECT_FALSE(p.take("/j/dumps/", 5, kT + 1, &out, &revision, &count));   // not prefetched
  ASSERT_TRUE(p.take("/j/alarms/", 5, kT + 1, &out, &revision, &count));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, "/j/alarms/3");
  EXPECT_EQ(revision, 9);
  EXPECT_EQ(count, 2);
  EXPECT_FALSE(p.take("/j/alarms/", 5, kT + 2, &out, &revision, &count));  // once
  ASSERT_TRUE(p.take("/j/leader/node", 0, kT + 2, &out, nullptr, nullptr));
  EXPECT_EQ(p.taken(), 2u);
}

TEST(PrefetchedRanges, AWriteUnderAPrefixDropsItsAnswerOnly) {
  PrefetchedRanges p;
  p.keep({{"/j/alarms/", 5}, {"/j/dumps/", 5}}, {answer("/j/alarms/3", 9, 1), PrefixAnswer{}}, kT);
  p.written("/j/alarms/0");  // this client's own alarm: it must read it
  p.written("/j/nodes/0");   // elsewhere: nothing dropped
  std::vector<KeyValue> out;
  EXPECT_FALSE(p.take("/j/alarms/", 5, kT + 1, &out, nullptr, nullptr));
  EXPECT_TRUE(p.take("/j/dumps/", 5, kT + 1, &out, nullptr, nullptr));
  EXPECT_TRUE(out.empty());
}

TEST(PrefetchedRanges, AnswersOfAnotherRoundAreNotTaken) {
  PrefetchedRanges p;
  p.keep({{"/j/alarms/", 5}}, {answer("/j/alarms/3", 9, 1)}, kT);
  std::vector<KeyValue> out;
  EXPECT_FALSE(p.take("/j/alarms/", 5, kT + PrefetchedRanges::kFreshNs, &out, nullptr, nullptr));
  p.keep({{"/j/alarms/", 5}}, {answer("/j/alarms/3", 9, 1)}, kT);
  EXPECT_FALSE(p.take("/j/alarms/", 5, kT - 1, &out, nullptr, nullptr));  // a clock gone back
  // A new prefetch replaces what was kept.
  p.keep({{"/j/alarms/", 5}}, {answer("/j/alarms/3", 9, 1)}, kT);
  p.keep({{"/j/dumps/", 1}}, {PrefixAnswer{}}, kT);
  EXPECT_FALSE(p.take("/j/alarms/", 5, kT + 1, &out, nullptr, nullptr));
  EXPECT_TRUE(p.take("/j/dumps/", 1, kT + 1, &out, nullptr, nullptr));
}

}  // namespace
}  // namespace xpu_timer::supervisor
