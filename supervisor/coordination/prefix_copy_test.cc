// PrefixCopy (prefix_copy.h) on a store in memory: after the first read only
// the keys changed since are sent, a deletion or a store that lost its data
// makes the next read a whole one, and a failed read keeps the copy.
#include "supervisor/coordination/prefix_copy.h"

#include <gtest/gtest.h>

#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kDir = "/xpu_timer/j/owners/";

// Counts the keys each read brought.
class CountingStore final : public CoordinationStore {
 public:
  explicit CountingStore(MemoryStore* store) : store_(store) {}
  bool put(const std::string& key, const std::string& value) override {
    return store_->put(key, value);
  }
  bool get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                  int64_t min_mod_revision, int64_t* count) override {
    ++reads;
    const bool ok = store_->get_prefix(prefix, out, revision, min_mod_revision, count);
    sent += out->size();
    return ok;
  }
  bool remove(const std::string& key) override { return store_->remove(key); }
  bool keep_alive() override { return store_->keep_alive(); }
  const std::string& error() const override { return store_->error(); }
  int reads = 0;
  size_t sent = 0;

 private:
  MemoryStore* store_;
};

std::vector<std::string> keys_of(const PrefixCopy& c) {
  std::vector<std::string> out;
  for (const auto& [key, kv] : c.keys()) out.push_back(key.substr(kDir.size()) + "=" + kv.value);
  return out;
}

TEST(PrefixCopy, AfterTheFirstReadOnlyTheChangedKeysAreSent) {
  MemoryKeyspace keyspace;
  MemoryStore memory(&keyspace, 100);
  CountingStore store(&memory);
  for (int n = 0; n < 50; ++n) keyspace.put(kDir + std::to_string(n), "h", 100 + n);
  keyspace.put("/xpu_timer/j/ownersx", "not under the prefix", 1);
  PrefixCopy copy(kDir);
  bool changed = false;
  ASSERT_TRUE(copy.read(&store, &changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(copy.keys().size(), 50u);
  EXPECT_EQ(store.sent, 50u);
  // Unchanged: nothing sent, one call.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(copy.read(&store, &changed));
    EXPECT_FALSE(changed);
  }
  EXPECT_EQ(store.sent, 50u);
  EXPECT_EQ(store.reads, 6);
  // One added, one changed: two sent.
  keyspace.put(kDir + "50", "h", 150);
  keyspace.put(kDir + "7", "h2", 107);
  ASSERT_TRUE(copy.read(&store, &changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(store.sent, 52u);
  EXPECT_EQ(copy.keys().size(), 51u);
  EXPECT_EQ(copy.keys().at(kDir + "7").value, "h2");
  EXPECT_EQ(copy.keys().at(kDir + "7").lease, 107);
  EXPECT_EQ(copy.whole_reads(), 1u);
}

TEST(PrefixCopy, ADeletionIsSeenAtTheNextReadEvenWithAKeyAddedMeanwhile) {
  MemoryKeyspace keyspace;
  MemoryStore memory(&keyspace, 100);
  CountingStore store(&memory);
  keyspace.put(kDir + "0", "a", 100);
  keyspace.put(kDir + "1", "b", 101);
  PrefixCopy copy(kDir);
  ASSERT_TRUE(copy.read(&store));
  keyspace.expire(101);  // node 1's lease ended
  keyspace.put(kDir + "2", "c", 102);
  bool changed = false;
  ASSERT_TRUE(copy.read(&store, &changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(keys_of(copy), (std::vector<std::string>{"0=a", "2=c"}));
  EXPECT_EQ(copy.whole_reads(), 2u);
  keyspace.remove(kDir + "0");
  ASSERT_TRUE(copy.read(&store, &changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(keys_of(copy), (std::vector<std::string>{"2=c"}));
  keyspace.remove(kDir + "2");
  ASSERT_TRUE(copy.read(&store, &changed));
  EXPECT_TRUE(copy.keys().empty());
  // Empty and unchanged: nothing more.
  const int reads = store.reads;
  ASSERT_TRUE(copy.read(&store, &changed));
  EXPECT_FALSE(changed);
  EXPECT_EQ(store.reads, reads + 1);
}

TEST(PrefixCopy, AStoreThatLostItsDataIsReadWholeAgain) {
  MemoryKeyspace before;
  MemoryStore old_store(&before, 100);
  for (int n = 0; n < 10; ++n) before.put(kDir + std::to_string(n), "x", 100);
  PrefixCopy copy(kDir);
  ASSERT_TRUE(copy.read(&old_store));
  // etcd restarted empty: its revision starts again from 1.
  MemoryKeyspace after;
  MemoryStore new_store(&after, 100);
  after.put(kDir + "3", "y", 100);
  bool changed = false;
  ASSERT_TRUE(copy.read(&new_store, &changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(keys_of(copy), (std::vector<std::string>{"3=y"}));
  EXPECT_EQ(copy.whole_reads(), 2u);
}

TEST(PrefixCopy, AFailedReadKeepsTheCopy) {
  MemoryKeyspace keyspace;
  MemoryStore store(&keyspace, 100);
  keyspace.put(kDir + "0", "a", 100);
  PrefixCopy copy(kDir);
  ASSERT_TRUE(copy.read(&store));
  keyspace.remove(kDir + "0");
  store.fail = true;
  EXPECT_FALSE(copy.read(&store));
  EXPECT_EQ(keys_of(copy), (std::vector<std::string>{"0=a"}));
  store.fail = false;
  ASSERT_TRUE(copy.read(&store));
  EXPECT_TRUE(copy.keys().empty());
}

}  // namespace
}  // namespace xpu_timer::supervisor
