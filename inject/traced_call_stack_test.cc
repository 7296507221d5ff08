#include "inject/traced_call_stack.h"

#include <gtest/gtest.h>

namespace xpu_timer::inject {
namespace {

const int kF = 0, kG = 0;  // two traced codes: their addresses are the keys
const void* const f = &kF;
const void* const g = &kG;

// Ends `key`: the start of the call it closed (0: none) and what it discarded.
std::pair<uint64_t, uint32_t> end(TracedCallStack& s, const void* key, int* depth = nullptr) {
  TracedCallStack::Call call;
  uint32_t discarded = 99;
  const bool ok = s.end(key, &call, &discarded);
  if (ok && depth != nullptr) *depth = call.depth;
  return {ok ? call.start_ns : 0, discarded};
}

TEST(TracedCallStack, RecursionPairsEachEndWithItsOwnBegin) {
  TracedCallStack s;
  s.begin(f, 10);  // f calls g calls f
  s.begin(g, 20);
  s.begin(f, 30);
  int depth = -1;
  EXPECT_EQ(end(s, f, &depth), std::make_pair(uint64_t{30}, 0u));
  EXPECT_EQ(depth, 2);
  EXPECT_EQ(end(s, g, &depth), std::make_pair(uint64_t{20}, 0u));
  EXPECT_EQ(depth, 1);
  EXPECT_EQ(end(s, f, &depth), std::make_pair(uint64_t{10}, 0u));
  EXPECT_EQ(depth, 0);
  EXPECT_TRUE(s.empty());
}

TEST(TracedCallStack, AnEndWithoutItsBeginIsIgnored) {
  TracedCallStack s;
  EXPECT_EQ(end(s, f), std::make_pair(uint64_t{0}, 0u));  // began before tracing
  s.begin(g, 5);
  EXPECT_EQ(end(s, f), std::make_pair(uint64_t{0}, 0u));  // an unwinding frame not on the stack
  EXPECT_EQ(end(s, g), std::make_pair(uint64_t{5}, 0u));
}

TEST(TracedCallStack, AnEndBelowTheTopDiscardsTheCallsAboveIt) {
  TracedCallStack s;
  s.begin(f, 1);
  s.begin(g, 2);  // ends without an event
  s.begin(g, 3);
  EXPECT_EQ(end(s, f), std::make_pair(uint64_t{1}, 2u));
  EXPECT_TRUE(s.empty());
}

TEST(TracedCallStack, CallsBeyondTheDepthAreCountedNotRecorded) {
  TracedCallStack s;
  for (int i = 0; i < TracedCallStack::kMaxDepth + 2; ++i) s.begin(f, 100 + i);
  EXPECT_EQ(end(s, f), std::make_pair(uint64_t{0}, 1u));
  EXPECT_EQ(end(s, f), std::make_pair(uint64_t{0}, 1u));
  int depth = -1;
  EXPECT_EQ(end(s, f, &depth), std::make_pair(uint64_t{100 + TracedCallStack::kMaxDepth - 1}, 0u));
  EXPECT_EQ(depth, TracedCallStack::kMaxDepth - 1);
}

}  // namespace
}  // namespace xpu_timer::inject
