// The Retry policy's modes and thresholds, and the token bucket limiting
// stateless answers, under virtual time.
#include "quic/endpoint/retry_policy.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "quic/endpoint/rate_limiter.h"

namespace dpquic::endpoint {
namespace {

// An arbitrary epoch: the policy must not assume time starts at 0.
constexpr Instant kStart = 1'000'000 * kSecond + 123;
constexpr size_t kPool = 4096;

TEST(RetryPolicyTest, NeverAndAlwaysIgnoreLoad) {
  RetryPolicy never({RetryMode::kNever, 0, 0}, kPool);
  RetryPolicy always({RetryMode::kAlways, 1'000'000, 1'000'000}, kPool);
  for (int i = 0; i < 100; ++i) never.on_connection_accepted(kStart);
  EXPECT_FALSE(never.should_retry(kStart, {1'000'000}));
  EXPECT_FALSE(never.retrying());
  EXPECT_TRUE(always.should_retry(kStart, {0}));
  EXPECT_TRUE(always.retrying());
}

TEST(RetryPolicyTest, AutoRetriesAtTheHalfOpenThreshold) {
  RetryPolicy policy({RetryMode::kAuto, 1000, 5000}, kPool);
  EXPECT_FALSE(policy.should_retry(kStart, {0}));
  EXPECT_FALSE(policy.should_retry(kStart, {999}));
  EXPECT_FALSE(policy.retrying());
  EXPECT_TRUE(policy.should_retry(kStart, {1000}));
  EXPECT_TRUE(policy.retrying());
  EXPECT_TRUE(policy.should_retry(kStart, {5000}));
  // Load gone: Retry stays on for the hold (10 s), then turns off.
  EXPECT_TRUE(policy.should_retry(kStart + kSecond, {10}));
  EXPECT_TRUE(policy.should_retry(kStart + 10 * kSecond - 1, {10}));
  EXPECT_FALSE(policy.should_retry(kStart + 10 * kSecond, {10}));
  EXPECT_FALSE(policy.retrying());
}

TEST(RetryPolicyTest, PressureSeenAgainExtendsTheHold) {
  // A flood's half-open connections expire together every few seconds: the
  // Initials that follow must not get full handshakes in between.
  RetryPolicy policy({RetryMode::kAuto, 1000, 5000, 3 * kSecond}, kPool);
  EXPECT_FALSE(policy.should_retry(kStart, {0}));
  EXPECT_TRUE(policy.should_retry(kStart + kSecond, {1000}));
  EXPECT_TRUE(policy.should_retry(kStart + 3 * kSecond, {0}));
  EXPECT_TRUE(policy.should_retry(kStart + 3 * kSecond, {1000}));
  EXPECT_TRUE(policy.should_retry(kStart + 6 * kSecond - 1, {0}));
  EXPECT_FALSE(policy.should_retry(kStart + 6 * kSecond, {0}));
  // No hold: off as soon as the pressure is.
  RetryPolicy none({RetryMode::kAuto, 1000, 5000, 0}, kPool);
  EXPECT_TRUE(none.should_retry(kStart, {1000}));
  EXPECT_FALSE(none.should_retry(kStart, {999}));
}

TEST(RetryPolicyTest, TheDefaultHalfOpenThresholdIsAQuarterOfThePool) {
  RetryPolicy large({RetryMode::kAuto, 0, 5000}, 4096);
  EXPECT_EQ(large.half_open_threshold(), 1024u);
  EXPECT_FALSE(large.should_retry(kStart, {1023}));
  EXPECT_FALSE(large.crowded(1023));
  EXPECT_TRUE(large.should_retry(kStart, {1024}));
  EXPECT_TRUE(large.crowded(1024));
  // A 16-core server's default share of 4096 connections: 256 slots, so
  // Retry turns on at 64, long before spoofed Initials fill them.
  RetryPolicy shard({RetryMode::kAuto, 0, 5000}, 256);
  EXPECT_EQ(shard.half_open_threshold(), 64u);
  EXPECT_TRUE(shard.should_retry(kStart, {64}));
  RetryPolicy tiny({RetryMode::kAuto, 0, 5000}, 3);
  EXPECT_EQ(tiny.half_open_threshold(), 1u);
}

TEST(RetryPolicyTest, AutoRetriesWhenThePoolOrThePrefixIsFull) {
  RetryPolicy policy({RetryMode::kAuto, 0, 5000}, kPool);
  RetryPressure pressure;
  EXPECT_FALSE(policy.should_retry(kStart, pressure));
  pressure.pool_full = true;
  EXPECT_TRUE(policy.should_retry(kStart, pressure));
  pressure.pool_full = false;
  pressure.prefix_full = true;
  EXPECT_TRUE(policy.should_retry(kStart, pressure));
  // Never means never, whatever the pressure.
  RetryPolicy never({RetryMode::kNever, 0, 5000}, kPool);
  pressure.pool_full = true;
  EXPECT_FALSE(never.should_retry(kStart, pressure));
}

TEST(RetryPolicyTest, AutoRetriesAtTheHandshakeRateThreshold) {
  RetryPolicy policy({RetryMode::kAuto, 1000, 100, 0}, kPool);
  // 99 connections in the first half second: below the threshold.
  for (int i = 0; i < 99; ++i) policy.on_connection_accepted(kStart + i * 5 * kMillisecond);
  EXPECT_EQ(policy.handshake_rate(kStart + 500 * kMillisecond), 99u);
  EXPECT_FALSE(policy.should_retry(kStart + 500 * kMillisecond, {0}));
  policy.on_connection_accepted(kStart + 600 * kMillisecond);
  EXPECT_EQ(policy.handshake_rate(kStart + 600 * kMillisecond), 100u);
  EXPECT_TRUE(policy.should_retry(kStart + 600 * kMillisecond, {0}));

  // The window slides: at the start of the next second the previous one
  // still counts in full, then fades linearly.
  EXPECT_EQ(policy.handshake_rate(kStart + kSecond), 100u);
  EXPECT_TRUE(policy.should_retry(kStart + kSecond, {0}));
  EXPECT_EQ(policy.handshake_rate(kStart + kSecond + 10 * kMillisecond), 99u);
  EXPECT_FALSE(policy.should_retry(kStart + kSecond + 10 * kMillisecond, {0}));
  EXPECT_EQ(policy.handshake_rate(kStart + kSecond + 500 * kMillisecond), 50u);
  // New accepts in the current second add on top of the fading one.
  for (int i = 0; i < 50; ++i) policy.on_connection_accepted(kStart + kSecond + 500 * kMillisecond);
  EXPECT_EQ(policy.handshake_rate(kStart + kSecond + 500 * kMillisecond), 100u);
  EXPECT_TRUE(policy.should_retry(kStart + kSecond + 500 * kMillisecond, {0}));
  // Two idle seconds later, nothing is left.
  EXPECT_EQ(policy.handshake_rate(kStart + 3 * kSecond + 1), 0u);
  EXPECT_FALSE(policy.should_retry(kStart + 3 * kSecond + 1, {0}));
}

TEST(RetryPolicyTest, ClockGoingBackwardsStaysInTheCurrentSecond) {
  RetryPolicy policy({RetryMode::kAuto, 1000, 3}, kPool);
  policy.on_connection_accepted(kStart + 5 * kSecond);
  policy.on_connection_accepted(kStart);
  policy.on_connection_accepted(kStart + 5 * kSecond);
  EXPECT_EQ(policy.handshake_rate(kStart + 5 * kSecond), 3u);
  EXPECT_TRUE(policy.should_retry(kStart, {0}));
}

TEST(TokenBucketTest, BurstThenRate) {
  TokenBucket bucket(10, 3);  // 10 per second: one every 100 ms
  EXPECT_EQ(bucket.available(kStart), 3u);
  EXPECT_TRUE(bucket.allow(kStart));
  EXPECT_TRUE(bucket.allow(kStart));
  EXPECT_TRUE(bucket.allow(kStart));
  EXPECT_FALSE(bucket.allow(kStart));
  EXPECT_FALSE(bucket.allow(kStart + 99 * kMillisecond));
  EXPECT_TRUE(bucket.allow(kStart + 100 * kMillisecond));
  EXPECT_FALSE(bucket.allow(kStart + 100 * kMillisecond));
  // Fractions accumulate: 50 ms + 50 ms make one token.
  EXPECT_FALSE(bucket.allow(kStart + 150 * kMillisecond));
  EXPECT_TRUE(bucket.allow(kStart + 200 * kMillisecond));
  // A long pause refills to the burst, not beyond.
  EXPECT_EQ(bucket.available(kStart + 1000 * kSecond), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(bucket.allow(kStart + 1000 * kSecond));
  EXPECT_FALSE(bucket.allow(kStart + 1000 * kSecond));
}

TEST(TokenBucketTest, EdgeCases) {
  // Rate 0: the burst, then never again.
  TokenBucket once(0, 2);
  EXPECT_TRUE(once.allow(kStart));
  EXPECT_TRUE(once.allow(kStart + kSecond));
  EXPECT_FALSE(once.allow(kStart + 1000 * kSecond));
  // Burst 0: nothing ever passes.
  TokenBucket closed(1000, 0);
  EXPECT_FALSE(closed.allow(kStart));
  EXPECT_FALSE(closed.allow(kStart + kSecond));
  // Time going backwards refills nothing; the largest rate and a huge jump
  // do not overflow.
  TokenBucket fast(TokenBucket::kMaxRate, TokenBucket::kMaxRate);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(fast.allow(kStart));
  EXPECT_EQ(fast.available(kStart), TokenBucket::kMaxRate - 5);
  EXPECT_EQ(fast.available(kStart - kSecond), TokenBucket::kMaxRate - 5);
  EXPECT_EQ(fast.available(kNever - 1), TokenBucket::kMaxRate);
  TokenBucket slow(1, 1);
  EXPECT_TRUE(slow.allow(kStart));
  EXPECT_FALSE(slow.allow(kStart - 5 * kSecond));
  EXPECT_FALSE(slow.allow(kStart + kSecond - 1));
  EXPECT_TRUE(slow.allow(kStart + kSecond));
  EXPECT_THROW(TokenBucket(TokenBucket::kMaxRate + 1, 1), std::invalid_argument);
  EXPECT_THROW(TokenBucket(1, TokenBucket::kMaxRate + 1), std::invalid_argument);
}

}  // namespace
}  // namespace dpquic::endpoint
