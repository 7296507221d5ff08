// DumpRequests (dump_requests.h) on a store in memory: a request of an
// alarmed owner handed on once, this node's own never, the requests there
// before this node's first read never, a forger's or an unalarmed node's
// refused, and one every DumpRequestGate::kMinIntervalS at most.
#include "supervisor/coordination/dump_requests.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";
using Asked = std::vector<std::pair<std::string, int>>;

class DumpRequestsTest : public ::testing::Test {
 protected:
  DumpRequestsTest()
      : store_a_(&keyspace_, 100),
        store_b_(&keyspace_, 200),
        trust_a_(&store_a_, "etcd://memory", kRoot),
        trust_b_(&store_b_, "etcd://memory", kRoot),
        a_(&store_a_, &trust_a_, "etcd://memory", kRoot),
        b_(&store_b_, &trust_b_, "etcd://memory", kRoot) {
    trust_a_.set_job(job_shape(4, 2));
    trust_b_.set_job(job_shape(4, 2));
    EXPECT_TRUE(trust_a_.read_owners(0, "host-a"));
    EXPECT_TRUE(trust_b_.read_owners(1, "host-b"));
    EXPECT_TRUE(trust_a_.read_owners(0, "host-a"));  // node 1's owner, known
  }
  // Node 1 asks for dumps at `at_s`.
  void b_asks(const std::string& reason, double at_s) {
    b_.ask(reason);
    ASSERT_TRUE(b_.pending());
    ASSERT_TRUE(b_.put(b_.take(), 1, at_s));
    EXPECT_FALSE(b_.pending());
  }
  MemoryKeyspace keyspace_;
  MemoryStore store_a_;
  MemoryStore store_b_;
  KeyTrust trust_a_;
  KeyTrust trust_b_;
  DumpRequests a_;
  DumpRequests b_;
};

TEST_F(DumpRequestsTest, AnAlarmedOwnersRequestIsHandedOnOnce) {
  Asked asked;
  ASSERT_TRUE(a_.read({}, &asked));  // the first read: nothing there yet
  const double now = unix_now_s();
  b_asks("hang", now);
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_EQ(asked, (Asked{{"hang", 1}}));
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_TRUE(asked.empty());
  ASSERT_TRUE(b_.read({1}, &asked));  // its own
  EXPECT_TRUE(asked.empty());
  // Another within the interval: refused, however alarmed.
  b_asks("hang", now + 1);
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_TRUE(asked.empty());
}

TEST_F(DumpRequestsTest, RequestsOlderThanTheFirstReadAreOnlyMarkedSeen) {
  b_asks("hang", unix_now_s());
  Asked asked;
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_TRUE(asked.empty());
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_TRUE(asked.empty());
}

TEST_F(DumpRequestsTest, AnUnalarmedNodesRequestWaitsForItsAlarmThenIsRefused) {
  Asked asked;
  ASSERT_TRUE(a_.read({}, &asked));
  b_asks("hang", unix_now_s());
  ASSERT_TRUE(a_.read({}, &asked));  // its alarm may not be read yet
  EXPECT_TRUE(asked.empty());
  ASSERT_TRUE(a_.read({1}, &asked));  // now it is
  EXPECT_EQ(asked, (Asked{{"hang", 1}}));
  // Long after it was asked, without an alarm: refused.
  b_asks("stall", unix_now_s() - DumpRequests::kRequestWaitS - 1);
  ASSERT_TRUE(a_.read({}, &asked));
  EXPECT_TRUE(asked.empty());
}

TEST_F(DumpRequestsTest, AForgersRequestIsRefused) {
  Asked asked;
  ASSERT_TRUE(a_.read({}, &asked));
  keyspace_.put(kRoot + "/dumps/0000000000001-1", R"({"reason":"hang","node":1})", 666);
  keyspace_.put(kRoot + "/dumps/0000000000002-1", R"({"reason":"hang","node":0})", 200);
  keyspace_.put(kRoot + "/dumps/0000000000003-1", "not json", 200);
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_TRUE(asked.empty());
}

TEST_F(DumpRequestsTest, RequestsNotPutForAFailedStoreAreQueuedFirstAgain) {
  b_.ask("stall");
  std::vector<std::string> taken = b_.take();
  b_.ask("hang");
  b_.requeue(taken);
  EXPECT_EQ(b_.take(), (std::vector<std::string>{"stall", "hang"}));
  store_b_.fail = true;
  EXPECT_FALSE(b_.put({"hang"}, 1, unix_now_s()));
}

TEST_F(DumpRequestsTest, ARequestLeavesTheStoreAfterItsLifeAndIsThenForgotten) {
  const std::string dumps = kRoot + "/dumps/";
  Asked asked;
  ASSERT_TRUE(a_.read({}, &asked));
  // Asked three lives ago (its name says when); node 0 hands it on once.
  const double asked_s = unix_now_s() - 3 * DumpRequests::kRequestLifeS;
  b_asks("hang", asked_s);
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_EQ(asked, (Asked{{"hang", 1}}));
  EXPECT_EQ(a_.remembered(), 1u);
  // Node 1's rounds: the request stays until its life is over, then goes.
  ASSERT_TRUE(b_.put({}, 1, asked_s + DumpRequests::kRequestLifeS - 1));
  EXPECT_EQ(keyspace_.range(dumps, 0, nullptr).size(), 1u);
  ASSERT_TRUE(b_.put({}, 1, asked_s + DumpRequests::kRequestLifeS));
  EXPECT_TRUE(keyspace_.range(dumps, 0, nullptr).empty());
  // Gone from the store long after it was asked: node 0 forgets it, and
  // hands nothing on.
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_TRUE(asked.empty());
  EXPECT_EQ(a_.remembered(), 0u);
}

TEST_F(DumpRequestsTest, AYoungRequestIsRememberedAndAFailedRemovalIsRetried) {
  const std::string dumps = kRoot + "/dumps/";
  Asked asked;
  ASSERT_TRUE(a_.read({}, &asked));
  const double now = unix_now_s();
  b_asks("hang", now);
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_EQ(asked, (Asked{{"hang", 1}}));
  // Removed by its node while still young (a shorter life elsewhere):
  // node 0 keeps it in mind, so it is never handed on twice.
  keyspace_.remove(keyspace_.range(dumps, 0, nullptr).at(0).key);
  ASSERT_TRUE(a_.read({1}, &asked));
  EXPECT_EQ(a_.remembered(), 1u);
  // Node 1's removal of an old request fails with the store; the next
  // round removes it.
  b_asks("stall", now + 1);
  store_b_.fail = true;
  EXPECT_FALSE(b_.put({}, 1, now + 1 + DumpRequests::kRequestLifeS));
  store_b_.fail = false;
  EXPECT_EQ(keyspace_.range(dumps, 0, nullptr).size(), 1u);
  ASSERT_TRUE(b_.put({}, 1, now + 1 + DumpRequests::kRequestLifeS));
  EXPECT_TRUE(keyspace_.range(dumps, 0, nullptr).empty());
}

}  // namespace
}  // namespace xpu_timer::supervisor
