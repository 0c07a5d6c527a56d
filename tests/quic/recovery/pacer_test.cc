// The pacer's token bucket: initial burst, capacity, refill, next_send_time,
// rate changes, 100 Gbps-class and very low rates, and no overflow at the
// extremes.
#include "quic/recovery/pacer.h"

#include <gtest/gtest.h>

namespace dpquic::recovery {
namespace {

constexpr Duration kMs = kMillisecond;
constexpr Duration kUs = kMicrosecond;
constexpr int64_t kOne = Pacer::kOneDatagram;

// Sends everything the pacer allows at `now`, returns how many went.
size_t drain(Pacer& pacer, Instant now, uint64_t bytes) {
  const size_t allowed = pacer.datagrams_allowed(now);
  for (size_t i = 0; i < allowed; ++i) pacer.on_datagram_sent(bytes);
  return allowed;
}

TEST(PacerTest, UnconfiguredHoldsTwoDatagramsAtZeroRate) {
  Pacer pacer;
  EXPECT_FALSE(pacer.configured());
  EXPECT_EQ(pacer.datagrams_allowed(0), 2u);
  EXPECT_EQ(pacer.next_send_time(0), 0u);
  pacer.on_datagram_sent(1200);
  pacer.on_datagram_sent(1200);
  EXPECT_EQ(pacer.datagrams_allowed(10 * kSecond), 0u);
  EXPECT_EQ(pacer.next_send_time(10 * kSecond), kNever);
}

TEST(PacerTest, InitialWindowBurstThenPaced) {
  Pacer pacer;
  // 1.25 * 12000 B / 100 ms = 150 kB/s: one 1200-byte datagram per 8 ms.
  pacer.update(12000, 100 * kMs, 1200);
  EXPECT_TRUE(pacer.configured());
  EXPECT_EQ(pacer.burst_capacity(), 2u);  // 1 ms is an eighth of a datagram
  EXPECT_GE(pacer.rate_bytes_per_second(), 149999u);
  EXPECT_LE(pacer.rate_bytes_per_second(), 150000u);
  // §7.7: the initial window (10 datagrams) may go at once.
  const Instant t0 = 5 * kSecond;
  EXPECT_EQ(pacer.next_send_time(t0), t0);
  EXPECT_EQ(drain(pacer, t0, 1200), 10u);
  EXPECT_EQ(pacer.tokens(), 0);
  EXPECT_EQ(pacer.datagrams_allowed(t0), 0u);
  // The next datagram's tokens accrue 8 ms later (the rate is rounded down
  // to 48 fractional bits, which costs at most a nanosecond here).
  const Instant next = pacer.next_send_time(t0);
  EXPECT_GE(next, t0 + 8 * kMs);
  EXPECT_LE(next, t0 + 8 * kMs + 1);
  EXPECT_EQ(pacer.datagrams_allowed(next - 1), 0u);
  EXPECT_EQ(pacer.next_send_time(next - 1), next);
  EXPECT_EQ(pacer.datagrams_allowed(next), 1u);
  EXPECT_EQ(pacer.next_send_time(next), next);
}

TEST(PacerTest, RefillIsProportionalAndCappedAtCapacity) {
  Pacer pacer;
  pacer.update(12000, 100 * kMs, 1200);
  const Instant t0 = 1 * kSecond;
  drain(pacer, t0, 1200);
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 4 * kMs), 0u);   // half a datagram
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 12 * kMs), 1u);  // one and a half
  pacer.on_datagram_sent(1200);
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 12 * kMs), 0u);
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 16 * kMs + 1), 1u);
  // Idle for long: never more than the bucket's capacity.
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 10 * kSecond), 2u);
  EXPECT_EQ(pacer.tokens(), 2 * kOne);
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 1000 * kSecond), 2u);
  // Time going backwards changes nothing.
  EXPECT_EQ(pacer.datagrams_allowed(t0), 2u);
}

TEST(PacerTest, DatagramCostIsProportionalToSize) {
  for (uint64_t mds : {1200u, 1252u, 1472u, 1500u, 9000u, 65527u}) {
    Pacer pacer;
    pacer.update(64 * mds, 100 * kMs, mds);
    pacer.datagrams_allowed(0);
    const int64_t before = pacer.tokens();
    pacer.on_datagram_sent(mds);  // a full datagram costs exactly one token
    EXPECT_EQ(before - pacer.tokens(), kOne) << mds;
  }
  Pacer pacer;
  pacer.update(12000, 100 * kMs, 1200);
  pacer.datagrams_allowed(0);
  const int64_t before = pacer.tokens();
  pacer.on_datagram_sent(600);
  EXPECT_EQ(before - pacer.tokens(), kOne / 2);
  pacer.on_datagram_sent(300);
  EXPECT_EQ(before - pacer.tokens(), kOne / 2 + kOne / 4);
}

