// Delivery rate sampling (draft-ietf-ccwg-bbr §4.1): samples from exact
// send and ACK schedules, app-limited marking, loss snapshots, and the
// snapshot ring's growth and bound.
#include "quic/recovery/delivery_rate.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace dpquic::recovery {
namespace {

constexpr uint64_t kSize = 1000;
constexpr Instant kStart = 1000 * kSecond;

// Sends `count` packets from `first`, `gap` apart, from an empty pipe.
Instant send_train(DeliveryRateSampler& s, uint64_t first, uint64_t count, Instant at, Duration gap,
                   uint64_t in_flight_before = 0) {
  for (uint64_t i = 0; i < count; ++i) {
    s.on_packet_sent(at, true, first + i, kSize, in_flight_before + (i + 1) * kSize);
    at += gap;
  }
  return at;
}

TEST(DeliveryRateTest, AckClockedTrainGivesTheBottleneckRate) {
  DeliveryRateSampler s;
  // 10 packets sent at once; ACKs come back 1 ms apart after 50 ms: the
  // bottleneck delivers 1000 bytes per ms = 1 MB/s.
  send_train(s, 0, 10, kStart, 0);
  const RateSample* last = nullptr;
  for (uint64_t i = 0; i < 10; ++i) {
    s.begin_ack();
    s.on_packet_acked(kStart + 50 * kMillisecond + i * kMillisecond, true, i, kStart, kSize);
    last = &s.end_ack(0);
  }
  // The last ACK: 10 packets delivered since the first packet was sent...
  EXPECT_EQ(last->delivered, 10 * kSize);
  // ...over the longer of send (0) and ACK intervals (59 ms since the pipe
  // was empty at send time: delivered_time was the send time).
  EXPECT_EQ(last->interval, 59 * kMillisecond);
  EXPECT_NEAR(last->delivery_rate, 10.0 * kSize / 0.059, 1.0);
  EXPECT_EQ(last->tx_in_flight, 10 * kSize);
  EXPECT_EQ(last->rtt, 59 * kMillisecond);
  EXPECT_EQ(s.delivered(), 10 * kSize);
}

TEST(DeliveryRateTest, SteadyFlowMeasuresTheAckRate) {
  DeliveryRateSampler s;
  // A flow pacing 1 packet per ms with a 20 ms RTT: each ACK's sample spans
  // one RTT of deliveries at 1 packet per ms.
  const Duration rtt = 20 * kMillisecond;
  Instant now = kStart;
  uint64_t next_pn = 0, acked = 0;
  const RateSample* sample = nullptr;
  for (int step = 0; step < 200; ++step, now += kMillisecond) {
    const uint64_t in_flight = (next_pn - acked) * kSize;
    s.on_packet_sent(now, true, next_pn++, kSize, in_flight + kSize);
    if (now >= kStart + rtt) {
      s.begin_ack();
      s.on_packet_acked(now, true, acked, now - rtt, kSize);
      ++acked;
      sample = &s.end_ack(rtt);
    }
  }
  ASSERT_NE(sample, nullptr);
  EXPECT_NEAR(sample->delivery_rate, 1e6, 1e6 * 0.06);  // 1000 bytes per ms
  EXPECT_FALSE(sample->is_app_limited);
}

TEST(DeliveryRateTest, IntervalBelowMinRttGivesNoRate) {
  DeliveryRateSampler s;
  send_train(s, 0, 2, kStart, 0);
  s.begin_ack();
  s.on_packet_acked(kStart + 5 * kMillisecond, true, 0, kStart, kSize);
  const RateSample& sample = s.end_ack(10 * kMillisecond);
  EXPECT_TRUE(sample.has_data);
  EXPECT_EQ(sample.delivery_rate, 0);
}

TEST(DeliveryRateTest, AppLimitedBubbleMarksSamplesUntilDelivered) {
  DeliveryRateSampler s;
  send_train(s, 0, 2, kStart, 0);
  s.mark_app_limited(2 * kSize);  // ran out of data with 2 packets in flight
  EXPECT_EQ(s.app_limited(), 2 * kSize);
  s.on_packet_sent(kStart + kMillisecond, true, 2, kSize, 3 * kSize);
  for (uint64_t pn = 0; pn < 3; ++pn) {
    s.begin_ack();
    s.on_packet_acked(kStart + (30 + pn) * kMillisecond, true, pn,
                      pn < 2 ? kStart : kStart + kMillisecond, kSize);
    const RateSample& sample = s.end_ack(0);
    // Packets sent before the marking are not app-limited; the one sent
    // after is, and delivering past the bubble clears the mark.
    EXPECT_EQ(sample.is_app_limited, pn == 2) << pn;
  }
  EXPECT_FALSE(s.is_app_limited());
}

TEST(DeliveryRateTest, LostPacketSnapshotCountsLossesSinceItsSend) {
  DeliveryRateSampler s;
  send_train(s, 0, 4, kStart, kMillisecond);
  LostPacketSnapshot p;
  ASSERT_TRUE(s.on_packet_lost(true, 1, kSize, p));
  EXPECT_EQ(p.tx_in_flight, 2 * kSize);
  EXPECT_EQ(p.lost_since_send, kSize);
  ASSERT_TRUE(s.on_packet_lost(true, 0, kSize, p));
  EXPECT_EQ(p.tx_in_flight, kSize);
  EXPECT_EQ(p.lost_since_send, 2 * kSize);            // packet 1 was lost after 0's send
  EXPECT_FALSE(s.on_packet_lost(true, 0, kSize, p));  // no snapshot twice
  EXPECT_EQ(s.lost(), 3 * kSize);
  // Handshake packets count but have no snapshot.
  EXPECT_FALSE(s.on_packet_lost(false, 2, kSize, p));
}

TEST(DeliveryRateTest, RingGrowsUnderAFlightAndIsBounded) {
  DeliveryRateSampler s;
  // 1000 packets in flight at once: the ring doubles past 64 to 1024, and
  // every packet keeps its snapshot.
  send_train(s, 0, 1000, kStart, 0);
  EXPECT_EQ(s.slots(), 1024u);
  EXPECT_EQ(s.unsampled(), 0u);
  LostPacketSnapshot p;
  EXPECT_TRUE(s.on_packet_lost(true, 0, kSize, p));
  EXPECT_TRUE(s.on_packet_lost(true, 999, kSize, p));
  // Once the flight is acknowledged, later packets reuse the ring.
  for (uint64_t pn = 1; pn < 999; ++pn) {
    s.begin_ack();
    s.on_packet_acked(kStart + kSecond, true, pn, kStart, kSize);
    s.end_ack(0);
  }
  send_train(s, 1000, 5000, kStart + kSecond, 0);
  EXPECT_EQ(s.slots(), 8192u);
}

// A peer that never acknowledges cannot grow the ring past kMaxSlots (the
// sent-packet ring's own bound): later packets go unsampled.
TEST(DeliveryRateTest, RingStopsAtItsBound) {
  DeliveryRateSampler s;
  const uint64_t count = DeliveryRateSampler::kMaxSlots + 100;
  send_train(s, 0, count, kStart, 0);
  EXPECT_EQ(s.slots(), DeliveryRateSampler::kMaxSlots);
  EXPECT_EQ(s.unsampled(), 100u);
  LostPacketSnapshot p;
  EXPECT_TRUE(s.on_packet_lost(true, DeliveryRateSampler::kMaxSlots - 1, kSize, p));
  EXPECT_FALSE(s.on_packet_lost(true, DeliveryRateSampler::kMaxSlots, kSize, p));
}

TEST(DeliveryRateTest, DiscardedPacketFreesItsSlot) {
  DeliveryRateSampler s;
  send_train(s, 0, 64, kStart, 0);
  for (uint64_t pn = 0; pn < 64; ++pn) s.on_packet_discarded(true, pn);
  send_train(s, 64, 64, kStart + kMillisecond, 0);
  EXPECT_EQ(s.slots(), 64u);  // no growth: the discarded ones left room
}

}  // namespace
}  // namespace dpquic::recovery
