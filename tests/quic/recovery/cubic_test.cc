// CUBIC (RFC 9438) in QUIC: the cubic curve against its formula, the
// per-ACK growth toward W_cubic(t + RTT), the Reno-friendly region, fast
// convergence, recovery periods, persistent congestion, idle epochs, and
// HyStart++ driving the first slow start.
#include "quic/recovery/cubic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>

namespace dpquic::recovery {
namespace {

constexpr uint64_t kMds = 1200;
constexpr Duration kMs = kMillisecond;

void ack(Cubic& cc, Instant now, Instant time_sent, const RttEstimator& rtt, uint64_t size = kMds,
         bool app_limited = false) {
  cc.on_packet_acked(now, AckedPacket{0, time_sent, size}, rtt, cc.congestion_window(),
                     app_limited);
}

// The formula, independently: C * (t - K)^3 + W_max in segments.
double w_cubic_segments(double t, double k, double w_max_segments) {
  return 0.4 * std::pow(t - k, 3) + w_max_segments;
}

// A CUBIC sender whose first loss hits at cwnd = 36 segments (43200 bytes),
// so that K = cbrt(36 * (1 - 0.7) / 0.4) = cbrt(27) = 3 s exactly.
class CubicCurveTest : public ::testing::Test {
 protected:
  static constexpr Instant kLossTime = 1000 * kMs;
  static constexpr Instant kEpochStart = 2000 * kMs;

  CubicCurveTest() : cc_(kMds, /*hystart_enabled=*/false), rtt_(100 * kMs) {
    for (int i = 0; i < 26; ++i) ack(cc_, 100 * kMs, 0, rtt_);
  }

  void lose_and_start_epoch() {
    ASSERT_EQ(cc_.congestion_window(), 43200u);
    cc_.on_congestion_event(kLossTime, 500 * kMs);
    ASSERT_EQ(cc_.congestion_window(), 30240u);
    ack(cc_, kEpochStart, kLossTime + 1, rtt_);  // first ACK after recovery
    ASSERT_TRUE(cc_.epoch_started());
  }