TEST(PacerTest, DebtIsRepaidAndCappedAtOneBucket) {
  Pacer pacer;
  pacer.update(12000, 100 * kMs, 1200);  // capacity 2
  const Instant t0 = 0;
  EXPECT_EQ(drain(pacer, t0, 1200), 10u);
  pacer.on_datagram_sent(1200);  // beyond the tokens: one in debt
  EXPECT_EQ(pacer.tokens(), -kOne);
  // Two datagrams' worth (16 ms) repays the debt and earns one.
  const Instant next = pacer.next_send_time(t0);
  EXPECT_GE(next, t0 + 16 * kMs);
  EXPECT_LE(next, t0 + 16 * kMs + 1);
  // Debt stops at one bucket (2 datagrams).
  for (int i = 0; i < 10; ++i) pacer.on_datagram_sent(1200);
  EXPECT_EQ(pacer.tokens(), -2 * kOne);
  pacer.on_datagram_sent(UINT64_MAX);
  EXPECT_EQ(pacer.tokens(), -2 * kOne);
}

TEST(PacerTest, ShrinkingBucketAlsoShrinksTheDebtCap) {
  Pacer pacer;
  pacer.update(1200000, 10 * kMs, 1200);  // capacity 64
  drain(pacer, 0, 1200);
  pacer.on_datagram_sent(UINT64_MAX);  // 64 datagrams of debt
  EXPECT_EQ(pacer.tokens(), -64 * kOne);
  // A congestion event shrinks the window: the bucket, and the debt, become
  // 12 datagrams; further sends never take the debt past that.
  pacer.update(120000, 10 * kMs, 1200);
  ASSERT_EQ(pacer.burst_capacity(), 12u);
  EXPECT_EQ(pacer.tokens(), -12 * kOne);
  for (int i = 0; i < 5; ++i) pacer.on_datagram_sent(1200);
  EXPECT_EQ(pacer.tokens(), -12 * kOne);
}

TEST(PacerTest, RateChanges) {
  Pacer pacer;
  pacer.update(12000, 100 * kMs, 1200);
  const uint64_t base = pacer.rate();
  // Same inputs: nothing recomputed, the initial burst stays.
  pacer.update(12000, 100 * kMs, 1200);
  EXPECT_EQ(pacer.rate(), base);
  EXPECT_EQ(pacer.datagrams_allowed(0), 10u);
  // Doubling cwnd, or halving srtt, doubles the rate.
  pacer.update(24000, 100 * kMs, 1200);
  EXPECT_NEAR(static_cast<double>(pacer.rate()), 2.0 * base, 1.0);
  // Tokens above the new capacity (the initial burst) are dropped.
  EXPECT_EQ(pacer.datagrams_allowed(0), 2u);
  pacer.update(12000, 50 * kMs, 1200);
  EXPECT_NEAR(static_cast<double>(pacer.rate()), 2.0 * base, 1.0);
  // A larger mds means fewer (bigger) datagrams per second.
  pacer.update(12000, 100 * kMs, 2400);
  EXPECT_NEAR(static_cast<double>(pacer.rate()), base / 2.0, 1.0);
  EXPECT_GE(pacer.rate_bytes_per_second(), 149999u);
  EXPECT_LE(pacer.rate_bytes_per_second(), 150000u);

  // A faster rate refills faster: 1.25 * 1.2 MB / 10 ms = 150 MB/s is
  // 125 datagrams per ms; the bucket holds 64.
  pacer.update(1200000, 10 * kMs, 1200);
  EXPECT_EQ(pacer.burst_capacity(), 64u);
  drain(pacer, 1 * kSecond, 1200);
  drain(pacer, 1 * kSecond + 1 * kMs, 1200);
  EXPECT_EQ(pacer.datagrams_allowed(1 * kSecond + 1 * kMs + 100 * kUs), 12u);  // 12.5
  // And the bucket capacity tracks the rate in between the clamps:
  // 1.25 * 120 kB / 10 ms = 15 MB/s = 12.5 datagrams per ms.
  pacer.update(120000, 10 * kMs, 1200);
  EXPECT_EQ(pacer.burst_capacity(), 12u);
}

TEST(PacerTest, HundredGigabitRate) {
  // 12.5 MB window over a 1 ms RTT, 1500-byte datagrams: 1.25 * 12.5 GB/s
  // = 15.625 GB/s (125 Gbps), one datagram per 96 ns.
  Pacer pacer;
  pacer.update(12500000, 1 * kMs, 1500);
  EXPECT_EQ(pacer.burst_capacity(), 64u);
  EXPECT_NEAR(static_cast<double>(pacer.rate_bytes_per_second()), 15.625e9, 15.625e3);
  const Instant t0 = 1 * kSecond;
  EXPECT_EQ(drain(pacer, t0, 1500), 64u);
  const Instant next = pacer.next_send_time(t0);
  EXPECT_GE(next, t0 + 96);
  EXPECT_LE(next, t0 + 97);
  EXPECT_EQ(pacer.datagrams_allowed(t0 + 1 * kUs), 10u);  // 10.4
  // Sustained over 10 ms, polled every 5 us (52 datagrams a poll, under
  // the 64 cap, so nothing is lost to a full bucket): 15.625 GB/s * 10 ms /
  // 1500 = 104166.7.
  size_t sent = 0;
  for (Instant now = t0 + 5 * kUs; now <= t0 + 10 * kMs; now += 5 * kUs) {
    sent += drain(pacer, now, 1500);
  }
  EXPECT_NEAR(static_cast<double>(sent), 104166, 1);
}

