// core::LruMap: bounded by count and by declared bytes, evicts the least recently used entry,
// refreshes on a hit, never keeps an entry above the per-entry bound, never refuses a new key.
#include "host/core/lru_map.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ctx::core {
namespace {

TEST(LruMap, InsertingMoreThanTheCountBoundEvictsTheOldestAndKeepsWorking) {
  LruMap<std::string, int> map(3);
  for (int i = 0; i < 10; ++i) ASSERT_NE(map.put("k" + std::to_string(i), i), nullptr);
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(map.find("k6"), nullptr);
  ASSERT_NE(map.find("k7"), nullptr);
  EXPECT_EQ(*map.find("k9"), 9);
  map.put("k10", 10);  // evicts k8, the least recently used after the two finds
  EXPECT_FALSE(map.contains("k8"));
  EXPECT_TRUE(map.contains("k7"));
  EXPECT_TRUE(map.contains("k9"));
  EXPECT_TRUE(map.contains("k10"));
}

TEST(LruMap, FindRefreshesAndPutReplacesWithoutGrowing) {
  LruMap<std::string, int> map(2);
  map.put("a", 1);
  map.put("b", 2);
  ASSERT_NE(map.find("a"), nullptr);  // "b" is now the oldest
  EXPECT_EQ(*map.put("a", 5), 5);
  EXPECT_EQ(map.size(), 2u);
  map.put("c", 3);
  EXPECT_FALSE(map.contains("b"));
  EXPECT_EQ(*map.find("a"), 5);
  EXPECT_EQ(*map.find("c"), 3);
}

TEST(LruMap, ZeroCapacityHoldsOneEntry) {
  LruMap<int, int> map(0);
  EXPECT_EQ(map.capacity(), 1u);
  map.put(1, 1);
  map.put(2, 2);
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(*map.find(2), 2);
  EXPECT_EQ(map.find(1), nullptr);
}

TEST(LruMap, TheByteBudgetEvictsLeastRecentlyUsedEntriesUntilItHolds) {
  LruMap<std::string, int> map(LruBounds{.max_entries = 100, .max_bytes = 100});
  map.put("a", 1, 40);
  map.put("b", 2, 40);
  EXPECT_EQ(map.bytes(), 80u);
  ASSERT_NE(map.find("a"), nullptr);  // "b" is now the oldest
  map.put("c", 3, 30);                // 110 > 100: evicts b only
  EXPECT_FALSE(map.contains("b"));
  EXPECT_TRUE(map.contains("a"));
  EXPECT_TRUE(map.contains("c"));
  EXPECT_EQ(map.bytes(), 70u);
  map.put("d", 4, 100);  // fills the budget alone: everything older goes
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(map.bytes(), 100u);
  EXPECT_EQ(*map.find("d"), 4);
}

TEST(LruMap, ReplacingAnEntryCountsOnlyItsNewCost) {
  LruMap<std::string, int> map(LruBounds{.max_entries = 10, .max_bytes = 100});
  map.put("a", 1, 60);
  map.put("b", 2, 30);
  map.put("a", 3, 10);  // a's 60 bytes are released, not added to
  EXPECT_EQ(map.bytes(), 40u);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(*map.find("a"), 3);
  EXPECT_TRUE(map.erase("b"));
  EXPECT_FALSE(map.erase("b"));
  EXPECT_EQ(map.bytes(), 10u);
}

TEST(LruMap, AnEntryLargerThanTheBudgetIsNotKeptAndEvictsNothing) {
  LruMap<std::string, int> map(
      LruBounds{.max_entries = 10, .max_bytes = 100, .max_entry_bytes = 25});
  map.put("a", 1, 20);
  map.put("b", 2, 20);
  EXPECT_EQ(map.put("huge", 3, 26), nullptr);
  EXPECT_FALSE(map.contains("huge"));
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.bytes(), 40u);
  // A too-large replacement drops the earlier value rather than keeping a stale one.
  EXPECT_EQ(map.put("a", 4, 101), nullptr);
  EXPECT_FALSE(map.contains("a"));
  EXPECT_EQ(map.bytes(), 20u);
  // Without a per-entry bound the total budget is the per-entry bound.
  LruMap<std::string, int> total(LruBounds{.max_entries = 10, .max_bytes = 50});
  EXPECT_EQ(total.bounds().max_entry_bytes, 50u);
  total.put("x", 1, 10);
  EXPECT_EQ(total.put("y", 2, 51), nullptr);
  EXPECT_TRUE(total.contains("x"));
}

TEST(LruMap, NeverRefusesANewKeyAfterManyEntries) {
  LruMap<int, std::string> map(LruBounds{.max_entries = 8, .max_bytes = 64});
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_NE(map.put(i, std::string(8, 'x'), 8 + static_cast<std::size_t>(i % 3)), nullptr);
    ASSERT_LE(map.size(), 8u);
    ASSERT_LE(map.bytes(), 64u);
  }
  EXPECT_NE(map.find(9'999), nullptr);
  EXPECT_EQ(map.find(0), nullptr);
}

}  // namespace
}  // namespace ctx::core
