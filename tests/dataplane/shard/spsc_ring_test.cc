#include "dataplane/shard/spsc_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

namespace dpquic::dataplane {
namespace {

TEST(SpscRingTest, CapacityRoundsUpToAPowerOfTwo) {
  EXPECT_EQ(SpscRing<int>(1).capacity(), 1u);
  EXPECT_EQ(SpscRing<int>(3).capacity(), 4u);
  EXPECT_EQ(SpscRing<int>(4).capacity(), 4u);
  EXPECT_EQ(SpscRing<int>(1000).capacity(), 1024u);
  EXPECT_THROW(SpscRing<int>(0), std::invalid_argument);
}

TEST(SpscRingTest, FullAndEmptyAreReported) {
  SpscRing<int> ring(4);
  int out = -1;
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.consumer_slot(), nullptr);
  EXPECT_FALSE(ring.try_pop(out));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.try_push(int{i}));
  EXPECT_EQ(ring.size(), 4u);
  EXPECT_FALSE(ring.try_push(99));
  EXPECT_EQ(ring.producer_slot(), nullptr);
  ASSERT_TRUE(ring.try_pop(out));
  EXPECT_EQ(out, 0);
  EXPECT_EQ(ring.size(), 3u);
  EXPECT_TRUE(ring.try_push(4));
  EXPECT_FALSE(ring.try_push(5));
  for (int expected = 1; expected <= 4; ++expected) {
    ASSERT_TRUE(ring.try_pop(out));
    EXPECT_EQ(out, expected);
  }
  EXPECT_FALSE(ring.try_pop(out));
  EXPECT_EQ(ring.size(), 0u);
}

// Many laps around a small ring with varying fill levels: every item comes
// out once, in order, and size() is exact on one thread.
TEST(SpscRingTest, WrapsAroundManyTimesInOrder) {
  SpscRing<uint64_t> ring(8);
  uint64_t next_in = 0;
  uint64_t next_out = 0;
  for (int round = 0; round < 5000; ++round) {
    const int pushes = round % 9;  // 0..8 items, sometimes filling the ring
    for (int i = 0; i < pushes; ++i) {
      if (!ring.try_push(uint64_t{next_in})) break;
      ++next_in;
    }
    EXPECT_EQ(ring.size(), next_in - next_out);
    const int pops = (round * 7) % 10;
    for (int i = 0; i < pops; ++i) {
      uint64_t value = 0;
      if (!ring.try_pop(value)) break;
      ASSERT_EQ(value, next_out);
      ++next_out;
    }
    EXPECT_EQ(ring.size(), next_in - next_out);
  }
  uint64_t value = 0;
  while (ring.try_pop(value)) ASSERT_EQ(value, next_out++);
  EXPECT_EQ(next_out, next_in);
  EXPECT_GT(next_in, 8u * 1000);  // the positions went around many times
}

TEST(SpscRingTest, SlotsAreWrittenAndReadInPlace) {
  SpscRing<std::array<uint8_t, 1500>> ring(2);
  auto* slot = ring.producer_slot();
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(ring.producer_slot(), slot);  // same slot until committed
  (*slot)[0] = 0xab;
  (*slot)[1499] = 0xcd;
  EXPECT_EQ(ring.consumer_slot(), nullptr);  // not yet published
  ring.producer_commit();
  auto* read = ring.consumer_slot();
  ASSERT_EQ(read, slot);  // the consumer sees the very bytes written
  EXPECT_EQ((*read)[0], 0xab);
  EXPECT_EQ((*read)[1499], 0xcd);
  EXPECT_EQ(ring.consumer_slot(), read);  // same slot until released
  ring.consumer_release();
  EXPECT_EQ(ring.consumer_slot(), nullptr);
  EXPECT_NE(ring.producer_slot(), slot);  // the next slot in order
}

TEST(SpscRingTest, MovesMoveOnlyItems) {
  SpscRing<std::unique_ptr<int>> ring(2);
  EXPECT_TRUE(ring.try_push(std::make_unique<int>(7)));
  std::unique_ptr<int> out;
  ASSERT_TRUE(ring.try_pop(out));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(*out, 7);
}

// Two threads move 10M sequence numbers through a 1024-slot ring: the
// consumer sees every number exactly once and in order.
TEST(SpscRingTest, TwoThreadsMoveTenMillionInOrder) {
  constexpr uint64_t kCount = 10'000'000;
  SpscRing<uint64_t> ring(1024);
  std::thread producer([&ring] {
    for (uint64_t i = 0; i < kCount; ++i) {
      while (!ring.try_push(uint64_t{i})) std::this_thread::yield();
    }
  });
  uint64_t expected = 0;
  uint64_t out_of_order = 0;
  size_t largest_size = 0;
  while (expected < kCount) {
    uint64_t value = 0;
    if (!ring.try_pop(value)) {
      std::this_thread::yield();
      continue;
    }
    if (value != expected) ++out_of_order;
    expected = value + 1;
    if ((expected & 0xffff) == 0) largest_size = std::max(largest_size, ring.size());
  }
  producer.join();
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(expected, kCount);
  EXPECT_LE(largest_size, ring.capacity());
  uint64_t extra = 0;
  EXPECT_FALSE(ring.try_pop(extra));
}

// The slot API across threads with datagram-sized items: each item's bytes
// are all written before it is published.
TEST(SpscRingTest, TwoThreadsFillLargeSlotsInPlace) {
  struct Item {
    uint32_t sequence = 0;
    uint16_t length = 0;
    std::array<uint8_t, 1500> bytes{};
  };
  constexpr uint32_t kCount = 200'000;
  SpscRing<Item> ring(256);
  std::thread producer([&ring] {
    for (uint32_t i = 0; i < kCount; ++i) {
      Item* slot;
      while ((slot = ring.producer_slot()) == nullptr) std::this_thread::yield();
      slot->sequence = i;
      slot->length = static_cast<uint16_t>(1 + i % 1500);
      std::memset(slot->bytes.data(), static_cast<uint8_t>(i), slot->length);
      ring.producer_commit();
    }
  });
  uint32_t received = 0;
  uint32_t bad = 0;
  while (received < kCount) {
    Item* slot = ring.consumer_slot();
    if (slot == nullptr) {
      std::this_thread::yield();
      continue;
    }
    const uint8_t fill = static_cast<uint8_t>(received);
    if (slot->sequence != received || slot->length != 1 + received % 1500 ||
        !std::all_of(slot->bytes.begin(), slot->bytes.begin() + slot->length,
                     [fill](uint8_t byte) { return byte == fill; })) {
      ++bad;
    }
    ring.consumer_release();
    ++received;
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(ring.consumer_slot(), nullptr);
}

}  // namespace
}  // namespace dpquic::dataplane
