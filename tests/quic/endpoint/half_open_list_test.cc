// The list of unvalidated half-open connections: creation order through
// removals anywhere, and counts per /32 (IPv4) and /64 (IPv6) prefix that
// return to zero, without allocating after construction.
#include "quic/endpoint/half_open_list.h"

#include <gtest/gtest.h>

#include <array>

#include "tools/testbed/allocation_counter.h"

namespace dpquic::endpoint {
namespace {

conn::SocketAddress v4(uint8_t last, uint16_t port) {
  return conn::SocketAddress::ipv4(192, 0, 2, last, port);
}

conn::SocketAddress v6(uint8_t block, uint8_t host) {
  std::array<uint8_t, 16> ip = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, block};
  ip[15] = host;
  return conn::SocketAddress::ipv6(ip, 443);
}

TEST(HalfOpenListTest, KeepsCreationOrderThroughRemovals) {
  HalfOpenList list(8, 1);
  EXPECT_FALSE(list.oldest().has_value());
  list.add(5, 100, v4(1, 1));
  list.add(2, 200, v4(2, 1));
  list.add(7, 300, v4(3, 1));
  list.add(2, 999, v4(9, 1));  // already listed: unchanged
  EXPECT_EQ(list.size(), 3u);
  EXPECT_EQ(list.oldest(), 5u);
  EXPECT_EQ(list.started(2), 200u);
  list.remove(2);  // the middle
  list.remove(2);  // twice: nothing
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(list.oldest(), 5u);
  list.remove(5);  // the head
  EXPECT_EQ(list.oldest(), 7u);
  list.add(5, 400, v4(1, 1));
  list.remove(7);
  EXPECT_EQ(list.oldest(), 5u);
  list.remove(5);  // the last one
  EXPECT_FALSE(list.oldest().has_value());
  EXPECT_EQ(list.size(), 0u);
  EXPECT_FALSE(list.contains(5));
}

TEST(HalfOpenListTest, CountsPerPrefixAndForgetsEmptyOnes) {
  HalfOpenList list(16, 2);
  list.add(0, 1, v4(1, 1000));
  list.add(1, 1, v4(1, 1001));  // same /32, another port
  list.add(2, 1, v4(2, 1000));
  EXPECT_EQ(list.count_for(v4(1, 5)), 2u);
  EXPECT_EQ(list.count_for(v4(2, 5)), 1u);
  EXPECT_EQ(list.count_for(v4(3, 5)), 0u);
  list.add(3, 1, v6(1, 1));
  list.add(4, 1, v6(1, 2));  // same /64
  list.add(5, 1, v6(2, 1));  // another /64
  EXPECT_EQ(list.count_for(v6(1, 200)), 2u);
  EXPECT_EQ(list.count_for(v6(2, 200)), 1u);
  // An IPv4 address and an IPv6 one with the same first bytes differ.
  EXPECT_NE(HalfOpenList::prefix_of(v4(1, 1)),
            HalfOpenList::prefix_of(conn::SocketAddress::ipv6({192, 0, 2, 1}, 1)));
  for (uint32_t h = 0; h < 6; ++h) list.remove(h);
  EXPECT_EQ(list.count_for(v4(1, 5)), 0u);
  EXPECT_EQ(list.count_for(v6(1, 5)), 0u);
}

TEST(HalfOpenListTest, ChurnAtFullSizeAllocatesNothing) {
  constexpr uint32_t kSize = 1024;
  HalfOpenList list(kSize, 3);
  testing::AllocationWindow window;
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t h = 0; h < kSize; ++h) list.add(h, round, v4(static_cast<uint8_t>(h), 1));
    for (uint32_t h = 0; h < kSize; ++h) list.remove((h * 7) % kSize);
  }
  EXPECT_EQ(window.count(), 0u);
  EXPECT_EQ(list.size(), 0u);
}

}  // namespace
}  // namespace dpquic::endpoint
