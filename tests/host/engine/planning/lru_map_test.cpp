// LruMap: bounded, evicts the least recently used entry, never refuses a new key.
#include "host/engine/planning/lru_map.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ctx::engine::planning {
namespace {

TEST(LruMap, InsertingMoreThanTheBoundEvictsTheOldestAndKeepsWorking) {
  LruMap<std::string, int> map(3);
  for (int i = 0; i < 10; ++i) map.put("k" + std::to_string(i), i);
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
  EXPECT_EQ(map.put("a", 5), 5);
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

}  // namespace
}  // namespace ctx::engine::planning
