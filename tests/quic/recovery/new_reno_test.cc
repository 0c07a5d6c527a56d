// NewReno (RFC 9002 §7, Appendix B): initial window, slow start, congestion
// avoidance, recovery periods, persistent congestion, app-limited ACKs.
#include "quic/recovery/new_reno.h"

#include <gtest/gtest.h>

namespace dpquic::recovery {
namespace {

constexpr uint64_t kMds = 1200;
constexpr Duration kMs = kMillisecond;

// Acknowledges one in-flight packet sent at `time_sent`.
void ack(NewReno& cc, Instant now, Instant time_sent, uint64_t size = kMds,
         bool app_limited = false) {
  static const RttEstimator rtt;
  cc.on_packet_acked(now, AckedPacket{0, time_sent, size}, rtt, cc.congestion_window(),
                     app_limited);
}

TEST(InitialWindowTest, Rfc9002Formula) {
  // min(10 * mds, max(14720, 2 * mds)).
  EXPECT_EQ(initial_window(1200), 12000u);  // 10 * mds
  EXPECT_EQ(initial_window(1252), 12520u);  // 10 * mds
  EXPECT_EQ(initial_window(1472), 14720u);  // both 14720
  EXPECT_EQ(initial_window(1500), 14720u);  // the 14720 cap
  EXPECT_EQ(initial_window(9000), 18000u);  // 2 * mds beats 14720
  EXPECT_EQ(minimum_window(1200), 2400u);
  EXPECT_EQ(minimum_window(9000), 18000u);
  for (uint64_t mds : {1200u, 1252u, 1472u, 9000u}) {
    NewReno cc(mds);
    EXPECT_EQ(cc.congestion_window(), initial_window(mds)) << mds;
    EXPECT_EQ(cc.slow_start_threshold(), UINT64_MAX);
    EXPECT_TRUE(cc.in_slow_start());
    EXPECT_EQ(cc.algorithm(), CongestionControlAlgorithm::kNewReno);
  }
}

TEST(NewRenoTest, SlowStartGrowsByBytesAcked) {
  NewReno cc(kMds);
  ack(cc, 100 * kMs, 0);
  EXPECT_EQ(cc.congestion_window(), 13200u);
  ack(cc, 100 * kMs, 0, 500);  // a short packet counts its own size
  EXPECT_EQ(cc.congestion_window(), 13700u);
  for (int i = 0; i < 10; ++i) ack(cc, 200 * kMs, 1 * kMs);
  EXPECT_EQ(cc.congestion_window(), 25700u);
  EXPECT_TRUE(cc.in_slow_start());
}

TEST(NewRenoTest, AppLimitedAcksDoNotGrowTheWindow) {
  NewReno cc(kMds);
  ack(cc, 100 * kMs, 0, kMds, /*app_limited=*/true);
  EXPECT_EQ(cc.congestion_window(), 12000u);
  cc.on_congestion_event(200 * kMs, 150 * kMs);
  ack(cc, 400 * kMs, 300 * kMs, kMds, /*app_limited=*/true);
  EXPECT_EQ(cc.congestion_window(), 6000u);
}

TEST(NewRenoTest, CongestionEventHalvesAndStartsRecovery) {
  NewReno cc(kMds);
  EXPECT_FALSE(cc.in_recovery(0));
  cc.on_congestion_event(/*now=*/500 * kMs, /*time_sent=*/400 * kMs);
  EXPECT_EQ(cc.slow_start_threshold(), 6000u);
  EXPECT_EQ(cc.congestion_window(), 6000u);
  EXPECT_FALSE(cc.in_slow_start());
  // The recovery period covers packets sent up to and including its start.
  EXPECT_TRUE(cc.in_recovery(0));
  EXPECT_TRUE(cc.in_recovery(500 * kMs));
  EXPECT_FALSE(cc.in_recovery(500 * kMs + 1));
}

TEST(NewRenoTest, NoSecondReductionForPacketsSentBeforeRecoveryStart) {
  NewReno cc(kMds);
  cc.on_congestion_event(500 * kMs, 400 * kMs);
  ASSERT_EQ(cc.congestion_window(), 6000u);
  // More losses and ACKs from the same flight: no change at all.
  cc.on_congestion_event(600 * kMs, 450 * kMs);
  cc.on_congestion_event(700 * kMs, 500 * kMs);  // sent exactly at recovery start
  ack(cc, 700 * kMs, 499 * kMs);
  EXPECT_EQ(cc.congestion_window(), 6000u);
  EXPECT_EQ(cc.slow_start_threshold(), 6000u);
  // A loss of a packet sent after recovery began is a new event.
  cc.on_congestion_event(900 * kMs, 500 * kMs + 1);
  EXPECT_EQ(cc.slow_start_threshold(), 3000u);
  EXPECT_EQ(cc.congestion_window(), 3000u);
  EXPECT_TRUE(cc.in_recovery(900 * kMs));
  EXPECT_FALSE(cc.in_recovery(900 * kMs + 1));
}

TEST(NewRenoTest, WindowNeverBelowMinimum) {
  NewReno cc(kMds);
  Instant now = 0;
  for (int i = 0; i < 5; ++i) {
    now += 100 * kMs;
    cc.on_congestion_event(now, now - 1);
  }
  // 12000 -> 6000 -> 3000 -> 2400 (floor); then ssthresh 1200, cwnd 2400.
  EXPECT_EQ(cc.congestion_window(), 2400u);
  EXPECT_EQ(cc.slow_start_threshold(), 1200u);
}

TEST(NewRenoTest, CongestionAvoidanceAddsOneDatagramPerWindow) {
  NewReno cc(kMds);
  cc.on_congestion_event(100 * kMs, 50 * kMs);
  ASSERT_EQ(cc.congestion_window(), 6000u);
  // Packets sent after recovery start end the recovery period and grow the
  // window: one mds once a whole window (6000 bytes) is acknowledged.
  for (int i = 0; i < 4; ++i) ack(cc, 300 * kMs, 200 * kMs);
  EXPECT_EQ(cc.congestion_window(), 6000u);  // 4800 of 6000 bytes
  ack(cc, 300 * kMs, 200 * kMs);
  EXPECT_EQ(cc.congestion_window(), 7200u);
  // The next increment needs 7200 bytes: six packets.
  for (int i = 0; i < 5; ++i) ack(cc, 400 * kMs, 300 * kMs);
  EXPECT_EQ(cc.congestion_window(), 7200u);
  ack(cc, 400 * kMs, 300 * kMs);
  EXPECT_EQ(cc.congestion_window(), 8400u);
  // Leftover bytes carry over: 7 packets of 1300 = 9100 >= 8400, 700 left.
  for (int i = 0; i < 7; ++i) ack(cc, 500 * kMs, 400 * kMs, 1300);
  EXPECT_EQ(cc.congestion_window(), 9600u);
  // 700 + 7 * 1300 = 9800 >= 9600.
  for (int i = 0; i < 7; ++i) ack(cc, 600 * kMs, 500 * kMs, 1300);
  EXPECT_EQ(cc.congestion_window(), 10800u);
}

TEST(NewRenoTest, PersistentCongestionCollapsesToMinimumWindow) {
  for (uint64_t mds : {1200u, 1252u, 1472u, 9000u}) {
    NewReno cc(mds);
    for (int i = 0; i < 10; ++i) ack(cc, 50 * kMs, 0, mds);
    const uint64_t before = cc.congestion_window();
    cc.on_congestion_event(1000 * kMs, 900 * kMs);
    cc.on_persistent_congestion(1000 * kMs);
    EXPECT_EQ(cc.congestion_window(), 2 * mds) << mds;
    EXPECT_EQ(cc.slow_start_threshold(), before / 2) << mds;
    // §B.8: recovery is over; a later loss, even of an old packet, is a
    // new congestion event.
    EXPECT_FALSE(cc.in_recovery(900 * kMs));
    cc.on_congestion_event(1100 * kMs, 900 * kMs);
    EXPECT_EQ(cc.slow_start_threshold(), mds) << mds;
    EXPECT_EQ(cc.congestion_window(), 2 * mds) << mds;
  }
}

TEST(NewRenoTest, SlowStartAfterPersistentCongestionStopsAtSsthresh) {
  NewReno cc(kMds);
  cc.on_congestion_event(100 * kMs, 50 * kMs);  // ssthresh 6000
  cc.on_persistent_congestion(100 * kMs);
  ASSERT_EQ(cc.congestion_window(), 2400u);
  ASSERT_TRUE(cc.in_slow_start());
  // Packets of 1000 bytes: 3400, 4400, 5400 in slow start, then 600 more to
  // reach ssthresh; the other 400 bytes count toward congestion avoidance.
  for (int i = 0; i < 4; ++i) ack(cc, 300 * kMs, 200 * kMs, 1000);
  EXPECT_EQ(cc.congestion_window(), 6000u);
  EXPECT_FALSE(cc.in_slow_start());
  ack(cc, 300 * kMs, 200 * kMs, 5599);  // 400 + 5599 < 6000
  EXPECT_EQ(cc.congestion_window(), 6000u);
  ack(cc, 300 * kMs, 200 * kMs, 1);  // exactly 6000
  EXPECT_EQ(cc.congestion_window(), 7200u);
}

}  // namespace
}  // namespace dpquic::recovery
