// NodeAlarms (node_alarms.h) on a store in memory: this node's alarm key put
// and removed only when it changes, the alarms of owners only, and the
// job-wide mismatches handed on apart.
#include "supervisor/coordination/node_alarms.h"

#include <gtest/gtest.h>

#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";

TEST(NodeAlarms, PutsAndRemovesItsKeyOnlyWhenItsAlarmChanges) {
  MemoryKeyspace keyspace;
  MemoryStore store(&keyspace, 100);
  KeyTrust trust(&store, "etcd://memory", kRoot);
  NodeAlarms alarms(&store, &trust, kRoot);
  int64_t revision = 0;
  ASSERT_TRUE(alarms.put(0, false));
  EXPECT_EQ(store.calls, 0);
  ASSERT_TRUE(alarms.put(0, true));
  ASSERT_TRUE(alarms.put(0, true));
  EXPECT_EQ(store.calls, 1);
  EXPECT_EQ(keyspace.range(kRoot + "/alarms/", 0, &revision).size(), 1u);
  store.fail = true;
  EXPECT_FALSE(alarms.put(0, false));
  store.fail = false;
  ASSERT_TRUE(alarms.put(0, false));  // tried again: it did not change
  EXPECT_TRUE(keyspace.range(kRoot + "/alarms/", 0, &revision).empty());
}

TEST(NodeAlarms, CountsTheAlarmsOfOwnersAndHandsMismatchesOn) {
  MemoryKeyspace keyspace;
  MemoryStore store(&keyspace, 100);
  KeyTrust trust(&store, "etcd://memory", kRoot);
  NodeAlarms alarms(&store, &trust, kRoot);
  keyspace.create(kRoot + "/owners/1", "host-b", 200);
  keyspace.put(kRoot + "/alarms/1", "1", 200);
  keyspace.put(kRoot + "/alarms/0", "1", 666);  // a forger's, for node 0
  keyspace.put(kRoot + "/alarms/mismatch-1a-7", "{}", 200);
  keyspace.put(kRoot + "/alarms/x", "1", 200);

  std::vector<KeyValue> mismatches;
  ASSERT_TRUE(alarms.read(&mismatches));  // the job's size unknown: nothing counts
  EXPECT_TRUE(alarms.alarmed().empty());
  EXPECT_TRUE(mismatches.empty());

  trust.set_job(job_shape(4, 2));
  ASSERT_TRUE(trust.read_owners(0, "host-a"));
  ASSERT_TRUE(alarms.read(&mismatches));
  EXPECT_EQ(alarms.alarmed(), (std::set<int>{1}));
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].key, kRoot + "/alarms/mismatch-1a-7");
}

}  // namespace
}  // namespace xpu_timer::supervisor
