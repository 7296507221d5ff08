#include "inject/range_names.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace xpu_timer::inject {
namespace {

uint16_t intern(RangeNames& n, const std::string& s) { return n.intern(s.data(), s.size()); }

TEST(RangeNames, SameNameSameIdOtherIsZero) {
  RangeNames n;
  EXPECT_EQ(n.size(), 1u);
  EXPECT_STREQ(n.name(RangeNames::kOther), "(other)");
  const uint16_t fwd = intern(n, "forward");
  const uint16_t bwd = intern(n, "backward");
  EXPECT_EQ(fwd, 1);
  EXPECT_EQ(bwd, 2);
  EXPECT_EQ(intern(n, "forward"), fwd);
  EXPECT_EQ(intern(n, "forwar"), 3);  // a prefix is another name
  EXPECT_STREQ(n.name(fwd), "forward");
  EXPECT_EQ(n.size(), 4u);
}

TEST(RangeNames, AFunctionAndARangeOfOneNameAreTwoEntries) {
  RangeNames n;
  const uint16_t range = intern(n, "torch.cuda.synchronize");
  const uint16_t fn = n.intern("torch.cuda.synchronize", 22, proto::RangeKind::kPythonFunction);
  EXPECT_EQ(range, 1);
  EXPECT_EQ(fn, 2);
  EXPECT_EQ(n.kind(range), proto::RangeKind::kNvtx);
  EXPECT_EQ(n.kind(fn), proto::RangeKind::kPythonFunction);
  EXPECT_EQ(n.kind(RangeNames::kOther), proto::RangeKind::kNvtx);
  EXPECT_EQ(n.intern("torch.cuda.synchronize", 22, proto::RangeKind::kPythonFunction), fn);
  EXPECT_STREQ(n.name(fn), "torch.cuda.synchronize");
}

TEST(RangeNames, LongNamesAreCutAndShareTheirPrefix) {
  RangeNames n;
  const std::string a = std::string(60, 'a') + "1", b = std::string(60, 'a') + "2";
  const uint16_t id = intern(n, a);
  EXPECT_EQ(intern(n, b), id);  // equal in their first 47 bytes
  EXPECT_EQ(std::strlen(n.name(id)), proto::kRangeNameBytes - 1);
}

TEST(RangeNames, NamesBeyondTheCapacityGoToOther) {
  RangeNames n;
  for (uint32_t i = 1; i < RangeNames::kCapacity; ++i) {
    EXPECT_EQ(intern(n, "layer_" + std::to_string(i)), i);
  }
  EXPECT_EQ(n.size(), RangeNames::kCapacity);
  EXPECT_EQ(intern(n, "one_too_many"), RangeNames::kOther);
  EXPECT_EQ(intern(n, "layer_7"), 7);  // known names are still found
  EXPECT_EQ(n.size(), RangeNames::kCapacity);
}

TEST(RangeNames, ThreadsInterningTheSameNamesAgree) {
  RangeNames n;
  constexpr int kThreads = 4, kNames = 40;
  std::vector<std::vector<uint16_t>> ids(kThreads, std::vector<uint16_t>(kNames));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < kNames; ++i) {
          const int k = (i * 7 + t * 13) % kNames;  // each thread in its own order
          ids[t][k] = intern(n, "name_" + std::to_string(k));
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::set<uint16_t> distinct;
  for (int i = 0; i < kNames; ++i) {
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t][i], ids[0][i]) << i;
    distinct.insert(ids[0][i]);
    EXPECT_EQ(n.name(ids[0][i]), "name_" + std::to_string(i));
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kNames));
  EXPECT_EQ(n.size(), kNames + 1u);
}

}  // namespace
}  // namespace xpu_timer::inject
