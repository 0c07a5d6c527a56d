#include "tools/impair/impaired_link.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

namespace dpquic::impair {
namespace {

constexpr Instant kStart = 1000 * kSecond;

// A datagram whose first 4 bytes are its index.
std::vector<uint8_t> datagram(uint32_t index, size_t size = 100) {
  std::vector<uint8_t> bytes(size, 0x5a);
  std::memcpy(bytes.data(), &index, sizeof(index));
  return bytes;
}

uint32_t index_of(std::span<const uint8_t> bytes) {
  uint32_t index;
  std::memcpy(&index, bytes.data(), sizeof(index));
  return index;
}

struct Emitted {
  uint32_t index;
  Instant at;
};

// Drains everything due at `now`.
void drain(ImpairedLink& link, Instant now, std::vector<Emitted>& out) {
  while (const std::optional<ImpairedLink::Due> due = link.next_due(now)) {
    out.push_back({index_of(due->bytes), now});
  }
}

// Submits `count` datagrams `spacing` apart, draining after each, then runs
// the clock on until nothing is left.
std::vector<Emitted> run(ImpairedLink& link, uint32_t count, Duration spacing, size_t size = 100) {
  std::vector<Emitted> out;
  Instant now = kStart;
  for (uint32_t i = 0; i < count; ++i) {
    now = kStart + i * spacing;
    drain(link, now, out);
    const std::vector<uint8_t> bytes = datagram(i, size);
    link.submit(now, bytes, 0);
    drain(link, now, out);
  }
  while (link.next_event() != kNever) {
    now = std::max(now, link.next_event());
    drain(link, now, out);
  }
  return out;
}

TEST(RngTest, SameSeedSameStreamOtherSeedOtherStream) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs = differs || x != c.next();
  }
  EXPECT_TRUE(differs);
  Rng d(7);
  for (int i = 0; i < 10000; ++i) {
    const double u = d.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_LT(d.below(10), 10u);
  }
  EXPECT_EQ(d.below(0), 0u);
  EXPECT_FALSE(d.chance(0));
}

TEST(ImpairedLinkTest, NoImpairmentForwardsEverythingInOrderAtOnce) {
  ImpairedLink link(LinkConfig{}, 1, kStart);
  const std::vector<Emitted> out = run(link, 1000, kMicrosecond);
  ASSERT_EQ(out.size(), 1000u);
  for (uint32_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(out[i].index, i);
    EXPECT_EQ(out[i].at, kStart + i * kMicrosecond);
  }
  EXPECT_EQ(link.counters().forwarded, 1000u);
  EXPECT_EQ(link.counters().reordered, 0u);
  EXPECT_EQ(link.counters().delayed, 0u);
}

TEST(ImpairedLinkTest, LossRateWithinBoundsAndReproducible) {
  LinkConfig config;
  config.loss = 0.02;
  ImpairedLink a(config, 5, kStart), b(config, 5, kStart), c(config, 6, kStart);
  const std::vector<Emitted> out_a = run(a, 100000, kMicrosecond);
  const std::vector<Emitted> out_b = run(b, 100000, kMicrosecond);
  const std::vector<Emitted> out_c = run(c, 100000, kMicrosecond);
  // 2% of 100000: mean 2000, standard deviation 44; 1800..2200 is +-4.5 sigma.
  EXPECT_GE(a.counters().dropped_loss, 1800u);
  EXPECT_LE(a.counters().dropped_loss, 2200u);
  EXPECT_EQ(a.counters().received, 100000u);
  EXPECT_EQ(a.counters().forwarded + a.counters().dropped_loss, 100000u);
  ASSERT_EQ(out_a.size(), out_b.size());
  for (size_t i = 0; i < out_a.size(); ++i) ASSERT_EQ(out_a[i].index, out_b[i].index);
  // Another seed loses other datagrams.
  bool same = out_a.size() == out_c.size();
  for (size_t i = 0; same && i < out_a.size(); ++i) same = out_a[i].index == out_c[i].index;
  EXPECT_FALSE(same);
}

