// One direction of the simulated network: exact delay, serialization and
// tail-drop, and seeded impairments at their configured rates.
#include "tools/testbed/link.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "tools/testbed/impairment.h"

namespace dpquic::harness {
namespace {

using transmit::EcnCodepoint;

constexpr Instant kStart = 1000 * kSecond;

const PathAddresses kPath{SocketAddress::ipv4(192, 0, 2, 1, 5000),
                          SocketAddress::ipv4(198, 51, 100, 1, 443)};

// Datagram `id` of `size` bytes: the id in the first 8 bytes, then a pattern.
std::vector<uint8_t> payload(uint64_t id, size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = i < 8 ? static_cast<uint8_t>(id >> (8 * i)) : static_cast<uint8_t>(id * 7 + i);
  }
  return bytes;
}

uint64_t id_of(std::span<const uint8_t> bytes) {
  uint64_t id = 0;
  for (size_t i = 0; i < 8 && i < bytes.size(); ++i) id |= uint64_t{bytes[i]} << (8 * i);
  return id;
}

struct Arrival {
  Instant at;
  uint64_t id;
  std::vector<uint8_t> bytes;
  EcnCodepoint ecn;
};

// Takes everything due up to `until`, stepping through arrival times.
std::vector<Arrival> drain(Link& link, Instant until = kNever - 1) {
  std::vector<Arrival> arrivals;
  Delivery delivery;
  while (link.next_delivery() <= until) {
    const Instant at = link.next_delivery();
    while (link.take_due(at, delivery)) {
      EXPECT_EQ(delivery.at, at);
      arrivals.push_back({delivery.at, id_of(delivery.bytes),
                          std::vector<uint8_t>(delivery.bytes.begin(), delivery.bytes.end()),
                          delivery.ecn});
    }
  }
  return arrivals;
}

TEST(LinkTest, DeliversAfterExactlyTheOneWayDelay) {
  LinkConfig config;
  config.one_way_delay = 7 * kMillisecond + 3;
  Link link(config);
  const std::vector<uint8_t> bytes = payload(42, 1200);
  ASSERT_TRUE(link.send(kStart, kPath, EcnCodepoint::kEct0, bytes));
  EXPECT_EQ(link.next_delivery(), kStart + 7 * kMillisecond + 3);
  Delivery delivery;
  EXPECT_FALSE(link.take_due(kStart + 7 * kMillisecond + 2, delivery));
  ASSERT_TRUE(link.take_due(kStart + 7 * kMillisecond + 3, delivery));
  EXPECT_EQ(delivery.path, kPath);
  EXPECT_EQ(delivery.ecn, EcnCodepoint::kEct0);
  EXPECT_EQ(std::vector<uint8_t>(delivery.bytes.begin(), delivery.bytes.end()), bytes);
  EXPECT_FALSE(link.take_due(kNever - 1, delivery));
  EXPECT_EQ(link.next_delivery(), kNever);
  EXPECT_EQ(link.stats().sent, 1u);
  EXPECT_EQ(link.stats().delivered, 1u);
  EXPECT_EQ(link.stats().bytes_sent, 1200u);
  EXPECT_EQ(link.stats().bytes_delivered, 1200u);
}

TEST(LinkTest, SameArrivalTimeKeepsSendOrderAndDeliveredBytesAreWritable) {
  LinkConfig config;
  config.one_way_delay = kMillisecond;
  Link link(config);
  for (uint64_t id = 0; id < 100; ++id) ASSERT_TRUE(link.send(kStart, kPath, {}, payload(id, 64)));
  Delivery delivery;
  for (uint64_t id = 0; id < 100; ++id) {
    ASSERT_TRUE(link.take_due(kStart + kMillisecond, delivery));
    EXPECT_EQ(id_of(delivery.bytes), id);
    delivery.bytes[10] ^= 0xff;  // in-place decryption must be allowed
  }
  EXPECT_FALSE(link.take_due(kStart + kMillisecond, delivery));
}

TEST(LinkTest, BandwidthSerializesFifo) {
  LinkConfig config;
  config.one_way_delay = 10 * kMillisecond;
  config.bandwidth_bps = 8'000'000;  // 1000 bytes per millisecond
  Link link(config);
  for (uint64_t id = 0; id < 5; ++id) ASSERT_TRUE(link.send(kStart, kPath, {}, payload(id, 1000)));
  // 500 bytes joining the backlog at 2 ms: starts when the fifth finishes.
  ASSERT_TRUE(link.send(kStart + 2 * kMillisecond, kPath, {}, payload(5, 500)));
  // After the link went idle, a datagram starts at once.
  ASSERT_TRUE(link.send(kStart + 20 * kMillisecond, kPath, {}, payload(6, 1000)));
  const std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 7u);
  for (uint64_t id = 0; id < 5; ++id) {
    EXPECT_EQ(arrivals[id].id, id);
    EXPECT_EQ(arrivals[id].at, kStart + (id + 1) * kMillisecond + 10 * kMillisecond);
  }
  EXPECT_EQ(arrivals[5].at, kStart + 5500 * kMicrosecond + 10 * kMillisecond);
  EXPECT_EQ(arrivals[6].at, kStart + 21 * kMillisecond + 10 * kMillisecond);
}

