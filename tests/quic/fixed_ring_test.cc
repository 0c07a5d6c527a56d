// FixedRing: FIFO order across the wrap, refusal when full (try_push,
// next_slot/commit), growth by doubling that keeps the order (push), and no
// allocation once sized.
#include "quic/fixed_ring.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "tools/testbed/allocation_counter.h"

namespace dpquic {
namespace {

TEST(FixedRingTest, KeepsOrderAcrossTheWrap) {
  FixedRing<uint32_t> ring(4);
  uint32_t next_in = 0, next_out = 0;
  for (int round = 0; round < 10; ++round) {
    while (ring.try_push(next_in)) ++next_in;
    EXPECT_TRUE(ring.full());
    EXPECT_EQ(ring.size(), 4u);
    for (size_t i = 0; i < ring.size(); ++i) EXPECT_EQ(ring[i], next_out + i);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(ring.front(), next_out++);
      ring.pop();
    }
  }
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_EQ(next_in, 4u + 10u * 3u - 3u);
}

TEST(FixedRingTest, FullRingRefusesAndSlotsCommitInPlace) {
  FixedRing<uint32_t> ring(2);
  ring.next_slot() = 7;
  ring.next_slot() = 8;  // not committed: overwritten
  ring.commit();
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_EQ(ring.front(), 8u);
  EXPECT_TRUE(ring.try_push(9));
  EXPECT_FALSE(ring.try_push(10));
  EXPECT_EQ(ring.size(), 2u);
  EXPECT_EQ(ring[1], 9u);
}

TEST(FixedRingTest, ZeroCapacityHoldsNothing) {
  FixedRing<uint32_t> ring;
  EXPECT_TRUE(ring.full());
  EXPECT_TRUE(ring.empty());
  EXPECT_FALSE(ring.try_push(1));
  ring.push(1);  // grows to one slot
  EXPECT_EQ(ring.capacity(), 1u);
  EXPECT_EQ(ring.front(), 1u);
}

TEST(FixedRingTest, PushDoublesAndKeepsOrder) {
  FixedRing<uint32_t> ring(3);
  ring.push(0);
  ring.push(1);
  ring.pop();  // head moves: the copy must unwrap
  for (uint32_t i = 2; i < 10; ++i) ring.push(i);
  EXPECT_EQ(ring.capacity(), 12u);
  for (uint32_t expected = 1; expected < 10; ++expected) {
    ASSERT_FALSE(ring.empty());
    EXPECT_EQ(ring.front(), expected);
    ring.pop();
  }
  EXPECT_TRUE(ring.empty());
}

TEST(FixedRingTest, ResetAndClearEmptyTheRing) {
  FixedRing<uint32_t> ring(2);
  ring.push(1);
  ring.clear();
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.capacity(), 2u);
  ring.push(2);
  ring.reset(5);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.capacity(), 5u);
}

TEST(FixedRingTest, SteadyStateAllocatesNothing) {
  FixedRing<uint64_t> ring(64);
  testing::AllocationWindow window;
  for (uint64_t i = 0; i < 100000; ++i) {
    if (ring.full()) ring.pop();
    ring.push(i);
    if (!ring.try_push(i)) ring.pop();
  }
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace dpquic
