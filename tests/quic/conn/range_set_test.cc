#include "quic/conn/range_set.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace dpquic::conn {
namespace {

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

Pairs as_pairs(const RangeSet& set) {
  Pairs out;
  for (const RangeSet::Range& r : set.ranges()) out.emplace_back(r.begin, r.end);
  return out;
}

TEST(RangeSetTest, StartsEmpty) {
  RangeSet set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.size(), 0u);
  EXPECT_EQ(set.total_length(), 0u);
  EXPECT_FALSE(set.contains(0));
  EXPECT_GE(set.capacity(), 8u);
}

TEST(RangeSetTest, InsertKeepsOrderAndMergesOverlapsAndNeighbours) {
  RangeSet set;
  set.insert(10, 20);
  set.insert(30, 40);
  set.insert(0, 5);
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 5}, {10, 20}, {30, 40}}));
  set.insert(20, 25);  // touches [10, 20): merged
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 5}, {10, 25}, {30, 40}}));
  set.insert(5, 10);  // fills the gap exactly: three become one
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 25}, {30, 40}}));
  set.insert(12, 18);  // inside: no change
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 25}, {30, 40}}));
  set.insert(28, 50);  // covers [30, 40) and extends both ways
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 25}, {28, 50}}));
  set.insert(7, 7);  // empty
  set.insert(9, 3);  // inverted: empty
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 25}, {28, 50}}));
  EXPECT_EQ(set.total_length(), 47u);
}

TEST(RangeSetTest, RemoveTrimsSplitsAndErases) {
  RangeSet set;
  set.insert(0, 100);
  set.remove(40, 60);  // split
  EXPECT_EQ(as_pairs(set), (Pairs{{0, 40}, {60, 100}}));
  set.remove(0, 10);  // front trim
  EXPECT_EQ(as_pairs(set), (Pairs{{10, 40}, {60, 100}}));
  set.remove(90, 200);  // back trim past the end
  EXPECT_EQ(as_pairs(set), (Pairs{{10, 40}, {60, 90}}));
  set.remove(40, 60);  // exactly the gap: nothing
  EXPECT_EQ(as_pairs(set), (Pairs{{10, 40}, {60, 90}}));
  set.remove(30, 70);  // across the gap: trims both
  EXPECT_EQ(as_pairs(set), (Pairs{{10, 30}, {70, 90}}));
  set.insert(100, 110);
  set.remove(0, 105);  // erases two, trims the third
  EXPECT_EQ(as_pairs(set), (Pairs{{105, 110}}));
  set.remove(105, 110);
  EXPECT_TRUE(set.empty());
}

TEST(RangeSetTest, ContainsIsHalfOpen) {
  RangeSet set;
  set.insert(10, 20);
  set.insert(30, 31);
  EXPECT_FALSE(set.contains(9));
  EXPECT_TRUE(set.contains(10));
  EXPECT_TRUE(set.contains(19));
  EXPECT_FALSE(set.contains(20));
  EXPECT_TRUE(set.contains(30));
  EXPECT_FALSE(set.contains(31));
  EXPECT_FALSE(set.contains(UINT64_MAX));
}

TEST(RangeSetTest, FrontPopFrontAndClear) {
  RangeSet set;
  set.insert(50, 60);
  set.insert(10, 20);
  EXPECT_EQ(set.front().begin, 10u);
  EXPECT_EQ(set.front().end, 20u);
  set.pop_front();
  EXPECT_EQ(set.front().begin, 50u);
  EXPECT_EQ(set.size(), 1u);
  set.insert(70, 80);
  set.insert(90, 95);
  set.pop_front(2);
  EXPECT_EQ(as_pairs(set), (Pairs{{90, 95}}));
  set.pop_front(5);  // more than there are: empties
  EXPECT_TRUE(set.empty());
  set.insert(1, 2);
  set.clear();
  EXPECT_TRUE(set.empty());
}

TEST(RangeSetTest, GrowsByDoublingAndNeverShrinks) {
  RangeSet set(4);
  EXPECT_EQ(set.capacity(), 4u);
  for (uint64_t i = 0; i < 4; ++i) set.insert(i * 10, i * 10 + 1);
  EXPECT_EQ(set.capacity(), 4u);
  set.insert(100, 101);
  EXPECT_EQ(set.capacity(), 8u);
  for (uint64_t i = 5; i < 9; ++i) set.insert(i * 100, i * 100 + 1);
  EXPECT_EQ(set.size(), 9u);
  EXPECT_EQ(set.capacity(), 16u);
  set.clear();
  EXPECT_EQ(set.capacity(), 16u);
  // A split of a full set also doubles.
  RangeSet full(1);
  full.insert(0, 10);
  full.remove(4, 6);
  EXPECT_EQ(as_pairs(full), (Pairs{{0, 4}, {6, 10}}));
  EXPECT_EQ(full.capacity(), 2u);
}

TEST(RangeSetTest, HandlesTheWholeUint64Span) {
  RangeSet set;
  set.insert(UINT64_MAX - 10, UINT64_MAX);
  set.insert(0, 1);
  EXPECT_TRUE(set.contains(UINT64_MAX - 1));
  EXPECT_EQ(set.total_length(), 11u);
  set.remove(0, UINT64_MAX);
  EXPECT_TRUE(set.empty());
}

// Random inserts and removes against a bitmap model, with a fixed seed.
TEST(RangeSetTest, MatchesBitmapModel) {
  constexpr uint64_t kSpace = 512;
  std::mt19937_64 random(0x5e7d);
  RangeSet set(2);
  std::vector<bool> model(kSpace, false);
  for (int step = 0; step < 20000; ++step) {
    const uint64_t a = random() % kSpace;
    const uint64_t b = a + random() % 24;
    const uint64_t end = std::min(b, kSpace);
    const bool add = random() % 3 != 0;
    if (add) {
      set.insert(a, end);
    } else {
      set.remove(a, end);
    }
    for (uint64_t i = a; i < end; ++i) model[i] = add;
    if (step % 97 == 0 || step == 19999) {
      // Rebuild the expected ranges from the model and compare exactly.
      Pairs expected;
      for (uint64_t i = 0; i < kSpace;) {
        if (!model[i]) {
          ++i;
          continue;
        }
        uint64_t j = i;
        while (j < kSpace && model[j]) ++j;
        expected.emplace_back(i, j);
        i = j;
      }
      ASSERT_EQ(as_pairs(set), expected) << "step " << step;
      uint64_t total = 0;
      for (uint64_t i = 0; i < kSpace; ++i) {
        ASSERT_EQ(set.contains(i), static_cast<bool>(model[i])) << i;
        total += model[i] ? 1 : 0;
      }
      ASSERT_EQ(set.total_length(), total);
    }
  }
}

}  // namespace
}  // namespace dpquic::conn
