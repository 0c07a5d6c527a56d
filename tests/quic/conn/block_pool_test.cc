#include "quic/conn/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <vector>

namespace dpquic::conn {
namespace {

TEST(BlockPoolTest, RejectsBadConfiguration) {
  EXPECT_THROW(BlockPool(0, 1, 4), std::invalid_argument);
  EXPECT_THROW(BlockPool(128, 1, 4), std::invalid_argument);  // power of two, too small
  EXPECT_THROW(BlockPool(255, 1, 4), std::invalid_argument);
  EXPECT_THROW(BlockPool(300, 1, 4), std::invalid_argument);  // >= 256, not a power of two
  EXPECT_THROW(BlockPool(256, 1, 0), std::invalid_argument);
  EXPECT_THROW(BlockPool(256, 5, 4), std::invalid_argument);
  EXPECT_NO_THROW(BlockPool(256, 4, 4));
  EXPECT_NO_THROW(BlockPool(1 << 16, 0, 1));
}

TEST(BlockPoolTest, AllocatesInitialBlocksUpFront) {
  BlockPool pool(1024, 8, 100);
  EXPECT_EQ(pool.block_size(), 1024u);
  EXPECT_EQ(pool.blocks_allocated(), 8u);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
  EXPECT_EQ(pool.blocks_available(), 100u);
  std::vector<uint8_t*> taken;
  for (int i = 0; i < 8; ++i) taken.push_back(pool.take());
  EXPECT_EQ(pool.blocks_allocated(), 8u);  // no growth yet
  EXPECT_EQ(pool.blocks_in_use(), 8u);
  for (uint8_t* block : taken) pool.give(block);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

TEST(BlockPoolTest, GrowsByDoublingUpToMaxThenRefuses) {
  BlockPool pool(256, 4, 22);
  std::vector<uint8_t*> taken;
  std::vector<size_t> allocated_after;
  for (int i = 0; i < 22; ++i) {
    uint8_t* block = pool.take();
    ASSERT_NE(block, nullptr) << i;
    taken.push_back(block);
    allocated_after.push_back(pool.blocks_allocated());
  }
  // 4 initially, then +4 (8), +8 (16), then capped: +6 (22).
  EXPECT_EQ(allocated_after[3], 4u);
  EXPECT_EQ(allocated_after[4], 8u);
  EXPECT_EQ(allocated_after[8], 16u);
  EXPECT_EQ(allocated_after[16], 22u);
  EXPECT_EQ(pool.take(), nullptr);
  EXPECT_EQ(pool.take(), nullptr);
  EXPECT_EQ(pool.blocks_in_use(), 22u);
  EXPECT_EQ(pool.blocks_available(), 0u);
  EXPECT_EQ(pool.blocks_allocated(), 22u);

  pool.give(taken.back());
  taken.pop_back();
  uint8_t* again = pool.take();
  ASSERT_NE(again, nullptr);
  taken.push_back(again);
  EXPECT_EQ(pool.blocks_allocated(), 22u);

  // Every block is distinct and a whole block_size() of it is usable
  // without touching its neighbours.
  std::set<uint8_t*> distinct(taken.begin(), taken.end());
  EXPECT_EQ(distinct.size(), taken.size());
  for (size_t i = 0; i < taken.size(); ++i) std::memset(taken[i], static_cast<int>(i), 256);
  for (size_t i = 0; i < taken.size(); ++i)
    EXPECT_TRUE(std::all_of(taken[i], taken[i] + 256,
                            [i](uint8_t b) { return b == static_cast<uint8_t>(i); }));
  for (uint8_t* block : taken) pool.give(block);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

TEST(BlockPoolTest, EmptyPoolGrowsOnFirstTake) {
  BlockPool pool(4096, 0, 10);
  EXPECT_EQ(pool.blocks_allocated(), 0u);
  uint8_t* block = pool.take();
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(pool.blocks_allocated(), 10u);  // a first slab of 16, capped at max
  pool.give(block);
}

TEST(BlockPoolTest, ReusesGivenBlocksWithoutGrowing) {
  BlockPool pool(512, 2, 1000);
  for (int i = 0; i < 10000; ++i) {
    uint8_t* a = pool.take();
    uint8_t* b = pool.take();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    pool.give(a);
    pool.give(b);
  }
  EXPECT_EQ(pool.blocks_allocated(), 2u);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

}  // namespace
}  // namespace dpquic::conn
