// SentPackets and SentPacketPool: the ring's documented behaviour case by
// case (the randomized comparison with a std::map model is in
// sent_packets_property_test.cc).
#include "quic/recovery/sent_packets.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "quic/recovery/sent_packet_pool.h"

namespace dpquic::recovery {
namespace {

// A packet whose fields all derive from its number, so contents can be checked.
SentPacket packet_for(uint64_t packet_number, bool ack_eliciting = true, bool in_flight = true) {
  SentPacket packet;
  packet.time_sent = 1000 * packet_number + 7;
  packet.frames = static_cast<uint32_t>(packet_number * 3 + 1);
  packet.size = static_cast<uint16_t>(1000 + packet_number % 200);
  packet.ack_eliciting = ack_eliciting;
  packet.in_flight = in_flight;
  return packet;
}

bool same_packet(const SentPacket& a, const SentPacket& b) {
  return a.time_sent == b.time_sent && a.frames == b.frames && a.size == b.size &&
         a.ack_eliciting == b.ack_eliciting && a.in_flight == b.in_flight;
}

std::vector<uint64_t> numbers(const SentPackets::Range& range) {
  std::vector<uint64_t> out;
  for (const SentPackets::Entry entry : range) out.push_back(entry.packet_number);
  return out;
}

void insert_all(SentPackets& sent, const std::vector<uint64_t>& packet_numbers) {
  for (const uint64_t pn : packet_numbers) ASSERT_TRUE(sent.insert(pn, packet_for(pn))) << pn;
}

using Numbers = std::vector<uint64_t>;

TEST(SentPacketsTest, MonotonicInsertWithGaps) {
  SentPacketPool pool;
  SentPackets sent(pool);
  insert_all(sent, {0, 1, 2, 5, 6, 9});
  EXPECT_EQ(sent.size(), 6u);
  EXPECT_EQ(sent.largest_sent(), 9u);
  EXPECT_EQ(sent.window_begin(), 0u);
  EXPECT_EQ(sent.window_size(), 10u);
  EXPECT_EQ(numbers(sent.all()), (Numbers{0, 1, 2, 5, 6, 9}));
  for (const uint64_t skipped : {3, 4, 7, 8}) {
    EXPECT_FALSE(sent.contains(skipped)) << skipped;
    EXPECT_TRUE(sent.never_sent(skipped)) << skipped;
    // A skipped number has a vacant slot inside the window.
    ASSERT_NE(sent.slot(skipped), nullptr);
    EXPECT_EQ(sent.live_bits(skipped - sent.window_begin()) & 1, 0u);
  }
  for (const uint64_t pn : {0, 1, 2, 5, 6, 9}) {
    ASSERT_NE(sent.get(pn), nullptr);
    EXPECT_TRUE(same_packet(*sent.get(pn), packet_for(pn))) << pn;
    EXPECT_FALSE(sent.never_sent(pn)) << pn;
  }
  EXPECT_TRUE(sent.never_sent(10));
  EXPECT_TRUE(sent.any_never_sent(2, 3));
  EXPECT_TRUE(sent.any_never_sent(8, 9));
  EXPECT_FALSE(sent.any_never_sent(5, 6));
  EXPECT_FALSE(sent.any_never_sent(0, 2));
  EXPECT_TRUE(sent.any_never_sent(9, 10));

  // Numbers must grow: repeats and smaller ones are refused, nothing changes.
  EXPECT_FALSE(sent.insert(9, packet_for(9)));
  EXPECT_FALSE(sent.insert(4, packet_for(4)));
  EXPECT_FALSE(sent.insert(0, packet_for(0)));
  EXPECT_EQ(sent.size(), 6u);
  EXPECT_EQ(sent.largest_sent(), 9u);
  EXPECT_TRUE(sent.never_sent(4));
}

TEST(SentPacketsTest, FirstInsertAboveZeroSkipsTheNumbersBelow) {
  SentPacketPool pool;
  SentPackets sent(pool);
  EXPECT_TRUE(sent.insert(5, packet_for(5)));
  EXPECT_EQ(sent.window_begin(), 5u);
  EXPECT_EQ(sent.window_size(), 1u);
  for (uint64_t pn = 0; pn < 5; ++pn) EXPECT_TRUE(sent.never_sent(pn)) << pn;
  EXPECT_FALSE(sent.never_sent(5));
  EXPECT_TRUE(sent.never_sent(6));
}

TEST(SentPacketsTest, OutOfOrderRemoval) {
  SentPacketPool pool;
  SentPackets sent(pool);
  for (uint64_t pn = 0; pn < 10; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  const std::optional<SentPacket> removed = sent.remove(5);
  ASSERT_TRUE(removed.has_value());
  EXPECT_TRUE(same_packet(*removed, packet_for(5)));
  EXPECT_TRUE(sent.remove(3).has_value());
  EXPECT_TRUE(sent.remove(7).has_value());
  EXPECT_FALSE(sent.remove(5).has_value());  // already gone
  EXPECT_FALSE(sent.contains(3));
  EXPECT_FALSE(sent.never_sent(3));  // sent, then acknowledged: not a violation
  EXPECT_EQ(sent.size(), 7u);
  EXPECT_EQ(sent.window_begin(), 0u);  // the front is still live
  EXPECT_EQ(numbers(sent.all()), (Numbers{0, 1, 2, 4, 6, 8, 9}));
  // Loss detection's gap logic: the iteration skips the removed numbers.
  uint64_t previous = 0;
  size_t gaps = 0;
  for (const SentPackets::Entry entry : sent.range(1, 10)) {
    if (entry.packet_number != 1 && previous != entry.packet_number - 1) ++gaps;
    previous = entry.packet_number;
  }
  EXPECT_EQ(gaps, 3u);
}

TEST(SentPacketsTest, FrontReclamation) {
  SentPacketPool pool;
  SentPackets sent(pool);
  insert_all(sent, {0, 1, 2, 4, 5, 6, 7, 8, 9});  // 3 skipped
  EXPECT_TRUE(sent.remove(1).has_value());
  EXPECT_TRUE(sent.remove(2).has_value());
  EXPECT_EQ(sent.window_begin(), 0u);
  EXPECT_TRUE(sent.remove(0).has_value());
  // 1, 2 (acknowledged) and 3 (skipped) are vacant: the window starts at 4.
  EXPECT_EQ(sent.window_begin(), 4u);
  EXPECT_EQ(sent.window_size(), 6u);
  EXPECT_EQ(sent.slot(3), nullptr);
  // The skipped number is still known after its slot was reclaimed.
  EXPECT_TRUE(sent.never_sent(3));
  EXPECT_FALSE(sent.never_sent(2));
  for (uint64_t pn = 4; pn < 9; ++pn) EXPECT_TRUE(sent.remove(pn).has_value());
  EXPECT_EQ(sent.window_begin(), 9u);
  EXPECT_EQ(sent.window_size(), 1u);
  EXPECT_TRUE(sent.remove(9).has_value());
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(sent.window_begin(), 10u);
  EXPECT_EQ(sent.window_size(), 0u);
  EXPECT_EQ(sent.largest_sent(), 9u);
  EXPECT_EQ(numbers(sent.all()), Numbers{});
  // The window restarts at the next insert.
  EXPECT_TRUE(sent.insert(12, packet_for(12)));
  EXPECT_EQ(sent.window_begin(), 12u);
  EXPECT_EQ(sent.window_size(), 1u);
  EXPECT_TRUE(sent.never_sent(10));
  EXPECT_TRUE(sent.never_sent(11));
}

TEST(SentPacketsTest, RangeBoundsIncludingExcludedStart) {
  SentPacketPool pool;
  SentPackets sent(pool);
  for (uint64_t pn = 10; pn <= 30; pn += 2) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  EXPECT_EQ(numbers(sent.range(14, 20)), (Numbers{14, 16, 18}));
  EXPECT_EQ(numbers(sent.range(13, 21)), (Numbers{14, 16, 18, 20}));
  EXPECT_EQ(numbers(sent.range(14, 15)), (Numbers{14}));
  EXPECT_EQ(numbers(sent.range(15, 16)), Numbers{});
  EXPECT_EQ(numbers(sent.range_after(14, 20)), (Numbers{16, 18}));
  EXPECT_EQ(numbers(sent.range_after(13, 20)), (Numbers{14, 16, 18}));
  EXPECT_EQ(numbers(sent.range_after(28, 100)), (Numbers{30}));
  EXPECT_EQ(numbers(sent.range_after(30, 100)), Numbers{});
  EXPECT_EQ(numbers(sent.range_after(0, 13)), (Numbers{10, 12}));
  EXPECT_EQ(numbers(sent.range(0, 100)), (Numbers{10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}));
  EXPECT_EQ(numbers(sent.range(0, UINT64_MAX)), numbers(sent.all()));
  EXPECT_EQ(numbers(sent.range(31, 200)), Numbers{});
  EXPECT_EQ(numbers(sent.range(20, 20)), Numbers{});
  EXPECT_EQ(numbers(sent.range(25, 15)), Numbers{});
  EXPECT_EQ(numbers(sent.range_after(20, 20)), Numbers{});
  EXPECT_EQ(numbers(sent.range_after(20, 21)), Numbers{});
  EXPECT_EQ(numbers(sent.range_after(UINT64_MAX, UINT64_MAX)), Numbers{});
  EXPECT_EQ(numbers(sent.range_after(UINT64_MAX - 1, UINT64_MAX)), Numbers{});
  // Entries carry their packets.
  for (const SentPackets::Entry entry : sent.range(10, 31)) {
    EXPECT_TRUE(same_packet(entry.packet, packet_for(entry.packet_number)));
  }
  // begin() == end() exactly when the range has nothing live.
  const SentPackets::Range empty = sent.range(21, 22);
  EXPECT_TRUE(empty.begin() == empty.end());
  const SentPackets::Range one = sent.range(21, 23);
  EXPECT_FALSE(one.begin() == one.end());
  EXPECT_EQ((*one.begin()).packet_number, 22u);
}

TEST(SentPacketsTest, RemovingTheCurrentEntryWhileIterating) {
  SentPacketPool pool;
  SentPackets sent(pool);
  for (uint64_t pn = 0; pn < 200; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  Numbers visited;
  // As loss detection does: declare every third packet lost while walking,
  // including the front (which moves the window).
  for (const SentPackets::Entry entry : sent.range(0, 150)) {
    visited.push_back(entry.packet_number);
    if (entry.packet_number % 3 == 0) {
      ASSERT_TRUE(sent.remove(entry.packet_number).has_value());
    }
  }
  ASSERT_EQ(visited.size(), 150u);
  for (uint64_t i = 0; i < 150; ++i) EXPECT_EQ(visited[i], i);
  EXPECT_EQ(sent.size(), 200u - 50u);
  EXPECT_EQ(sent.window_begin(), 1u);
}

TEST(SentPacketsTest, RemovingLaterEntriesWhileIterating) {
  SentPacketPool pool(64, 256);
  SentPackets sent(pool);
  // A wrapped ring: window 130..379 in 256 slots, head at slot 130.
  for (uint64_t pn = 0; pn < 200; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  for (uint64_t pn = 0; pn < 130; ++pn) ASSERT_TRUE(sent.remove(pn).has_value());
  for (uint64_t pn = 200; pn < 380; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  ASSERT_EQ(sent.capacity(), 256u);
  Numbers visited;
  for (const SentPackets::Entry entry : sent.range(0, UINT64_MAX)) {
    const uint64_t pn = entry.packet_number;
    visited.push_back(pn);
    if (pn == 130) {
      // Later entries inside the iterator's cached word (131..194), and
      // just past it.
      for (const uint64_t later : {131, 193, 194, 195}) {
        ASSERT_TRUE(sent.remove(later).has_value()) << later;
      }
    }
    if (pn == 132) {
      // The current entry and everything up to 300: the window front moves
      // far past the numbers the iterator cached.
      for (uint64_t later = 130; later <= 300; ++later) sent.remove(later);
      EXPECT_EQ(sent.window_begin(), 301u);
    }
  }
  Numbers expected = {130, 132};
  for (uint64_t pn = 301; pn < 380; ++pn) expected.push_back(pn);
  EXPECT_EQ(visited, expected);
  EXPECT_EQ(sent.size(), 79u);
}

TEST(SentPacketsTest, CountsAreMaintainedOnInsertAndRemove) {
  SentPacketPool pool;
  SentPackets sent(pool);
  ASSERT_TRUE(sent.insert(0, packet_for(0, /*ack_eliciting=*/true, /*in_flight=*/true)));
  ASSERT_TRUE(sent.insert(1, packet_for(1, /*ack_eliciting=*/false, /*in_flight=*/false)));
  ASSERT_TRUE(sent.insert(2, packet_for(2, /*ack_eliciting=*/false, /*in_flight=*/true)));
  ASSERT_TRUE(sent.insert(3, packet_for(3, /*ack_eliciting=*/true, /*in_flight=*/true)));
  EXPECT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent.bytes_in_flight(), 1000u + 1002u + 1003u);  // packet 1 is not in flight
  EXPECT_EQ(sent.ack_eliciting_in_flight(), 2u);
  EXPECT_TRUE(sent.has_ack_eliciting_in_flight());
  EXPECT_TRUE(sent.remove(3).has_value());
  EXPECT_EQ(sent.bytes_in_flight(), 1000u + 1002u);
  EXPECT_EQ(sent.ack_eliciting_in_flight(), 1u);
  EXPECT_TRUE(sent.remove(0).has_value());
  EXPECT_EQ(sent.bytes_in_flight(), 1002u);
  EXPECT_FALSE(sent.has_ack_eliciting_in_flight());
  EXPECT_FALSE(sent.empty());
  EXPECT_FALSE(sent.remove(0).has_value());  // a second remove changes nothing
  EXPECT_EQ(sent.bytes_in_flight(), 1002u);
  EXPECT_TRUE(sent.remove(2).has_value());
  EXPECT_TRUE(sent.remove(1).has_value());
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(sent.bytes_in_flight(), 0u);
}

TEST(SentPacketsTest, GrowthKeepsTheWindowAcrossTheWrap) {
  SentPacketPool pool(64);
  SentPackets sent(pool);
  for (uint64_t pn = 0; pn < 64; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  EXPECT_EQ(sent.capacity(), 64u);
  for (uint64_t pn = 0; pn < 40; ++pn) ASSERT_TRUE(sent.remove(pn).has_value());
  // The head is at slot 40: these wrap around the end of the array.
  for (uint64_t pn = 64; pn < 104; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  EXPECT_EQ(sent.capacity(), 64u);
  EXPECT_EQ(sent.window_size(), 64u);
  // live_bits across the wrap of a full ring: 64 live from the window start,
  // and the word starting 32 in stops at the window's end.
  EXPECT_EQ(sent.live_bits(0), ~uint64_t{0});
  EXPECT_EQ(sent.live_bits(32), (uint64_t{1} << 32) - 1);
  EXPECT_EQ(sent.live_bits(64), 0u);
  ASSERT_TRUE(sent.remove(41).has_value());
  EXPECT_EQ(sent.live_bits(0), ~uint64_t{2});
  // One more packet needs 65 slots: the ring doubles, keeping every entry.
  ASSERT_TRUE(sent.insert(104, packet_for(104)));
  EXPECT_EQ(sent.capacity(), 128u);
  Numbers expected;
  for (uint64_t pn = 40; pn <= 104; ++pn) {
    if (pn != 41) expected.push_back(pn);
  }
  EXPECT_EQ(numbers(sent.all()), expected);
  for (const uint64_t pn : expected) EXPECT_TRUE(same_packet(*sent.get(pn), packet_for(pn)));
  EXPECT_EQ(sent.window_begin(), 40u);
  EXPECT_EQ(sent.live_bits(0), ~uint64_t{2});
  // A large jump grows straight to the size it needs.
  ASSERT_TRUE(sent.insert(40 + 1000, packet_for(1040)));
  EXPECT_EQ(sent.capacity(), 1024u);  // 1001 slots needed
  EXPECT_EQ(sent.window_size(), 1001u);
  EXPECT_TRUE(sent.never_sent(500));
}

TEST(SentPacketsTest, RingIsBoundedByThePool) {
  SentPacketPool pool(64, 128);
  SentPackets sent(pool);
  ASSERT_TRUE(sent.insert(0, packet_for(0)));
  ASSERT_TRUE(sent.insert(127, packet_for(127)));
  EXPECT_EQ(sent.capacity(), 128u);
  // 129 slots would be needed: refused, and nothing changes (not even the
  // skip record).
  EXPECT_FALSE(sent.insert(128, packet_for(128)));
  EXPECT_EQ(sent.largest_sent(), 127u);
  EXPECT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent.never_sent(128));
  EXPECT_TRUE(sent.remove(0).has_value());
  EXPECT_EQ(sent.window_begin(), 127u);
  EXPECT_TRUE(sent.insert(128, packet_for(128)));
  EXPECT_FALSE(sent.never_sent(128));
  // Once empty, the window restarts anywhere.
  EXPECT_TRUE(sent.remove(127).has_value());
  EXPECT_TRUE(sent.remove(128).has_value());
  EXPECT_TRUE(sent.insert(1'000'000, packet_for(1'000'000)));
  EXPECT_EQ(sent.window_begin(), 1'000'000u);
}

TEST(SentPacketsTest, SkipRecordKeepsTheMostRecentRanges) {
  SentPacketPool pool;
  SentPackets sent(pool);
  // Send 0, skip 1, send 2, skip 3, ...: 40 skipped numbers, 1 to 79.
  for (uint64_t pn = 0; pn <= 80; pn += 2) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  constexpr size_t kSkips = 40;
  const size_t forgotten = kSkips - SentPackets::kMaxSkipRanges;
  for (size_t k = 0; k < kSkips; ++k) {
    const uint64_t skipped = 2 * k + 1;
    EXPECT_EQ(sent.never_sent(skipped), k >= forgotten) << skipped;
  }
  // Acknowledged numbers are never "never sent".
  for (uint64_t pn = 0; pn <= 80; pn += 2) ASSERT_TRUE(sent.remove(pn).has_value());
  for (uint64_t pn = 0; pn <= 80; pn += 2) EXPECT_FALSE(sent.never_sent(pn));
  EXPECT_TRUE(sent.never_sent(79));
  EXPECT_FALSE(sent.never_sent(1));
}

TEST(SentPacketsTest, OutOfRangeAccessIsAbsent) {
  SentPacketPool pool;
  SentPackets sent(pool);
  EXPECT_EQ(sent.get(0), nullptr);
  EXPECT_EQ(sent.slot(0), nullptr);
  EXPECT_FALSE(sent.contains(UINT64_MAX));
  EXPECT_FALSE(sent.remove(0).has_value());
  EXPECT_FALSE(sent.remove(UINT64_MAX).has_value());
  EXPECT_FALSE(sent.largest_sent().has_value());
  EXPECT_TRUE(sent.never_sent(0));
  EXPECT_EQ(sent.live_bits(0), 0u);
  EXPECT_EQ(numbers(sent.all()), Numbers{});
  EXPECT_EQ(numbers(sent.range(0, UINT64_MAX)), Numbers{});
  EXPECT_EQ(sent.capacity(), 0u);  // nothing taken from the pool yet

  for (uint64_t pn = 100; pn < 110; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  ASSERT_TRUE(sent.remove(100).has_value());
  for (const uint64_t outside :
       {uint64_t{0}, uint64_t{100}, uint64_t{110}, uint64_t{1} << 62, UINT64_MAX}) {
    EXPECT_EQ(sent.get(outside), nullptr) << outside;
    EXPECT_EQ(sent.slot(outside), nullptr) << outside;
    EXPECT_FALSE(sent.remove(outside).has_value()) << outside;
  }
  EXPECT_EQ(sent.live_bits(9), 0u);
  EXPECT_EQ(sent.live_bits(UINT64_MAX), 0u);
  EXPECT_EQ(sent.size(), 9u);
  EXPECT_EQ(sent.bytes_in_flight(),
            9u * 1000 + (101 + 102 + 103 + 104 + 105 + 106 + 107 + 108 + 109));
}

TEST(SentPacketsTest, PacketNumbersUpToTwoToTheSixtyTwo) {
  constexpr uint64_t kMax = (uint64_t{1} << 62) - 1;  // wire::kMaxPacketNumber
  SentPacketPool pool;
  SentPackets sent(pool);
  // Above the QUIC maximum: refused, nothing changes (accepting UINT64_MAX
  // would wrap next_ to 0 and leave the packet unreachable).
  EXPECT_FALSE(sent.insert(UINT64_MAX, packet_for(1)));
  EXPECT_FALSE(sent.insert(UINT64_MAX - 1, packet_for(1)));
  EXPECT_FALSE(sent.insert(kMax + 1, packet_for(1)));
  EXPECT_TRUE(sent.empty());
  EXPECT_FALSE(sent.largest_sent().has_value());
  EXPECT_EQ(sent.capacity(), 0u);

  ASSERT_TRUE(sent.insert(kMax - 100, packet_for(1)));
  ASSERT_TRUE(sent.insert(kMax - 1, packet_for(2)));
  EXPECT_FALSE(sent.insert(kMax + 5, packet_for(3)));  // a skip past the maximum
  ASSERT_TRUE(sent.insert(kMax, packet_for(3)));
  EXPECT_EQ(sent.largest_sent(), kMax);
  EXPECT_EQ(sent.window_size(), 101u);
  EXPECT_EQ(numbers(sent.all()), (Numbers{kMax - 100, kMax - 1, kMax}));
  EXPECT_EQ(numbers(sent.range_after(kMax - 100, UINT64_MAX)), (Numbers{kMax - 1, kMax}));
  EXPECT_EQ(numbers(sent.range(kMax, UINT64_MAX)), (Numbers{kMax}));
  EXPECT_TRUE(sent.never_sent(kMax - 50));
  EXPECT_FALSE(sent.never_sent(kMax));
  EXPECT_TRUE(sent.never_sent(kMax + 1));
  EXPECT_TRUE(sent.never_sent(UINT64_MAX));
  EXPECT_TRUE(sent.remove(kMax - 100).has_value());
  EXPECT_EQ(sent.window_begin(), kMax - 1);
  EXPECT_TRUE(sent.remove(kMax - 1).has_value());
  EXPECT_TRUE(sent.remove(kMax).has_value());
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(sent.window_begin(), kMax + 1);
  // Empty at the top: a restart above the maximum is refused too.
  EXPECT_FALSE(sent.insert(UINT64_MAX, packet_for(4)));
  EXPECT_EQ(sent.largest_sent(), kMax);
  EXPECT_EQ(numbers(sent.range(0, UINT64_MAX)), Numbers{});
}

TEST(SentPacketsTest, DrainAndReuseTheStorage) {
  SentPacketPool pool;
  {
    SentPackets sent(pool);
    for (uint64_t pn = 0; pn < 1000; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
    EXPECT_EQ(sent.capacity(), 1024u);
    const size_t allocations = pool.allocations();
    for (uint64_t pn = 0; pn < 1000; ++pn) ASSERT_TRUE(sent.remove(pn).has_value());
    EXPECT_TRUE(sent.empty());
    EXPECT_EQ(sent.capacity(), 1024u);  // kept, not freed per packet
    // A second round, through the wrap, needs nothing new.
    for (uint64_t round = 1; round < 5; ++round) {
      for (uint64_t pn = 1000 * round; pn < 1000 * round + 1000; ++pn) {
        ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
      }
      EXPECT_EQ(sent.size(), 1000u);
      for (uint64_t pn = 1000 * round; pn < 1000 * round + 1000; ++pn) {
        ASSERT_TRUE(sent.remove(pn).has_value());
      }
    }
    EXPECT_EQ(pool.allocations(), allocations);
    EXPECT_EQ(sent.capacity(), 1024u);
  }
  // The closed ring's storage, and the smaller arrays it grew out of, wait in
  // the pool: a new ring of the same size allocates nothing.
  const size_t allocations = pool.allocations();
  EXPECT_GT(pool.cached_blocks(), 0u);
  SentPackets next(pool);
  for (uint64_t pn = 0; pn < 1000; ++pn) ASSERT_TRUE(next.insert(pn, packet_for(pn)));
  EXPECT_EQ(pool.allocations(), allocations);
  // Recycled storage starts vacant.
  EXPECT_EQ(next.size(), 1000u);
  EXPECT_EQ(numbers(next.range(0, 5)), (Numbers{0, 1, 2, 3, 4}));
}

TEST(SentPacketsTest, ClearKeepsTheStorageAndTheLargestSent) {
  SentPacketPool pool;
  SentPackets sent(pool);
  for (uint64_t pn = 0; pn < 300; ++pn) {
    if (pn != 150) {
      ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
    }
  }
  const size_t capacity = sent.capacity();
  sent.clear();
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(sent.bytes_in_flight(), 0u);
  EXPECT_EQ(sent.ack_eliciting_in_flight(), 0u);
  EXPECT_EQ(sent.largest_sent(), 299u);
  EXPECT_EQ(sent.window_begin(), 300u);
  EXPECT_EQ(sent.capacity(), capacity);
  EXPECT_EQ(numbers(sent.all()), Numbers{});
  EXPECT_FALSE(sent.contains(10));
  EXPECT_TRUE(sent.never_sent(150));
  EXPECT_FALSE(sent.never_sent(149));
  EXPECT_FALSE(sent.insert(299, packet_for(299)));
  ASSERT_TRUE(sent.insert(300, packet_for(300)));
  EXPECT_EQ(numbers(sent.all()), (Numbers{300}));
  EXPECT_EQ(sent.live_bits(0), 1u);
}

TEST(SentPacketsTest, ReleaseStorageGivesTheRingBackAndInsertsAcquireAgain) {
  SentPacketPool pool(64);
  SentPackets sent(pool);
  for (uint64_t pn = 0; pn < 100; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  ASSERT_EQ(sent.capacity(), 128u);
  const size_t cached = pool.cached_blocks();
  sent.release_storage();
  EXPECT_EQ(sent.capacity(), 0u);
  EXPECT_EQ(pool.cached_blocks(), cached + 2);  // the slots and the live bitmap
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(sent.bytes_in_flight(), 0u);
  EXPECT_EQ(sent.largest_sent(), 99u);
  EXPECT_EQ(numbers(sent.all()), Numbers{});
  EXPECT_FALSE(sent.contains(50));
  EXPECT_FALSE(sent.remove(50).has_value());
  sent.release_storage();  // twice: nothing more to give back
  EXPECT_EQ(pool.cached_blocks(), cached + 2);

  // Numbers go on above the largest sent; the ring takes storage again (the
  // pool's recycled blocks, no new allocation of that size class).
  const size_t allocations = pool.allocations();
  EXPECT_FALSE(sent.insert(99, packet_for(99)));
  ASSERT_TRUE(sent.insert(100, packet_for(100)));
  ASSERT_TRUE(sent.insert(102, packet_for(102)));
  EXPECT_EQ(numbers(sent.all()), (Numbers{100, 102}));
  EXPECT_EQ(sent.capacity(), 64u);
  EXPECT_EQ(pool.allocations(), allocations);
  EXPECT_TRUE(sent.never_sent(101));
}

TEST(SentPacketPoolTest, RecyclesBySizeClass) {
  SentPacketPool pool(100, 1000);
  EXPECT_EQ(pool.initial_slots(), 128u);
  EXPECT_EQ(pool.max_slots_per_ring(), 1024u);
  void* a = pool.acquire(128, 24);
  void* b = pool.acquire(256, 24);
  void* c = pool.acquire(2, 8);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % SentPacketPool::kAlignment, 0u);
  EXPECT_EQ(pool.allocations(), 3u);
  pool.release(a, 128, 24);
  pool.release(b, 256, 24);
  pool.release(c, 2, 8);
  pool.release(nullptr, 64, 24);  // ignored
  EXPECT_EQ(pool.cached_blocks(), 3u);
  // Same size class: the very same block back, no allocation.
  EXPECT_EQ(pool.acquire(256, 24), b);
  EXPECT_EQ(pool.acquire(128, 24), a);
  EXPECT_EQ(pool.acquire(2, 8), c);
  EXPECT_EQ(pool.allocations(), 3u);
  EXPECT_EQ(pool.cached_blocks(), 0u);
  // A different slot size of the same count is a different class.
  void* d = pool.acquire(128, 8);
  EXPECT_NE(d, nullptr);
  EXPECT_EQ(pool.allocations(), 4u);
  // Bounds: not a power of two, zero, above the ring bound.
  EXPECT_EQ(pool.acquire(100, 24), nullptr);
  EXPECT_EQ(pool.acquire(0, 24), nullptr);
  EXPECT_EQ(pool.acquire(2048, 24), nullptr);
  EXPECT_EQ(pool.acquire(64, 0), nullptr);
  EXPECT_EQ(pool.allocations(), 4u);
  pool.release(a, 128, 24);
  pool.release(b, 256, 24);
  pool.release(c, 2, 8);
  pool.release(d, 128, 8);
}

TEST(SentPacketPoolTest, ArgumentsAreRounded) {
  SentPacketPool small(1, 1);
  EXPECT_EQ(small.initial_slots(), SentPacketPool::kMinRingSlots);
  EXPECT_EQ(small.max_slots_per_ring(), SentPacketPool::kMinRingSlots);
  SentPacketPool inverted(4096, 100);
  EXPECT_EQ(inverted.initial_slots(), 4096u);
  EXPECT_EQ(inverted.max_slots_per_ring(), 4096u);
}

TEST(SentPacketPoolTest, SlotSizesBeyondTheTableAreAllocatedDirectly) {
  SentPacketPool pool;
  std::vector<void*> blocks;
  for (size_t size = 1; size <= SentPacketPool::kMaxSlotSizes + 2; ++size) {
    blocks.push_back(pool.acquire(64, size));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (size_t size = 1; size <= SentPacketPool::kMaxSlotSizes + 2; ++size) {
    pool.release(blocks[size - 1], 64, size);
  }
  // Only the sizes with free lists are cached; the others were freed.
  EXPECT_EQ(pool.cached_blocks(), SentPacketPool::kMaxSlotSizes);
}

}  // namespace
}  // namespace dpquic::recovery
