#include "inject/call_cache.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace xpu_timer::inject {
namespace {

struct Key {
  uint64_t words[4];
};

TEST(CallCache, FindsOnlyAKeyEqualInEveryByte) {
  CallCache<Key, int> cache;
  const Key a{{1, 2, 3, 4}};
  int v = 0;
  EXPECT_FALSE(cache.find(a, &v));
  cache.store(a, 7);
  ASSERT_TRUE(cache.find(a, &v));
  EXPECT_EQ(v, 7);
  // Each word differing alone is another key (a reused descriptor address
  // holding another shape must never find the old shape).
  for (int i = 0; i < 4; ++i) {
    Key b = a;
    b.words[i] ^= 1ull << 40;
    EXPECT_FALSE(cache.find(b, &v)) << "word " << i;
  }
}

TEST(CallCache, AStoreOverwritesTheValueOfItsKey) {
  CallCache<Key, int> cache;
  const Key a{{9, 9, 9, 9}};
  cache.store(a, 1);
  cache.store(a, 2);
  int v = 0;
  ASSERT_TRUE(cache.find(a, &v));
  EXPECT_EQ(v, 2);
}

TEST(CallCache, ACollisionEvictsButNeverAnswersForTheOtherKey) {
  // One entry: every key collides.
  CallCache<Key, int, 1> cache;
  const Key a{{1, 0, 0, 0}}, b{{2, 0, 0, 0}};
  cache.store(a, 10);
  cache.store(b, 20);
  int v = 0;
  EXPECT_FALSE(cache.find(a, &v));
  ASSERT_TRUE(cache.find(b, &v));
  EXPECT_EQ(v, 20);
}

TEST(CallCache, KeysSpreadOverTheEntries) {
  // Sixteen distinct keys in a 64-entry cache: most of them stay (a cache
  // whose slot ignored the key would keep one).
  CallCache<Key, int, 64> cache;
  for (uint64_t i = 0; i < 16; ++i)
    cache.store(Key{{i * 64, 0x1000 + i, 0, 0}}, static_cast<int>(i));
  int kept = 0;
  for (uint64_t i = 0; i < 16; ++i) {
    int v = -1;
    if (cache.find(Key{{i * 64, 0x1000 + i, 0, 0}}, &v)) {
      EXPECT_EQ(v, static_cast<int>(i));
      ++kept;
    }
  }
  EXPECT_GE(kept, 8);
}

}  // namespace
}  // namespace xpu_timer::inject