  Cubic cc_;
  RttEstimator rtt_;
};

TEST(CubicTest, InitialState) {
  for (uint64_t mds : {1200u, 1252u, 1472u, 9000u}) {
    Cubic cc(mds);
    EXPECT_EQ(cc.congestion_window(), initial_window(mds));
    EXPECT_EQ(cc.slow_start_threshold(), UINT64_MAX);
    EXPECT_TRUE(cc.in_slow_start());
    EXPECT_TRUE(cc.hystart_active());
    EXPECT_EQ(cc.algorithm(), CongestionControlAlgorithm::kCubic);
  }
  EXPECT_FALSE(Cubic(kMds, false).hystart_active());
}

TEST_F(CubicCurveTest, MultiplicativeDecreaseAndK) {
  lose_and_start_epoch();
  // §4.6: ssthresh = cwnd * 0.7; W_max = cwnd (no earlier plateau).
  EXPECT_EQ(cc_.slow_start_threshold(), 30240u);
  EXPECT_DOUBLE_EQ(cc_.w_max(), 43200.0);
  EXPECT_EQ(cc_.cwnd_prior(), 43200u);
  EXPECT_EQ(cc_.cwnd_epoch(), 30240u);
  EXPECT_EQ(cc_.epoch_start(), kEpochStart);
  EXPECT_NEAR(cc_.k_seconds(), 3.0, 1e-12);
  EXPECT_NEAR(cc_.k_seconds(), std::cbrt(36 * (1 - 0.7) / 0.4), 1e-12);
}

TEST_F(CubicCurveTest, WCubicMatchesFormula) {
  lose_and_start_epoch();
  // Exact values of 1200 * (0.4 * (t - 3)^3 + 36) at whole seconds.
  const struct {
    Duration t;
    double bytes;
  } expected[] = {
      {0, 30240.0},           {1 * kSecond, 39360.0}, {2 * kSecond, 42720.0},
      {3 * kSecond, 43200.0}, {4 * kSecond, 43680.0}, {5 * kSecond, 47040.0},
      {6 * kSecond, 56160.0},
  };
  for (const auto& e : expected) EXPECT_NEAR(cc_.w_cubic(e.t), e.bytes, 1e-6) << e.t;
  // And anywhere in between, against the formula evaluated here.
  for (Duration t : {150 * kMs, 1234 * kMs, 2999 * kMs, 3001 * kMs, 7250 * kMs}) {
    const double seconds = static_cast<double>(t) / 1e9;
    EXPECT_NEAR(cc_.w_cubic(t), 1200 * w_cubic_segments(seconds, 3.0, 36.0), 1e-6) << t;
  }
  // W_cubic(0) = cwnd_epoch: the curve starts where the window was cut to.
  EXPECT_NEAR(cc_.w_cubic(0), static_cast<double>(cc_.cwnd_epoch()), 1e-6);
}

TEST_F(CubicCurveTest, PerAckGrowthTowardWCubicOneRttAhead) {
  lose_and_start_epoch();
  // The epoch's first ACK: W_est = 30240 + floor(9/17 * 1200 * 1200 /
  // 30240) = 30265 exceeds W_cubic(0) = 30240, so the Reno-friendly
  // estimate sets the window.
  EXPECT_EQ(cc_.w_est(), 30265u);
  EXPECT_EQ(cc_.congestion_window(), 30265u);

  // One second in: W_est = 30290 < W_cubic(1 s) = 39360, the cubic region.
  // target = W_cubic(1 s + srtt 100 ms) = 39907.68 -> 39907 (below 1.5 *
  // cwnd); cwnd += (39907 - 30265) * 1200 / 30265 = 382.29 -> 382.
  ack(cc_, kEpochStart + 1 * kSecond, kLossTime + 2, rtt_);
  EXPECT_EQ(cc_.w_est(), 30290u);
  EXPECT_EQ(cc_.congestion_window(), 30647u);

  // Far past K, W_cubic(10.1 s) is ~215 KB and the target is capped at
  // 1.5 * cwnd: the step is (1.5 * cwnd - cwnd) * 1200 / cwnd, plus at most
  // one byte from the fraction carried over from the previous step.
  const uint64_t cwnd = cc_.congestion_window();
  const uint64_t target = cwnd * 3 / 2;  // 45970 (45970.5 floored)
  ack(cc_, kEpochStart + 10 * kSecond, kLossTime + 3, rtt_);
  const uint64_t increase = cc_.congestion_window() - cwnd;
  const uint64_t exact = (target - cwnd) * 1200 / cwnd;
  EXPECT_GE(increase, exact);
  EXPECT_LE(increase, exact + 1);
}

TEST(CubicTest, AckClockedGrowthFollowsTheCurve) {
  // A larger window, so that the curve (not Reno) governs at a 100 ms RTT:
  // W_max = 288 segments, K = cbrt(288 * 0.3 / 0.4) = 6 s, while Reno
  // would need 0.3 * 288 / 0.529 = 163 RTTs (16 s) to get back.
  Cubic cc(kMds, false);
  const RttEstimator rtt(100 * kMs);
  for (int i = 0; i < 278; ++i) ack(cc, 100 * kMs, 0, rtt);
  ASSERT_EQ(cc.congestion_window(), 345600u);
  cc.on_congestion_event(1000 * kMs, 500 * kMs);
  const Instant epoch = 2000 * kMs;
  ack(cc, epoch, 1500 * kMs, rtt);
  ASSERT_NEAR(cc.k_seconds(), 6.0, 1e-9);
  // Acknowledge a window's worth of packets every RTT, spread over it.
  // Closing the gap toward W_cubic(t + RTT) each RTT keeps the window close
  // to W_cubic(t): through the concave region, the plateau at K, and into
  // the convex region.
  Instant now = epoch;
  uint32_t checked = 0;
  for (int round = 1; round <= 90; ++round) {
    const uint64_t packets = cc.congestion_window() / kMds;
    for (uint64_t i = 0; i < packets; ++i) {
      now = epoch + round * 100 * kMs + i * 100 * kMs / packets;
      ack(cc, now, now - 100 * kMs, rtt);
      ASSERT_GT(cc.w_cubic(now - epoch), static_cast<double>(cc.w_est()));
    }
    if (round % 10 == 0) {
      const double t = static_cast<double>(now - epoch) / 1e9;
      const double expected = 1200 * w_cubic_segments(t, 6.0, 288.0);
      EXPECT_NEAR(static_cast<double>(cc.congestion_window()), expected, 0.01 * expected)
          << "t=" << t;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9u);
}

TEST_F(CubicCurveTest, RenoFriendlyRegion) {
  lose_and_start_epoch();
  // With a very short RTT a window is acknowledged in no time, so Reno's
  // W_est (alpha = 9/17 segment per window) outgrows the flat curve near
  // t = 0 and the window follows W_est.
  RttEstimator short_rtt(1 * kMs);
  Instant now = kEpochStart;
  uint64_t previous_est = cc_.w_est();
  // §4.3 alpha_cubic = 3 * (1 - 0.7) / (1 + 0.7) = 0.529 segments per
  // window while W_est < cwnd_prior (43200).
  for (int window = 0; window < 10; ++window) {
    const uint64_t bytes = cc_.congestion_window();
    for (uint64_t acked = 0; acked < bytes; acked += kMds) {
      now += 1000;  // 1 us per ACK
      ack(cc_, now, now - 1 * kMs, short_rtt);
      EXPECT_EQ(cc_.congestion_window(), cc_.w_est());
      EXPECT_LT(cc_.w_cubic(now - kEpochStart), static_cast<double>(cc_.w_est()));
    }
    const uint64_t growth = cc_.w_est() - previous_est;
    EXPECT_NEAR(static_cast<double>(growth), 9.0 / 17.0 * 1200, 30) << window;
    previous_est = cc_.w_est();
  }
  // Once W_est reaches cwnd_prior, alpha = 1: one segment per window.
  while (cc_.w_est() < cc_.cwnd_prior()) {
    now += 1000;
    ack(cc_, now, now - 1 * kMs, short_rtt);
  }
  previous_est = cc_.w_est();
  for (int window = 0; window < 3; ++window) {
    const uint64_t bytes = cc_.congestion_window();
    for (uint64_t acked = 0; acked < bytes; acked += kMds) {
      now += 1000;
      ack(cc_, now, now - 1 * kMs, short_rtt);
    }
    EXPECT_NEAR(static_cast<double>(cc_.w_est() - previous_est), 1200, 40) << window;
    previous_est = cc_.w_est();
  }
  EXPECT_EQ(cc_.congestion_window(), cc_.w_est());
}

TEST_F(CubicCurveTest, RenoEstimateStepIsAlphaTimesSegmentsOverCwnd) {
  lose_and_start_epoch();
  // W_est grows by 9/17 * acked * mds / cwnd with the fraction carried:
  // after the first ACK 108000 / (17 * 30240) of a byte was left over.
  // Second ACK (cwnd 30265): (108000 + 12960000) / (17 * 30265) = 25.39.
  ack(cc_, kEpochStart, kLossTime + 2, rtt_);
  EXPECT_EQ(cc_.w_est(), 30290u);
}

TEST_F(CubicCurveTest, FastConvergenceLowersWMaxBelowPreviousPlateau) {
  lose_and_start_epoch();
  // Grow a little (still below W_max = 43200), then lose again.
  for (int i = 1; i <= 30; ++i) ack(cc_, kEpochStart + 1 * kSecond, kLossTime + 1, rtt_);
  const uint64_t cwnd = cc_.congestion_window();
  ASSERT_LT(cwnd, 43200u);
  cc_.on_congestion_event(kEpochStart + 2 * kSecond, kEpochStart + 1 * kSecond);
  // §4.7: W_max = cwnd * (1 + 0.7) / 2.
  EXPECT_NEAR(cc_.w_max(), static_cast<double>(cwnd) * 0.85, 1e-6);
  EXPECT_EQ(cc_.cwnd_prior(), cwnd);
  EXPECT_EQ(cc_.slow_start_threshold(), cwnd * 7 / 10);
  EXPECT_EQ(cc_.congestion_window(), cwnd * 7 / 10);
  // The next epoch's K uses the lowered W_max.
  ack(cc_, kEpochStart + 3 * kSecond, kEpochStart + 2 * kSecond + 1, rtt_);
  const double k_segments = (static_cast<double>(cwnd) * 0.85 - cwnd * 7 / 10) / 1200 / 0.4;
  EXPECT_NEAR(cc_.k_seconds(), std::cbrt(k_segments), 1e-9);
}

TEST_F(CubicCurveTest, NoFastConvergenceAbovePreviousPlateau) {
  lose_and_start_epoch();
  // Past K the curve is convex; grow beyond W_max, then lose.
  Instant now = kEpochStart + 6 * kSecond;
  while (cc_.congestion_window() <= 43200) ack(cc_, now, kLossTime + 1, rtt_);
  const uint64_t cwnd = cc_.congestion_window();
  cc_.on_congestion_event(now, now - 1);
  EXPECT_DOUBLE_EQ(cc_.w_max(), static_cast<double>(cwnd));
  EXPECT_EQ(cc_.slow_start_threshold(), cwnd * 7 / 10);
}

TEST_F(CubicCurveTest, RecoveryPeriod) {
  cc_.on_congestion_event(kLossTime, 500 * kMs);
  ASSERT_EQ(cc_.congestion_window(), 30240u);
  // Loss and ACK of packets sent before recovery began: nothing changes.
  cc_.on_congestion_event(kLossTime + 50 * kMs, kLossTime);
  ack(cc_, kLossTime + 60 * kMs, kLossTime - 1, rtt_);
  EXPECT_EQ(cc_.congestion_window(), 30240u);
  EXPECT_EQ(cc_.slow_start_threshold(), 30240u);
  EXPECT_FALSE(cc_.epoch_started());
  EXPECT_TRUE(cc_.in_recovery(kLossTime));
  EXPECT_FALSE(cc_.in_recovery(kLossTime + 1));
  // A later packet's loss is a new event: 30240 * 0.7 = 21168, and fast
  // convergence (30240 < 43200) lowers W_max to 25704.
  cc_.on_congestion_event(kLossTime + 200 * kMs, kLossTime + 1);
  EXPECT_EQ(cc_.congestion_window(), 21168u);
  EXPECT_NEAR(cc_.w_max(), 25704.0, 1e-6);
}

TEST_F(CubicCurveTest, AppLimitedAcksDoNotGrowOrStartTheEpoch) {
  cc_.on_congestion_event(kLossTime, 500 * kMs);
  ack(cc_, kEpochStart, kLossTime + 1, rtt_, kMds, /*app_limited=*/true);
  EXPECT_EQ(cc_.congestion_window(), 30240u);
  EXPECT_FALSE(cc_.epoch_started());
}

TEST_F(CubicCurveTest, PersistentCongestionRestartsTheCurveAtItsInflection) {
  cc_.on_congestion_event(kLossTime, 500 * kMs);  // ssthresh 30240
  cc_.on_persistent_congestion(kLossTime);
  EXPECT_EQ(cc_.congestion_window(), 2 * kMds);
  EXPECT_EQ(cc_.slow_start_threshold(), 30240u);
  EXPECT_FALSE(cc_.in_recovery(500 * kMs));
  EXPECT_TRUE(cc_.in_slow_start());
  // Slow start to ssthresh: 23 packets reach 30000, the 24th adds 240 and
  // its other 960 bytes start congestion avoidance.
  for (int i = 0; i < 23; ++i) ack(cc_, kEpochStart, kLossTime + 1, rtt_);
  EXPECT_EQ(cc_.congestion_window(), 30000u);
  EXPECT_FALSE(cc_.epoch_started());
  ack(cc_, kEpochStart, kLossTime + 1, rtt_);
  ASSERT_TRUE(cc_.epoch_started());
  // §4.8: K = 0 and W_max = the window at the start of the epoch.
  EXPECT_EQ(cc_.cwnd_epoch(), 30240u);
  EXPECT_DOUBLE_EQ(cc_.w_max(), 30240.0);
  EXPECT_EQ(cc_.k_seconds(), 0.0);
  EXPECT_NEAR(cc_.w_cubic(1 * kSecond), 30240 + 0.4 * 1200, 1e-6);
  EXPECT_NEAR(cc_.w_cubic(2 * kSecond), 30240 + 0.4 * 8 * 1200, 1e-6);
  // A new loss after persistent congestion is a new event.
  cc_.on_congestion_event(kEpochStart + 1, 500 * kMs);
  EXPECT_LT(cc_.congestion_window(), 30240u);
}

TEST_F(CubicCurveTest, PersistentCongestionMinimumWindowForSeveralSizes) {
  for (uint64_t mds : {1200u, 1252u, 1472u, 9000u}) {
    Cubic cc(mds);
    cc.on_congestion_event(100 * kMs, 50 * kMs);
    cc.on_persistent_congestion(100 * kMs);
    EXPECT_EQ(cc.congestion_window(), 2 * mds) << mds;
  }
}

TEST_F(CubicCurveTest, IdleTimeIsNotTimeOnTheCurve) {
  lose_and_start_epoch();
  // A send with other packets in flight leaves the epoch alone.
  cc_.on_packet_sent(kEpochStart + 500 * kMs, 100, kMds, 5 * kMds);
  EXPECT_EQ(cc_.epoch_start(), kEpochStart);
  // The next send finds nothing else in flight after 2 s of silence: the
  // epoch moves forward by those 2 s.
  cc_.on_packet_sent(kEpochStart + 2500 * kMs, 101, kMds, kMds);
  EXPECT_EQ(cc_.epoch_start(), kEpochStart + 2 * kSecond);
}

// ACK frames for the HyStart++ integration: each acknowledges one packet.
void ack_frame(Cubic& cc, Instant now, Instant time_sent) {
  static const RttEstimator rtt(50 * kMs);
  ack(cc, now, time_sent, rtt);
  cc.on_ack_processed(now, rtt, 0);
}

// A round of 8 ACK frames starting at `start`, each measuring `rtt_sample`;
// the first ends the previous round (its packet was sent after that
// round's start), the rest acknowledge packets sent before `start`.
void hystart_round(Cubic& cc, Instant start, Duration rtt_sample) {
  for (Duration k = 0; k < 8; ++k) {
    const Instant now = start + k * kMs;
    ack_frame(cc, now, now - rtt_sample);
  }
}

TEST(CubicHyStartTest, SlowStartThroughCssToCongestionAvoidance) {
  Cubic cc(kMds);
  // Rounds 1 and 2 at 40 ms: standard slow start, +1200 per packet.
  hystart_round(cc, 100 * kMs, 40 * kMs);
  hystart_round(cc, 200 * kMs, 40 * kMs);
  EXPECT_EQ(cc.congestion_window(), 12000u + 16 * 1200);
  EXPECT_FALSE(cc.hystart().in_css());
  // Round 3 at 50 ms (>= 40 + 5): the 8th sample enters CSS (its own
  // packet still grew the window at the full rate).
  hystart_round(cc, 300 * kMs, 50 * kMs);
  EXPECT_TRUE(cc.hystart().in_css());
  EXPECT_EQ(cc.congestion_window(), 40800u);
  EXPECT_TRUE(cc.in_slow_start());
  // CSS rounds 4..7: +300 per 1200-byte packet.
  for (int round = 4; round <= 7; ++round) {
    hystart_round(cc, round * 100 * kMs, 50 * kMs);
    EXPECT_TRUE(cc.in_slow_start()) << round;
  }
  EXPECT_EQ(cc.congestion_window(), 40800u + 32 * 300);
  // The ACK that ends the fifth CSS round: ssthresh = cwnd.
  ack_frame(cc, 800 * kMs, 750 * kMs);
  EXPECT_EQ(cc.congestion_window(), 50700u);
  EXPECT_EQ(cc.slow_start_threshold(), 50700u);
  EXPECT_FALSE(cc.in_slow_start());
  EXPECT_FALSE(cc.hystart_active());
  // Congestion avoidance without a loss: W_max = cwnd_epoch, K = 0
  // (RFC 9438 §4.10).
  ack_frame(cc, 801 * kMs, 760 * kMs);
  ASSERT_TRUE(cc.epoch_started());
  EXPECT_DOUBLE_EQ(cc.w_max(), 50700.0);
  EXPECT_EQ(cc.k_seconds(), 0.0);
}

TEST(CubicHyStartTest, RttDropInCssResumesFullSlowStart) {
  Cubic cc(kMds);
  hystart_round(cc, 100 * kMs, 40 * kMs);
  hystart_round(cc, 200 * kMs, 40 * kMs);
  hystart_round(cc, 300 * kMs, 50 * kMs);
  ASSERT_TRUE(cc.hystart().in_css());
  const uint64_t before = cc.congestion_window();
  hystart_round(cc, 400 * kMs, 42 * kMs);  // below the 50 ms baseline
  EXPECT_FALSE(cc.hystart().in_css());
  // Seven ACKs in CSS (+300), the 8th resumed slow start after its growth.
  EXPECT_EQ(cc.congestion_window(), before + 8 * 300);
  ack_frame(cc, 450 * kMs, 400 * kMs - 1);
  EXPECT_EQ(cc.congestion_window(), before + 8 * 300 + 1200);
}

TEST(CubicHyStartTest, OnlyInTheFirstSlowStart) {
  Cubic cc(kMds);
  cc.on_congestion_event(100 * kMs, 50 * kMs);
  EXPECT_FALSE(cc.hystart_active());
  cc.on_persistent_congestion(200 * kMs);
  EXPECT_TRUE(cc.in_slow_start());
  EXPECT_FALSE(cc.hystart_active());
  const uint64_t rounds = cc.hystart().rounds();
  // Standard slow start to ssthresh (8400): five ACKs; then avoidance.
  hystart_round(cc, 300 * kMs, 40 * kMs);
  EXPECT_EQ(cc.hystart().rounds(), rounds);
  EXPECT_FALSE(cc.in_slow_start());
  EXPECT_GT(cc.congestion_window(), 8400u);
}

}  // namespace
}  // namespace dpquic::recovery