TEST(PacerTest, JumboHundredGigabit) {
  // 100 Gbps of 9000-byte datagrams: 12.5 GB/s = 1.25 * 10 MB / 1 ms.
  Pacer pacer;
  pacer.update(10000000, 1 * kMs, 9000);
  EXPECT_NEAR(static_cast<double>(pacer.rate_bytes_per_second()), 12.5e9, 12.5e3);
  drain(pacer, 0, 9000);
  const Instant next = pacer.next_send_time(0);  // 720 ns per datagram
  EXPECT_GE(next, 720u);
  EXPECT_LE(next, 721u);
  EXPECT_EQ(pacer.datagrams_allowed(next), 1u);
}

TEST(PacerTest, VeryLowRate) {
  // Two 1200-byte datagrams per 10 s RTT: 300 B/s, one every 4 s.
  Pacer pacer;
  pacer.update(2400, 10 * kSecond, 1200);
  EXPECT_EQ(pacer.burst_capacity(), 2u);
  EXPECT_EQ(drain(pacer, 0, 1200), 2u);
  const Instant next = pacer.next_send_time(0);
  // 48 fractional bits hold the rate to ~1e-5 here.
  EXPECT_GE(next, 4 * kSecond);
  EXPECT_LE(next, 4 * kSecond + 50 * kUs);
  EXPECT_EQ(pacer.datagrams_allowed(next - 1), 0u);
  EXPECT_EQ(pacer.datagrams_allowed(next), 1u);
  size_t sent = 1;
  pacer.on_datagram_sent(1200);
  for (Instant now = next; now <= 401 * kSecond; now += 100 * kMs) sent += drain(pacer, now, 1200);
  EXPECT_EQ(sent, 100u);  // one per 4.00004 s

  // Vanishingly low: 2400 B per 10^6 s still sends, eventually.
  Pacer slow;
  slow.update(2400, 1000000 * kSecond, 1200);
  EXPECT_EQ(slow.rate(), 1u);  // the floor
  drain(slow, 0, 1200);
  EXPECT_EQ(slow.next_send_time(0), uint64_t{1} << 48);
}

TEST(PacerTest, NoOverflowAtExtremes) {
  // Huge window, 1 ns RTT: the rate saturates, the bucket is 64 datagrams.
  Pacer fast;
  fast.update(UINT64_MAX, 1, 1);
  EXPECT_EQ(fast.rate(), UINT64_MAX);
  EXPECT_EQ(fast.burst_capacity(), 64u);
  EXPECT_EQ(fast.datagrams_allowed(0), 64u);
  fast.on_datagram_sent(UINT64_MAX);
  EXPECT_EQ(fast.tokens(), -64 * kOne);
  EXPECT_EQ(fast.next_send_time(0), 1u);  // 65 datagrams at 2^16 per ns
  EXPECT_EQ(fast.datagrams_allowed(1), 64u);
  EXPECT_EQ(fast.datagrams_allowed(kNever - 1), 64u);

  // Huge RTT and datagram size: the 128-bit denominator does not wrap.
  Pacer huge;
  huge.update(UINT64_MAX, UINT64_MAX, UINT64_MAX);
  EXPECT_EQ(huge.rate(), 1u);
  EXPECT_EQ(huge.burst_capacity(), 2u);

  // Near the end of the clock, the next send time saturates at kNever.
  Pacer slow;
  slow.update(2400, UINT64_MAX, 1200);
  EXPECT_EQ(slow.rate(), 1u);
  EXPECT_EQ(drain(slow, kNever - 10, 1200), 2u);
  EXPECT_EQ(slow.next_send_time(kNever - 10), kNever);

  // A zero window never sends; zero RTT and zero mds are clamped to 1.
  Pacer closed;
  closed.update(0, 100 * kMs, 1200);
  EXPECT_EQ(closed.rate(), 0u);
  drain(closed, 0, 1200);
  EXPECT_EQ(closed.next_send_time(0), kNever);
  Pacer degenerate;
  degenerate.update(1000, 0, 0);
  EXPECT_GT(degenerate.rate(), 0u);
  EXPECT_EQ(degenerate.burst_capacity(), 64u);

  // A full day idle at 100 Gbps: elapsed * rate needs the 128-bit product.
  Pacer day;
  day.update(12500000, 1 * kMs, 1500);
  drain(day, 0, 1500);
  EXPECT_EQ(day.datagrams_allowed(86400 * kSecond), 64u);
}

}  // namespace
}  // namespace dpquic::recovery
