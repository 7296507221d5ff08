// KeyTrust (key_trust.h) on a store in memory: the owner key claimed under
// this node's lease, keys counted only under their node's owner lease, the
// owners read again once a round for a node whose owner came late.
#include "supervisor/coordination/key_trust.h"

#include <gtest/gtest.h>

#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";

KeyValue key_of(const std::string& key, int64_t lease) {
  KeyValue kv;
  kv.key = key;
  kv.lease = lease;
  return kv;
}

class KeyTrustTest : public ::testing::Test {
 protected:
  KeyTrustTest() : store_(&keyspace_, 100), trust_(&store_, "etcd://memory", kRoot) {
    trust_.set_job(job_shape(4, 2));  // two nodes
  }
  MemoryKeyspace keyspace_;
  MemoryStore store_;
  KeyTrust trust_;
};

TEST_F(KeyTrustTest, ClaimsItsOwnerKeyUnderItsLease) {
  ASSERT_TRUE(trust_.read_owners(0, "host-a"));
  EXPECT_TRUE(trust_.owns_node());
  int64_t revision = 0;
  const std::vector<KeyValue> kvs = keyspace_.range(kRoot + "/owners/", 0, &revision);
  ASSERT_EQ(kvs.size(), 1u);
  EXPECT_EQ(kvs[0].key, kRoot + "/owners/0");
  EXPECT_EQ(kvs[0].value, "host-a");
  EXPECT_EQ(kvs[0].lease, 100);
  EXPECT_EQ(trust_.owners(), (std::map<int, int64_t>{{0, 100}}));
}

TEST_F(KeyTrustTest, AnOwnerKeyHeldByAnotherLeaseIsClaimedOnceItIsGone) {
  keyspace_.create(kRoot + "/owners/0", "other", 7);
  ASSERT_TRUE(trust_.read_owners(0, "host-a"));
  EXPECT_FALSE(trust_.owns_node());
  keyspace_.expire(7);
  ASSERT_TRUE(trust_.read_owners(0, "host-a"));
  EXPECT_TRUE(trust_.owns_node());
}

TEST_F(KeyTrustTest, OnlyTheOwnersLeaseWritesForANodeOfTheJob) {
  keyspace_.create(kRoot + "/owners/1", "host-b", 200);
  ASSERT_TRUE(trust_.read_owners(0, "host-a"));
  EXPECT_TRUE(trust_.trusted(key_of(kRoot + "/nodes/1", 200), 1));
  EXPECT_FALSE(trust_.trusted(key_of(kRoot + "/nodes/1", 666), 1));  // a forger's
  keyspace_.create(kRoot + "/owners/2", "host-c", 300);
  EXPECT_FALSE(trust_.trusted(key_of(kRoot + "/nodes/2", 300), 2));  // not a node of the job
  std::string why;
  EXPECT_FALSE(trust_.written_by_owner(key_of(kRoot + "/nodes/1", 666), 1, &why));
  EXPECT_FALSE(why.empty());
}

TEST_F(KeyTrustTest, ANodeWhoseOwnerCameAfterTheReadOfTheOwnersIsReadAgainOnceARound) {
  ASSERT_TRUE(trust_.read_owners(0, "host-a"));
  keyspace_.create(kRoot + "/owners/1", "host-b", 200);
  const int calls = store_.calls;
  EXPECT_TRUE(trust_.trusted(key_of(kRoot + "/nodes/1", 200), 1));
  EXPECT_EQ(store_.calls, calls + 1);  // the owners, again
  EXPECT_FALSE(trust_.trusted(key_of(kRoot + "/stamps/1", 666), 1));
  EXPECT_EQ(store_.calls, calls + 1);            // not twice in a round
  ASSERT_TRUE(trust_.read_owners(0, "host-a"));  // the next round
  EXPECT_FALSE(trust_.trusted(key_of(kRoot + "/stamps/1", 666), 1));
  EXPECT_EQ(store_.calls, calls + 3);
}

TEST_F(KeyTrustTest, AFailedReadOfTheOwnersSaysSo) {
  store_.fail = true;
  EXPECT_FALSE(trust_.read_owners(0, "host-a"));
  store_.fail = false;
  EXPECT_TRUE(trust_.read_owners(0, "host-a"));
  EXPECT_TRUE(trust_.owns_node());
}

}  // namespace
}  // namespace xpu_timer::supervisor