TEST(ImpairedLinkTest, GilbertElliottBurstsHaveTheConfiguredLengthAndRate) {
  LinkConfig config;
  config.burst_enter = 0.01;
  config.burst_exit = 0.25;
  ImpairedLink link(config, 9, kStart);
  const std::vector<Emitted> out = run(link, 200000, kMicrosecond);
  // Long-run loss 0.01 / 0.26 = 3.85%; bursts average 1 / 0.25 = 4 losses.
  const uint64_t lost = link.counters().dropped_burst;
  EXPECT_GE(lost, 6500u);
  EXPECT_LE(lost, 8900u);
  uint64_t bursts = 0;
  uint32_t expected = 0;
  for (const Emitted& e : out) {
    if (e.index != expected) ++bursts;
    expected = e.index + 1;
  }
  const double mean_burst = static_cast<double>(lost) / static_cast<double>(bursts);
  EXPECT_GT(mean_burst, 3.4);
  EXPECT_LT(mean_burst, 4.6);
}

TEST(BlackholeScheduleTest, ForwardsOnThenDropsOffRepeating) {
  const BlackholeSchedule schedule(5 * kSecond, 2 * kSecond, kStart);
  EXPECT_FALSE(schedule.dropping(kStart));
  EXPECT_FALSE(schedule.dropping(kStart + 5 * kSecond - 1));
  EXPECT_TRUE(schedule.dropping(kStart + 5 * kSecond));
  EXPECT_TRUE(schedule.dropping(kStart + 7 * kSecond - 1));
  EXPECT_FALSE(schedule.dropping(kStart + 7 * kSecond));
  EXPECT_FALSE(schedule.dropping(kStart + 12 * kSecond - 1));
  EXPECT_TRUE(schedule.dropping(kStart + 12 * kSecond));
  EXPECT_FALSE(schedule.dropping(kStart + 14 * kSecond));
  EXPECT_FALSE(BlackholeSchedule(5 * kSecond, 0, kStart).dropping(kStart + 6 * kSecond));
}

TEST(ImpairedLinkTest, BlackholeDropsExactlyTheOffPeriods) {
  LinkConfig config;
  config.blackhole_on = 5 * kSecond;
  config.blackhole_off = 2 * kSecond;
  ImpairedLink link(config, 1, kStart);
  // One datagram every 10 ms for 21 s: 3 periods of 700 on, 200 off.
  const std::vector<Emitted> out = run(link, 2100, 10 * kMillisecond);
  EXPECT_EQ(link.counters().dropped_blackhole, 600u);
  EXPECT_EQ(out.size(), 1500u);
  for (const Emitted& e : out) {
    const Duration phase = (e.at - kStart) % (7 * kSecond);
    EXPECT_LT(phase, 5 * kSecond) << e.index;
  }
}

TEST(ImpairedLinkTest, ReorderByPacketsHoldsBackExactlyNDatagrams) {
  LinkConfig config;
  config.reorder = 0.1;
  config.reorder_packets = 3;
  ImpairedLink link(config, 3, kStart);
  const std::vector<Emitted> out = run(link, 20000, kMicrosecond);
  ASSERT_EQ(out.size(), 20000u);
  const uint64_t held = link.counters().held;
  EXPECT_GE(held, 1700u);
  EXPECT_LE(held, 2300u);
  // Displacement: datagrams submitted later that went out earlier.
  uint64_t displaced = 0;
  std::vector<bool> seen(20000, false);
  for (size_t position = 0; position < out.size(); ++position) {
    const uint32_t index = out[position].index;
    seen[index] = true;
    uint32_t later_before = 0;
    for (size_t p = position >= 64 ? position - 64 : 0; p < position; ++p) {
      later_before += out[p].index > index;
    }
    if (later_before > 0) {
      ++displaced;
      // The last few may lack 3 followers and go at the hold limit.
      if (index < 19990) {
        EXPECT_EQ(later_before, 3u) << "datagram " << index;
      }
    }
  }
  EXPECT_EQ(link.counters().reordered, displaced);
  EXPECT_LE(held - displaced, 3u);
}