TEST(LinkTest, SerializationTimeRoundsUp) {
  LinkConfig config;
  config.one_way_delay = 0;
  config.bandwidth_bps = 3;
  Link link(config);
  ASSERT_TRUE(link.send(kStart, kPath, {}, payload(0, 1)));
  EXPECT_EQ(link.next_delivery(), kStart + 2'666'666'667u);  // 8 bits / 3 bps
}

TEST(LinkTest, TailDropsExactlyWhenTheQueueWouldOverflow) {
  LinkConfig config;
  config.one_way_delay = 0;
  config.bandwidth_bps = 8'000'000;  // 1 ms per 1000 bytes
  config.queue_bytes = 3000;
  Link link(config);
  std::vector<bool> accepted;
  for (uint64_t id = 0; id < 5; ++id)
    accepted.push_back(link.send(kStart, kPath, {}, payload(id, 1000)));
  EXPECT_EQ(accepted, (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ(link.queued_bytes(kStart), 3000u);
  EXPECT_EQ(link.queued_bytes(kStart + kMillisecond - 1), 3000u);
  // At 1 ms the first has left the bottleneck: exactly 1000 bytes fit again.
  EXPECT_EQ(link.queued_bytes(kStart + kMillisecond), 2000u);
  EXPECT_FALSE(link.send(kStart + kMillisecond, kPath, {}, payload(5, 1001)));
  EXPECT_TRUE(link.send(kStart + kMillisecond, kPath, {}, payload(6, 1000)));
  EXPECT_FALSE(link.send(kStart + kMillisecond, kPath, {}, payload(7, 1)));
  EXPECT_EQ(link.stats().sent, 8u);
  EXPECT_EQ(link.stats().dropped_queue, 4u);
  const std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 4u);
  const std::vector<uint64_t> ids{0, 1, 2, 6};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(arrivals[i].id, ids[i]);
    EXPECT_EQ(arrivals[i].at, kStart + (i + 1) * kMillisecond);
  }
  EXPECT_EQ(link.queued_bytes(kStart + 4 * kMillisecond), 0u);
}

// Which of `count` datagrams a link with `config` delivers.
std::vector<bool> delivered_pattern(const LinkConfig& config, size_t count) {
  Link link(config);
  std::vector<bool> pattern;
  pattern.reserve(count);
  const std::vector<uint8_t> bytes = payload(0, 100);
  Delivery delivery;
  for (uint64_t id = 0; id < count; ++id) {
    pattern.push_back(link.send(kStart + id * kMicrosecond, kPath, {}, bytes));
    while (link.take_due(kStart + id * kMicrosecond, delivery)) {
    }
  }
  return pattern;
}

TEST(LinkTest, RandomLossRateAndDeterminism) {
  LinkConfig config;
  config.loss = 0.1;
  config.seed = 7;
  const std::vector<bool> first = delivered_pattern(config, 100'000);
  const size_t lost = static_cast<size_t>(std::count(first.begin(), first.end(), false));
  // Binomial(100000, 0.1): sd ~95; 5 sd either side.
  EXPECT_NEAR(static_cast<double>(lost), 10'000.0, 475.0);
  EXPECT_EQ(delivered_pattern(config, 100'000), first);  // same seed, same outcome

  LinkConfig other_seed = config;
  other_seed.seed = 8;
  EXPECT_NE(delivered_pattern(other_seed, 100'000), first);

  // Loss draws from its own stream: other impairments leave it unchanged.
  LinkConfig with_more = config;
  with_more.corrupt = 0.3;
  with_more.duplicate = 0.2;
  with_more.reorder = 0.2;
  EXPECT_EQ(delivered_pattern(with_more, 100'000), first);
}

TEST(LinkTest, LossStatsCountEveryDrop) {
  LinkConfig config;
  config.loss = 0.25;
  Link link(config);
  uint64_t accepted = 0;
  for (uint64_t id = 0; id < 10'000; ++id) {
    accepted += link.send(kStart, kPath, {}, payload(id, 10)) ? 1 : 0;
  }
  EXPECT_EQ(link.stats().sent, 10'000u);
  EXPECT_EQ(link.stats().dropped_loss, 10'000u - accepted);
  EXPECT_EQ(drain(link).size(), accepted);
  EXPECT_EQ(link.stats().delivered, accepted);
}

TEST(LinkTest, DropIndicesDropExactlyThoseDatagrams) {
  LinkConfig config;
  config.drop_indices = {7, 2, 5, 3, 4, 6, 2};  // unsorted, with a repeat
  const std::vector<bool> pattern = delivered_pattern(config, 20);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(pattern[i], i < 2 || i > 7) << i;

  // After a reconfiguration the indices still count from the first datagram.
  Link link(LinkConfig{});
  for (uint64_t id = 0; id < 5; ++id) ASSERT_TRUE(link.send(kStart, kPath, {}, payload(id, 10)));
  LinkConfig later;
  later.drop_indices = {3, 5, 6};
  link.reconfigure(later);
  std::vector<bool> after;
  for (uint64_t id = 5; id < 10; ++id)
    after.push_back(link.send(kStart, kPath, {}, payload(id, 10)));
  EXPECT_EQ(after, (std::vector<bool>{false, false, true, true, true}));
  EXPECT_EQ(link.stats().dropped_loss, 2u);
}

TEST(ImpairmentTest, GilbertElliottBurstsHaveTheConfiguredShape) {
  LinkConfig config;
  config.burst_loss_enter = 0.01;
  config.burst_loss_exit = 0.25;
  config.seed = 3;
  Impairment impairment(config);
  uint64_t lost = 0;
  uint64_t bursts = 0;
  bool previous_lost = false;
  constexpr uint64_t kCount = 1'000'000;
  for (uint64_t i = 0; i < kCount; ++i) {
    const ImpairmentVerdict verdict = impairment.next(100);
    const bool is_lost = verdict.drop != DropReason::kNone;
    if (is_lost) {
      EXPECT_EQ(verdict.drop, DropReason::kBurst);
      ++lost;
      if (!previous_lost) ++bursts;
    }
    previous_lost = is_lost;
  }
  // Stationary loss enter / (enter + exit) = 3.846%; mean burst 1/exit = 4.
  EXPECT_NEAR(static_cast<double>(lost) / kCount, 0.01 / 0.26, 0.003);
  EXPECT_NEAR(static_cast<double>(lost) / static_cast<double>(bursts), 4.0, 0.15);
}

TEST(ImpairmentTest, BurstExitOneLosesSingleDatagrams) {
  LinkConfig config;
  config.burst_loss_enter = 0.05;  // exit defaults to 1: bursts of exactly one
  Impairment impairment(config);
  bool previous_lost = false;
  uint64_t lost = 0;
  for (int i = 0; i < 100'000; ++i) {
    const bool is_lost = impairment.next(10).drop != DropReason::kNone;
    EXPECT_FALSE(is_lost && previous_lost);
    lost += is_lost ? 1 : 0;
    previous_lost = is_lost;
  }
  // Good->bad at 5%, always straight back: stationary loss 0.05/1.05.
  EXPECT_NEAR(static_cast<double>(lost) / 100'000, 0.05 / 1.05, 0.004);
}

TEST(LinkTest, DuplicatesArriveRightAfterTheOriginal) {
  LinkConfig config;
  config.duplicate = 0.1;
  Link link(config);
  for (uint64_t id = 0; id < 10'000; ++id) {
    ASSERT_TRUE(link.send(kStart + id * kMicrosecond, kPath, {}, payload(id, 200)));
  }
  const uint64_t duplicated = link.stats().duplicated;
  EXPECT_NEAR(static_cast<double>(duplicated), 1000.0, 150.0);
  const std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 10'000u + duplicated);
  EXPECT_EQ(link.stats().delivered, 10'000u + duplicated);
  uint64_t copies = 0;
  uint64_t expected_id = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (i > 0 && arrivals[i].id == arrivals[i - 1].id) {
      ++copies;
      EXPECT_EQ(arrivals[i].at, arrivals[i - 1].at);
      EXPECT_EQ(arrivals[i].bytes, arrivals[i - 1].bytes);
      continue;
    }
    EXPECT_EQ(arrivals[i].id, expected_id++);
    EXPECT_EQ(arrivals[i].bytes, payload(arrivals[i].id, 200));
  }
  EXPECT_EQ(copies, duplicated);
}

TEST(LinkTest, CorruptionFlipsExactlyOneBit) {
  LinkConfig config;
  config.corrupt = 0.05;
  Link link(config);
  for (uint64_t id = 0; id < 20'000; ++id) {
    ASSERT_TRUE(link.send(kStart, kPath, {}, payload(id, 50)));
  }
  const uint64_t corrupted = link.stats().corrupted;
  EXPECT_NEAR(static_cast<double>(corrupted), 1000.0, 160.0);
  const std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 20'000u);
  uint64_t damaged = 0;
  std::vector<uint64_t> bits_hit(50 * 8, 0);
  for (uint64_t i = 0; i < arrivals.size(); ++i) {
    const std::vector<uint8_t> original = payload(i, 50);
    int flipped = 0;
    for (size_t b = 0; b < 50; ++b) {
      const uint8_t diff = original[b] ^ arrivals[i].bytes[b];
      flipped += std::popcount(diff);
      for (int bit = 0; bit < 8; ++bit) {
        if (diff & (1u << bit)) ++bits_hit[b * 8 + bit];
      }
    }
    EXPECT_LE(flipped, 1);
    damaged += flipped;
  }
  EXPECT_EQ(damaged, corrupted);
  // The flipped bit is spread over the whole datagram, not just its start.
  EXPECT_GT(std::count_if(bits_hit.begin(), bits_hit.end(), [](uint64_t n) { return n > 0; }), 300);
}

TEST(LinkTest, ReorderedDatagramsArriveLateByTheExtraDelay) {
  LinkConfig config;
  config.one_way_delay = 10 * kMillisecond;
  config.reorder = 0.1;
  config.reorder_extra_delay = 5 * kMillisecond;
  Link link(config);
  for (uint64_t id = 0; id < 10'000; ++id) {
    ASSERT_TRUE(link.send(kStart + id * kMillisecond, kPath, {}, payload(id, 20)));
  }
  const uint64_t reordered = link.stats().reordered;
  EXPECT_NEAR(static_cast<double>(reordered), 1000.0, 150.0);
  const std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 10'000u);
  uint64_t late = 0;
  uint64_t overtaken = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Instant sent = kStart + arrivals[i].id * kMillisecond;
    if (arrivals[i].at == sent + 15 * kMillisecond) {
      ++late;
    } else {
      EXPECT_EQ(arrivals[i].at, sent + 10 * kMillisecond);
    }
    if (i > 0 && arrivals[i].id < arrivals[i - 1].id) ++overtaken;
  }
  EXPECT_EQ(late, reordered);
  EXPECT_GT(overtaken, reordered / 2);  // later datagrams really overtake them
}

TEST(LinkTest, EcnMarkingAndBleaching) {
  LinkConfig config;
  config.ce_mark = 1.0;
  Link link(config);
  ASSERT_TRUE(link.send(kStart, kPath, EcnCodepoint::kEct0, payload(0, 10)));
  ASSERT_TRUE(link.send(kStart, kPath, EcnCodepoint::kEct1, payload(1, 10)));
  ASSERT_TRUE(link.send(kStart, kPath, EcnCodepoint::kNotEct, payload(2, 10)));
  std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 3u);
  EXPECT_EQ(arrivals[0].ecn, EcnCodepoint::kCe);
  EXPECT_EQ(arrivals[1].ecn, EcnCodepoint::kCe);
  EXPECT_EQ(arrivals[2].ecn, EcnCodepoint::kNotEct);
  EXPECT_EQ(link.stats().ce_marked, 2u);

  LinkConfig bleach;
  bleach.bleach_ecn = true;
  Link bleached(bleach);
  ASSERT_TRUE(bleached.send(kStart, kPath, EcnCodepoint::kEct0, payload(0, 10)));
  ASSERT_TRUE(bleached.send(kStart, kPath, EcnCodepoint::kCe, payload(1, 10)));
  arrivals = drain(bleached);
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_EQ(arrivals[0].ecn, EcnCodepoint::kNotEct);
  EXPECT_EQ(arrivals[1].ecn, EcnCodepoint::kNotEct);
}

TEST(LinkTest, GrowsPastItsInitialCapacityIntact) {
  LinkConfig config;
  config.one_way_delay = kSecond;
  config.bandwidth_bps = 1'000'000'000;
  config.duplicate = 0.05;
  Link link(config);
  // 20000 in flight at once (slots, heap and bottleneck ring all grow), of
  // varying sizes including ones larger than a slot's initial capacity.
  for (uint64_t id = 0; id < 20'000; ++id) {
    ASSERT_TRUE(link.send(kStart, kPath, {}, payload(id, 9 + (id * 37) % 3000)));
  }
  const std::vector<Arrival> arrivals = drain(link);
  ASSERT_EQ(arrivals.size(), 20'000u + link.stats().duplicated);
  uint64_t expected_id = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (i > 0 && arrivals[i].id == arrivals[i - 1].id) continue;
    ASSERT_EQ(arrivals[i].id, expected_id);
    ASSERT_EQ(arrivals[i].bytes, payload(expected_id, 9 + (expected_id * 37) % 3000));
    ++expected_id;
  }
  EXPECT_EQ(expected_id, 20'000u);
}

TEST(LinkTest, MarkTakenUnroutableMovesTheCount) {
  Link link(LinkConfig{});
  ASSERT_TRUE(link.send(kStart, kPath, {}, payload(0, 100)));
  Delivery delivery;
  ASSERT_TRUE(link.take_due(kNever - 1, delivery));
  link.mark_taken_unroutable();
  EXPECT_EQ(link.stats().delivered, 0u);
  EXPECT_EQ(link.stats().bytes_delivered, 0u);
  EXPECT_EQ(link.stats().dropped_unroutable, 1u);
}

}  // namespace
}  // namespace dpquic::harness
