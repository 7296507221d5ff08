#include "inject/comm_hash.h"

#include <gtest/gtest.h>
#include <nccl.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "inject/comm_registry.h"

namespace xpu_timer::inject {
namespace {

ncclUniqueId make_id(char fill) {
  ncclUniqueId id;
  std::memset(id.internal, fill, sizeof(id.internal));
  return id;
}

TEST(CommHash, SameUniqueIdGivesSameHashOnEveryRank) {
  // Each rank receives its own copy of the id bytes (broadcast by the launcher).
  const ncclUniqueId on_rank0 = make_id(7);
  const ncclUniqueId on_rank1 = make_id(7);
  EXPECT_EQ(comm_hash_from_unique_ids(&on_rank0, 1, sizeof(ncclUniqueId)),
            comm_hash_from_unique_ids(&on_rank1, 1, sizeof(ncclUniqueId)));
  ncclUniqueId other = make_id(7);
  other.internal[100] = 8;
  EXPECT_NE(comm_hash_from_unique_ids(&on_rank0, 1, sizeof(ncclUniqueId)),
            comm_hash_from_unique_ids(&other, 1, sizeof(ncclUniqueId)));
  EXPECT_NE(comm_hash_from_unique_ids(&on_rank0, 1, sizeof(ncclUniqueId)), 0u);
}

TEST(CommHash, ScalableInitHashesAllIds) {
  const ncclUniqueId ids[2] = {make_id(1), make_id(2)};
  const uint64_t both = comm_hash_from_unique_ids(ids, 2, sizeof(ncclUniqueId));
  EXPECT_EQ(both, comm_hash_from_unique_ids(ids, 2, sizeof(ncclUniqueId)));
  EXPECT_NE(both, comm_hash_from_unique_ids(ids, 1, sizeof(ncclUniqueId)));
}

TEST(CommHash, SplitDependsOnParentColorAndOrdinal) {
  const uint64_t parent = comm_hash_from_unique_ids(nullptr, 0, 0) ^ 0x1234;
  const uint64_t a = comm_hash_for_split(parent, 0, 0);
  EXPECT_EQ(a, comm_hash_for_split(parent, 0, 0));  // same on every rank
  std::set<uint64_t> all = {a, comm_hash_for_split(parent, 1, 0), comm_hash_for_split(parent, 0, 1),
                            comm_hash_for_split(parent ^ 1, 0, 0), parent};
  EXPECT_EQ(all.size(), 5u);
}

TEST(CommHash, UnknownCommHashIncludesThePointer) {
  int a = 0, b = 0;
  EXPECT_NE(comm_hash_for_unknown(4, 0, &a), comm_hash_for_unknown(4, 0, &b));
  EXPECT_EQ(comm_hash_for_unknown(4, 0, &a), comm_hash_for_unknown(4, 0, &a));
}

TEST(CommRegistry, AddFindDestroyAndPointerReuse) {
  auto reg = std::make_unique<CommRegistry>();
  int comm_a = 0, comm_b = 0;
  EXPECT_EQ(reg->find(&comm_a), CommRegistry::kNone);
  const uint32_t a = reg->add(&comm_a, 111, 4, 1, 0, 0, true);
  const uint32_t b = reg->add(&comm_b, 222, 8, 3, 1, 0, true);
  ASSERT_NE(a, CommRegistry::kNone);
  EXPECT_EQ(reg->find(&comm_a), a);
  EXPECT_EQ(reg->find(&comm_b), b);
  EXPECT_EQ(reg->entry(b).hash.load(), 222u);
  EXPECT_EQ(reg->entry(b).nranks.load(), 8);
  EXPECT_EQ(reg->size(), 2u);

  reg->entry(a).issued_seq.fetch_add(5);
  reg->mark_destroyed(&comm_a);
  EXPECT_TRUE(reg->entry(a).flags.load() & CommEntry::kDestroyed);
  // NCCL hands the same address to a new communicator: a fresh entry, seq 0.
  const uint32_t a2 = reg->add(&comm_a, 333, 2, 0, 0, 0, true);
  EXPECT_NE(a2, a);
  EXPECT_EQ(reg->find(&comm_a), a2);
  EXPECT_EQ(reg->entry(a2).issued_seq.load(), 0u);
  EXPECT_EQ(reg->entry(a).issued_seq.load(), 5u);  // the old one keeps its history
  // Without replace (an unknown comm seen by two threads) the existing entry wins.
  EXPECT_EQ(reg->add(&comm_a, 444, 2, 0, 0, CommEntry::kUnknown, false), a2);
}

TEST(CommRegistry, FullRegistryReturnsNone) {
  auto reg = std::make_unique<CommRegistry>();
  std::unique_ptr<char[]> comms(new char[CommRegistry::kCapacity + 1]);
  for (uint32_t i = 0; i < CommRegistry::kCapacity; ++i) {
    ASSERT_EQ(reg->add(&comms[i], i + 1, 2, 0, 0, 0, true), i);
  }
  EXPECT_EQ(reg->add(&comms[CommRegistry::kCapacity], 1, 2, 0, 0, 0, true), CommRegistry::kNone);
  for (uint32_t i = 0; i < CommRegistry::kCapacity; ++i) ASSERT_EQ(reg->find(&comms[i]), i);
}

TEST(CommName, CopiesAtMost31PrintableBytes) {
  char out[kCommNameBytes];
  EXPECT_TRUE(copy_comm_name("tp_group", out));
  EXPECT_STREQ(out, "tp_group");
  const std::string long_name(100, 'x');
  EXPECT_TRUE(copy_comm_name(long_name.c_str(), out));
  EXPECT_EQ(std::string(out), std::string(kCommNameBytes - 1, 'x'));  // truncated, terminated
  EXPECT_TRUE(copy_comm_name("a\tb\x7f\xc3\xa9z", out));
  EXPECT_STREQ(out, "a?b???z");  // control bytes, DEL and UTF-8 bytes alike
  EXPECT_FALSE(copy_comm_name(nullptr, out));
  EXPECT_STREQ(out, "");
  EXPECT_FALSE(copy_comm_name("", out));
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
TEST(CommName, ReadFromAConfigOnlyWhereTheCallersStructHasTheField) {
  char out[kCommNameBytes];
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  EXPECT_FALSE(comm_name_from_config(&config, out));  // commName left undefined (NULL)
  EXPECT_FALSE(comm_name_from_config(nullptr, out));
  std::string name = "pp_group";
  config.commName = name.c_str();
  ASSERT_TRUE(comm_name_from_config(&config, out));
  EXPECT_STREQ(out, "pp_group");
  name[0] = 'X';  // a copy, not the caller's pointer
  EXPECT_STREQ(out, "pp_group");

  // A program built against an older nccl.h passes a shorter struct: the
  // bytes where commName would be are not its (here: garbage, never read).
  ncclConfig_t old = config;
  old.size = offsetof(ncclConfig_t, commName);
  old.commName = reinterpret_cast<const char*>(0x1);
  EXPECT_FALSE(comm_name_from_config(&old, out));
  EXPECT_STREQ(out, "");
  old = config;
  old.version = NCCL_VERSION(2, 26, 5);
  old.commName = reinterpret_cast<const char*>(0x1);
  EXPECT_FALSE(comm_name_from_config(&old, out));
  old = config;
  old.magic = 0;  // not initialised with NCCL_CONFIG_INITIALIZER
  EXPECT_FALSE(comm_name_from_config(&old, out));

  const std::string weird = std::string("\x01name\n") + std::string(40, 'y');
  config.commName = weird.c_str();
  ASSERT_TRUE(comm_name_from_config(&config, out));
  EXPECT_EQ(std::string(out), "?name?" + std::string(kCommNameBytes - 7, 'y'));
}
#endif

TEST(CommName, PluginNameReachesOnlyAnOpenWindowOnTheSameThread) {
  char out[kCommNameBytes];
  plugin_name_note("early");  // no constructor running on this thread
  plugin_name_window_open();
  EXPECT_FALSE(plugin_name_window_take(out));
  plugin_name_window_open();
  plugin_name_note("dp\x02");
  std::thread([] { plugin_name_note("other thread"); }).join();
  ASSERT_TRUE(plugin_name_window_take(out));
  EXPECT_STREQ(out, "dp?");
  EXPECT_FALSE(plugin_name_window_take(out));  // closed
  plugin_name_window_open();
  plugin_name_note(nullptr);  // NCCL had no name
  EXPECT_FALSE(plugin_name_window_take(out));
}

TEST(CommRegistry, KeepsTheNameGivenAtCreation) {
  auto reg = std::make_unique<CommRegistry>();
  int comm_a = 0, comm_b = 0;
  char name[kCommNameBytes];
  copy_comm_name("tp_group", name);
  const uint32_t a = reg->add(&comm_a, 111, 4, 1, 0, 0, true, name);
  const uint32_t b = reg->add(&comm_b, 222, 4, 1, 0, 0, true);
  EXPECT_STREQ(reg->entry(a).name, "tp_group");
  EXPECT_STREQ(reg->entry(b).name, "");
  // A new communicator at a destroyed one's address does not inherit its name.
  reg->mark_destroyed(&comm_a);
  const uint32_t a2 = reg->add(&comm_a, 333, 4, 1, 0, 0, true);
  EXPECT_STREQ(reg->entry(a2).name, "");
  EXPECT_STREQ(reg->entry(a).name, "tp_group");
}

}  // namespace
}  // namespace xpu_timer::inject