TEST(ImpairedLinkTest, ReorderByDelayHoldsBackForThatLong) {
  LinkConfig config;
  config.reorder = 0.05;
  config.reorder_delay = 10 * kMillisecond;
  ImpairedLink link(config, 4, kStart);
  const std::vector<Emitted> out = run(link, 5000, kMillisecond);
  ASSERT_EQ(out.size(), 5000u);
  uint64_t late = 0;
  for (const Emitted& e : out) {
    const Instant submitted = kStart + e.index * kMillisecond;
    if (e.at != submitted) {
      EXPECT_EQ(e.at, submitted + 10 * kMillisecond);
      ++late;
    }
  }
  EXPECT_EQ(late, link.counters().held);
  EXPECT_GT(late, 150u);
  // Every late one was overtaken, unless it was the very last.
  EXPECT_LE(late - link.counters().reordered, 1u);
}

TEST(ImpairedLinkTest, HeldDatagramWithoutLaterTrafficGoesAtTheHoldLimit) {
  LinkConfig config;
  config.reorder = 1;
  ImpairedLink link(config, 1, kStart);
  link.submit(kStart, datagram(0), 7);
  EXPECT_EQ(link.next_event(), kStart);
  EXPECT_FALSE(link.next_due(kStart));
  EXPECT_EQ(link.next_event(), kStart + config.reorder_hold_limit);
  EXPECT_FALSE(link.next_due(kStart + config.reorder_hold_limit - 1));
  const std::optional<ImpairedLink::Due> due = link.next_due(kStart + config.reorder_hold_limit);
  ASSERT_TRUE(due);
  EXPECT_EQ(index_of(due->bytes), 0u);
  EXPECT_EQ(due->flow, 7u);
  EXPECT_FALSE(link.next_due(kStart + config.reorder_hold_limit));
  EXPECT_EQ(link.next_event(), kNever);
}

TEST(TokenBucketTest, BurstThenRateThenQueueLimit) {
  // 8 Mbit/s: one byte per microsecond. Bucket 1500 B, queue 15000 B.
  TokenBucket bucket(8'000'000, 1500, 15000);
  EXPECT_EQ(bucket.admit(kStart, 1500), kStart);
  for (uint64_t k = 1; k <= 16; ++k) {
    EXPECT_EQ(bucket.admit(kStart, 1000), kStart + k * kMillisecond) << k;
  }
  // 15 ms (15000 B) already wait ahead of the next one: dropped.
  EXPECT_EQ(bucket.admit(kStart, 1000), std::nullopt);
  EXPECT_EQ(bucket.backlog(kStart), 16 * kMillisecond);
  // After idling the bucket is full again, and no fuller than 1500 B.
  const Instant later = kStart + 100 * kMillisecond;
  EXPECT_EQ(bucket.admit(later, 1500), later);
  EXPECT_EQ(bucket.admit(later, 1500), later + 1500 * kMicrosecond);
  // A datagram larger than the bucket still goes, after its own size.
  const Instant much_later = kStart + kSecond;
  EXPECT_EQ(bucket.admit(much_later, 4000), much_later + 2500 * kMicrosecond);
}

TEST(ImpairedLinkTest, RateLimitSpacesDatagramsAndDropsExcess) {
  LinkConfig config;
  config.rate_bits_per_second = 8'000'000;
  config.rate_burst_bytes = 1000;
  config.queue_bytes = 10000;
  ImpairedLink link(config, 1, kStart);
  // Offer 2 MB/s (twice the rate) for one second.
  const std::vector<Emitted> out = run(link, 2000, 500 * kMicrosecond, 1000);
  // The bucket passes 1 MB in the second, plus what the queue and bucket
  // held when the offer stopped.
  EXPECT_GE(out.size(), 1000u);
  EXPECT_LE(out.size(), 1012u);
  EXPECT_EQ(link.counters().dropped_queue + out.size(), 2000u);
  for (size_t i = 1; i < out.size(); ++i) {
    EXPECT_GE(out[i].at - out[i - 1].at, kMillisecond - kMicrosecond) << i;
  }
}

