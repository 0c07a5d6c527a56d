// RttEstimator against RFC 9002 §5 (and the §A.7 pseudocode it mirrors).
#include "quic/recovery/rtt_estimator.h"

#include <gtest/gtest.h>

namespace dpquic::recovery {
namespace {

constexpr Duration kMs = kMillisecond;
constexpr Duration kMaxAckDelay = 25 * kMs;

TEST(RttEstimatorTest, InitialStateUsesInitialRtt) {
  RttEstimator rtt;
  EXPECT_FALSE(rtt.has_sample());
  // §6.2.2: smoothed_rtt = kInitialRtt (333 ms), rttvar = kInitialRtt / 2.
  EXPECT_EQ(rtt.smoothed_rtt(), 333 * kMs);
  EXPECT_EQ(rtt.rttvar(), 166500 * kMicrosecond);
  // PTO before any sample: 333 + 4 * 166.5 = 999 ms.
  EXPECT_EQ(rtt.pto_base(), 999 * kMs);

  RttEstimator custom(100 * kMs);
  EXPECT_EQ(custom.smoothed_rtt(), 100 * kMs);
  EXPECT_EQ(custom.rttvar(), 50 * kMs);
}

TEST(RttEstimatorTest, FirstSampleSetsEverythingAndIgnoresAckDelay) {
  RttEstimator rtt;
  // §5.3: on the first sample, min_rtt = smoothed_rtt = latest_rtt and
  // rttvar = latest_rtt / 2; ack_delay plays no part.
  rtt.on_sample(100 * kMs, 20 * kMs, true, kMaxAckDelay);
  EXPECT_TRUE(rtt.has_sample());
  EXPECT_EQ(rtt.latest_rtt(), 100 * kMs);
  EXPECT_EQ(rtt.min_rtt(), 100 * kMs);
  EXPECT_EQ(rtt.smoothed_rtt(), 100 * kMs);
  EXPECT_EQ(rtt.rttvar(), 50 * kMs);
  EXPECT_EQ(rtt.pto_base(), 300 * kMs);
}

TEST(RttEstimatorTest, SubsequentSampleSubtractsAckDelay) {
  RttEstimator rtt;
  rtt.on_sample(100 * kMs, 0, true, kMaxAckDelay);
  // adjusted_rtt = 120 - 10 = 110 ms (120 >= min_rtt + 10).
  rtt.on_sample(120 * kMs, 10 * kMs, true, kMaxAckDelay);
  EXPECT_EQ(rtt.min_rtt(), 100 * kMs);
  // rttvar = 3/4 * 50 + 1/4 * |100 - 110| = 40 ms.
  EXPECT_EQ(rtt.rttvar(), 40 * kMs);
  // smoothed_rtt = 7/8 * 100 + 1/8 * 110 = 101.25 ms.
  EXPECT_EQ(rtt.smoothed_rtt(), 101250 * kMicrosecond);
  EXPECT_EQ(rtt.pto_base(), (101250 + 160000) * kMicrosecond);
}

TEST(RttEstimatorTest, MinRttIgnoresAckDelay) {
  RttEstimator rtt;
  rtt.on_sample(100 * kMs, 0, true, kMaxAckDelay);
  // §5.2: min_rtt takes latest_rtt as is, even when ack_delay is large.
  rtt.on_sample(90 * kMs, 20 * kMs, true, kMaxAckDelay);
  EXPECT_EQ(rtt.min_rtt(), 90 * kMs);
  EXPECT_EQ(rtt.latest_rtt(), 90 * kMs);
  // 90 < 90 + 20: the ack delay is not subtracted; adjusted = 90 ms.
  // rttvar = (3 * 50 + 10) / 4 = 40 ms; smoothed = (700 + 90) / 8 = 98.75 ms.
  EXPECT_EQ(rtt.rttvar(), 40 * kMs);
  EXPECT_EQ(rtt.smoothed_rtt(), 98750 * kMicrosecond);
}

TEST(RttEstimatorTest, AckDelayCappedAtMaxAckDelayOnlyAfterConfirmation) {
  // Confirmed: ack_delay 80 ms is capped at 25 ms; adjusted = 200 - 25 = 175.
  RttEstimator confirmed;
  confirmed.on_sample(100 * kMs, 0, true, kMaxAckDelay);
  confirmed.on_sample(200 * kMs, 80 * kMs, true, kMaxAckDelay);
  // rttvar = (150 + 75) / 4 = 56.25 ms; smoothed = (700 + 175) / 8 = 109.375 ms.
  EXPECT_EQ(confirmed.rttvar(), 56250 * kMicrosecond);
  EXPECT_EQ(confirmed.smoothed_rtt(), 109375 * kMicrosecond);

  // Not confirmed: the whole 80 ms is subtracted; adjusted = 120.
  RttEstimator unconfirmed;
  unconfirmed.on_sample(100 * kMs, 0, false, kMaxAckDelay);
  unconfirmed.on_sample(200 * kMs, 80 * kMs, false, kMaxAckDelay);
  // rttvar = (150 + 20) / 4 = 42.5 ms; smoothed = (700 + 120) / 8 = 102.5 ms.
  EXPECT_EQ(unconfirmed.rttvar(), 42500 * kMicrosecond);
  EXPECT_EQ(unconfirmed.smoothed_rtt(), 102500 * kMicrosecond);
}

TEST(RttEstimatorTest, AckDelayNotSubtractedBelowMinRtt) {
  RttEstimator rtt;
  rtt.on_sample(100 * kMs, 0, true, kMaxAckDelay);
  // 110 - 20 = 90 would fall below min_rtt (100): use 110 unadjusted.
  rtt.on_sample(110 * kMs, 20 * kMs, true, kMaxAckDelay);
  // rttvar = (150 + 10) / 4 = 40 ms; smoothed = (700 + 110) / 8 = 101.25 ms.
  EXPECT_EQ(rtt.rttvar(), 40 * kMs);
  EXPECT_EQ(rtt.smoothed_rtt(), 101250 * kMicrosecond);

  // Exactly at the boundary (latest == min_rtt + ack_delay) it is subtracted.
  RttEstimator edge;
  edge.on_sample(100 * kMs, 0, true, kMaxAckDelay);
  edge.on_sample(120 * kMs, 20 * kMs, true, kMaxAckDelay);
  EXPECT_EQ(edge.rttvar(), (150 * kMs) / 4);  // deviation 0
  EXPECT_EQ(edge.smoothed_rtt(), 100 * kMs);
}

TEST(RttEstimatorTest, HugeAckDelayBeforeConfirmationDoesNotWrap) {
  // Uncapped before confirmation: min_rtt + ack_delay must not wrap around
  // and make a 2^64 - 50 ms delay look like a plausible one.
  RttEstimator rtt;
  rtt.on_sample(100 * kMs, 0, false, kMaxAckDelay);
  rtt.on_sample(150 * kMs, UINT64_MAX - 50 * kMs + 1, false, kMaxAckDelay);
  EXPECT_EQ(rtt.latest_rtt(), 150 * kMs);
  // Unadjusted 150 ms: rttvar (150 + 50) / 4, smoothed (700 + 150) / 8.
  EXPECT_EQ(rtt.rttvar(), 50 * kMs);
  EXPECT_EQ(rtt.smoothed_rtt(), 106250 * kMicrosecond);
}

TEST(RttEstimatorTest, PtoBaseHasGranularityFloor) {
  RttEstimator rtt;
  rtt.on_sample(10 * kMs, 0, true, kMaxAckDelay);
  EXPECT_EQ(rtt.pto_base(), 10 * kMs + 4 * 5 * kMs);
  // Identical samples shrink rttvar by 3/4 each time; once 4 * rttvar is
  // under kGranularity (1 ms) the floor applies.
  for (int i = 0; i < 20; ++i) rtt.on_sample(10 * kMs, 0, true, kMaxAckDelay);
  EXPECT_LT(4 * rtt.rttvar(), kGranularity);
  EXPECT_EQ(rtt.smoothed_rtt(), 10 * kMs);
  EXPECT_EQ(rtt.pto_base(), 10 * kMs + kGranularity);
}

TEST(RttEstimatorTest, ResetReturnsToInitialState) {
  RttEstimator rtt(50 * kMs);
  rtt.on_sample(10 * kMs, 0, true, kMaxAckDelay);
  rtt.reset();
  EXPECT_FALSE(rtt.has_sample());
  EXPECT_EQ(rtt.smoothed_rtt(), 50 * kMs);
  EXPECT_EQ(rtt.rttvar(), 25 * kMs);
  // The next sample is a first sample again.
  rtt.on_sample(80 * kMs, 5 * kMs, true, kMaxAckDelay);
  EXPECT_EQ(rtt.min_rtt(), 80 * kMs);
  EXPECT_EQ(rtt.smoothed_rtt(), 80 * kMs);
  EXPECT_EQ(rtt.rttvar(), 40 * kMs);
}

}  // namespace
}  // namespace dpquic::recovery