TEST(ImpairedLinkTest, DuplicationSendsTwoIdenticalCopies) {
  LinkConfig config;
  config.duplicate = 1;
  ImpairedLink link(config, 1, kStart);
  const std::vector<Emitted> out = run(link, 100, kMicrosecond);
  ASSERT_EQ(out.size(), 200u);
  for (uint32_t i = 0; i < 100; ++i) {
    EXPECT_EQ(out[2 * i].index, i);
    EXPECT_EQ(out[2 * i + 1].index, i);
  }
  EXPECT_EQ(link.counters().duplicated, 100u);
}

TEST(ImpairedLinkTest, CorruptionFlipsOneToThreeBits) {
  LinkConfig config;
  config.corrupt = 1;
  ImpairedLink link(config, 11, kStart);
  const std::vector<uint8_t> original(1200, 0x33);
  for (int i = 0; i < 500; ++i) {
    link.submit(kStart, original, 0);
    const std::optional<ImpairedLink::Due> due = link.next_due(kStart);
    ASSERT_TRUE(due);
    ASSERT_EQ(due->bytes.size(), original.size());
    int flipped = 0;
    for (size_t b = 0; b < original.size(); ++b) {
      flipped += std::popcount(static_cast<unsigned>(due->bytes[b] ^ original[b]));
    }
    EXPECT_GE(flipped, 1);
    EXPECT_LE(flipped, 3);
  }
  EXPECT_EQ(link.counters().corrupted, 500u);
}

TEST(ImpairedLinkTest, DelayAndJitterStayInTheirWindow) {
  LinkConfig config;
  config.delay = 10 * kMillisecond;
  config.jitter = 2 * kMillisecond;
  ImpairedLink link(config, 2, kStart);
  const std::vector<Emitted> out = run(link, 1000, 100 * kMicrosecond);
  ASSERT_EQ(out.size(), 1000u);
  Duration min_delay = kNever, max_delay = 0;
  for (const Emitted& e : out) {
    const Duration delay = e.at - (kStart + e.index * 100 * kMicrosecond);
    min_delay = std::min(min_delay, delay);
    max_delay = std::max(max_delay, delay);
  }
  EXPECT_GE(min_delay, 10 * kMillisecond);
  EXPECT_LE(max_delay, 12 * kMillisecond);
  EXPECT_GT(max_delay - min_delay, kMillisecond);
  EXPECT_EQ(link.counters().delayed, 1000u);
  // Jitter of 2 ms over datagrams 0.1 ms apart reorders some of them.
  EXPECT_GT(link.counters().reordered, 0u);
}

TEST(ImpairedLinkTest, PoolBoundDropsWhenFull) {
  LinkConfig config;
  config.delay = kSecond;
  config.max_packets = 4;
  ImpairedLink link(config, 1, kStart);
  for (uint32_t i = 0; i < 6; ++i) link.submit(kStart, datagram(i), 0);
  EXPECT_EQ(link.counters().dropped_overflow, 2u);
  EXPECT_EQ(link.in_flight(), 4u);
  std::vector<Emitted> out;
  drain(link, kStart + kSecond, out);
  ASSERT_EQ(out.size(), 4u);
  // The slots are free again.
  link.submit(kStart + kSecond, datagram(9), 0);
  EXPECT_EQ(link.counters().dropped_overflow, 2u);
}

TEST(ImpairedLinkTest, EverythingTogetherIsReproducibleFromTheSeed) {
  LinkConfig config;
  config.loss = 0.02;
  config.burst_enter = 0.005;
  config.burst_exit = 0.3;
  config.duplicate = 0.01;
  config.corrupt = 0.01;
  config.reorder = 0.03;
  config.delay = kMillisecond;
  config.jitter = 300 * kMicrosecond;
  config.rate_bits_per_second = 100'000'000;
  auto trace = [&config](uint64_t seed) {
    ImpairedLink link(config, seed, kStart);
    std::vector<std::pair<uint32_t, Instant>> out;
    for (const Emitted& e : run(link, 20000, 50 * kMicrosecond, 1200)) {
      out.emplace_back(e.index, e.at);
    }
    return out;
  };
  EXPECT_EQ(trace(77), trace(77));
  EXPECT_NE(trace(77), trace(78));
}

}  // namespace
}  // namespace dpquic::impair
