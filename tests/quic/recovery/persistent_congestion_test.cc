// Persistent congestion (RFC 9002 §7.6): the detector on its own, then whole
// scenarios through LossDetection, after the RFC's §7.6.3 example. The
// timeline: packet 0 at 0 is acknowledged at 10 ms (first RTT sample: srtt
// 10 ms, rttvar 5 ms), packets 1..7 follow 20 ms apart, packet 8 is a probe
// at 200 ms and packet 9 one at 300 ms; only 9 is acknowledged, at 310 ms.
// That sample (10 ms) leaves srtt 10 ms and rttvar 3.75 ms, so the duration
// is (10 + 4 * 3.75 + 25) * 3 = 150 ms; 1..8 are lost, sent 180 ms apart.
#include "quic/recovery/persistent_congestion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "quic/recovery/loss_detection.h"
#include "quic/recovery/new_reno.h"
#include "tests/quic/recovery/loss_detection_test_util.h"

namespace dpquic::recovery {
namespace {

using namespace ::dpquic::recovery::testing;  // NOLINT: test vocabulary
using ::testing::ElementsAre;
using wire::WireError;

TEST(PersistentCongestionDurationTest, IncludesMaxAckDelayTimesThree) {
  RttEstimator rtt;
  rtt.on_sample(ms(10), 0, false, ms(25));
  EXPECT_EQ(persistent_congestion_duration(rtt, ms(25)), ms(165));  // (10 + 20 + 25) * 3
  rtt.on_sample(ms(10), 0, false, ms(25));
  EXPECT_EQ(persistent_congestion_duration(rtt, ms(25)), ms(150));  // (10 + 15 + 25) * 3
  RttEstimator tiny;
  tiny.on_sample(us(100), 0, false, 0);
  EXPECT_EQ(persistent_congestion_duration(tiny, 0), us(3300));  // kGranularity floor
}

TEST(PersistentCongestionDetectorTest, NeedsTwoAckElicitingLossesMoreThanTheDurationApart) {
  PersistentCongestionDetector exactly(ms(150), ms(10));
  exactly.on_lost(true, data_packet(ms(20)));
  exactly.on_lost(true, data_packet(ms(170)));  // 150 ms: not more
  EXPECT_FALSE(exactly.established());

  PersistentCongestionDetector more(ms(150), ms(10));
  more.on_lost(true, data_packet(ms(20)));
  more.on_lost(true, ack_only_packet(ms(100)));  // lost too: the run goes on
  more.on_lost(true, data_packet(ms(170) + 1));
  EXPECT_TRUE(more.established());
}

TEST(PersistentCongestionDetectorTest, AnAcknowledgedPacketInBetweenRestartsTheRun) {
  PersistentCongestionDetector detector(ms(150), ms(10));
  detector.on_lost(true, data_packet(ms(20)));
  detector.on_lost(false, data_packet(ms(100)));
  detector.on_lost(true, data_packet(ms(200)));
  EXPECT_FALSE(detector.established());
  detector.on_lost(true, data_packet(ms(251)));
  EXPECT_TRUE(detector.established());
}

TEST(PersistentCongestionDetectorTest, NeedsAnRttSampleBeforeTheFirstPacket) {
  PersistentCongestionDetector none(ms(150), std::nullopt);
  none.on_lost(true, data_packet(ms(20)));
  none.on_lost(true, data_packet(ms(500)));
  EXPECT_FALSE(none.established());

  PersistentCongestionDetector late(ms(150), ms(20));
  late.on_lost(true, data_packet(ms(20)));  // sent at the sample: does not count
  late.on_lost(true, data_packet(ms(30)));
  late.on_lost(true, data_packet(ms(180)));
  EXPECT_FALSE(late.established());
  late.on_lost(true, data_packet(ms(181)));
  EXPECT_TRUE(late.established());
}

// Sends packet 0 and takes the first RTT sample, then sends `later` (packet
// number, send time, ack-eliciting) and acknowledges `ack` at 310 ms.
struct Scenario {
  explicit Scenario(CongestionController& cc_in)
      : loss(Harness::server(), pool, xor_buffer, cc_in) {
    loss.on_handshake_confirmed(0);
    EXPECT_TRUE(loss.on_packet_sent(0, kApplication, 0, data_packet(0)));
    EXPECT_EQ(loss.on_ack_received(ms(10), kApplication, TestAck({{0, 0}}).frame(), false, events),
              WireError::kOk);
  }

  void send(uint64_t pn, Instant time, bool ack_eliciting = true) {
    EXPECT_TRUE(loss.on_packet_sent(time, kApplication, pn,
                                    ack_eliciting ? data_packet(time) : ack_only_packet(time)));
  }
  // The RFC example's sends, with packet 8's send time given.
  void send_rfc_timeline(Instant packet_8_time) {
    for (uint64_t pn = 1; pn <= 7; ++pn) send(pn, ms(20) * pn);
    send(8, packet_8_time);
    send(9, ms(300));
  }

  SentPacketPool pool;
  AckXorBuffer xor_buffer;
  RecordingEvents events;
  LossDetection loss;
};

Calls persistent_calls(Instant packet_8_time, bool persistent, uint64_t bif = 10800) {
  Calls calls = {"congestion now=310000000 sent=" + std::to_string(packet_8_time)};
  if (persistent) calls.push_back("persistent now=310000000");
  calls.push_back("acked now=310000000 pn=9 sent=300000000 size=1200 srtt=10000000 bif=" +
                  std::to_string(bif) + " app_limited=0");
  calls.push_back("ack_processed now=310000000");
  return calls;
}

TEST(PersistentCongestionTest, RfcExampleEstablishesIt) {
  RecordingCongestionController cc;
  Scenario s(cc);
  s.send_rfc_timeline(ms(200));
  cc.calls.clear();
  ASSERT_EQ(
      s.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, s.events),
      WireError::kOk);
  EXPECT_EQ(s.loss.rtt().rttvar(), us(3750));
  EXPECT_EQ(s.events.lost_in(kApplication), (Pns{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(cc.calls, persistent_calls(ms(200), true));
}

TEST(PersistentCongestionTest, ExactlyTheDurationIsNotEnough) {
  RecordingCongestionController cc;
  Scenario s(cc);
  s.send_rfc_timeline(ms(170));
  cc.calls.clear();
  ASSERT_EQ(
      s.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, s.events),
      WireError::kOk);
  EXPECT_EQ(s.events.lost_in(kApplication), (Pns{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(cc.calls, persistent_calls(ms(170), false));

  RecordingCongestionController cc_more;
  Scenario more(cc_more);
  more.send_rfc_timeline(ms(170) + 1);
  cc_more.calls.clear();
  ASSERT_EQ(more.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false,
                                      more.events),
            WireError::kOk);
  EXPECT_EQ(cc_more.calls, persistent_calls(ms(170) + 1, true));
}

TEST(PersistentCongestionTest, AnAcknowledgedPacketBetweenPreventsIt) {
  RecordingCongestionController cc;
  Scenario s(cc);
  s.send_rfc_timeline(ms(200));
  cc.calls.clear();
  // Packet 4 arrived: the runs 1..3 (20-60 ms) and 5..8 (100-200 ms) are
  // each shorter than 150 ms.
  ASSERT_EQ(s.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}, {4, 4}}).frame(), false,
                                   s.events),
            WireError::kOk);
  EXPECT_EQ(s.events.lost_in(kApplication), (Pns{1, 2, 3, 5, 6, 7, 8}));
  EXPECT_EQ(cc.calls[0], "congestion now=310000000 sent=200000000");
  EXPECT_EQ(cc.calls[1].rfind("acked now=310000000 pn=4 ", 0), 0u);
}

TEST(PersistentCongestionTest, ASkippedPacketNumberDoesNotBreakTheRun) {
  RecordingCongestionController cc;
  Scenario s(cc);
  for (uint64_t pn = 1; pn <= 4; ++pn) s.send(pn, ms(20) * pn);
  for (uint64_t pn = 6; pn <= 7; ++pn) s.send(pn, ms(20) * pn);  // 5 never sent
  s.send(8, ms(200));
  s.send(9, ms(300));
  cc.calls.clear();
  ASSERT_EQ(
      s.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, s.events),
      WireError::kOk);
  EXPECT_EQ(s.events.lost_in(kApplication), (Pns{1, 2, 3, 4, 6, 7, 8}));
  EXPECT_EQ(cc.calls[1], "persistent now=310000000");
}

TEST(PersistentCongestionTest, PacketsSentBeforeTheFirstSampleDoNotCount) {
  RecordingCongestionController cc;
  SentPacketPool pool;
  AckXorBuffer xor_buffer;
  RecordingEvents events;
  LossDetection loss(Harness::server(), pool, xor_buffer, cc);
  loss.on_handshake_confirmed(0);
  ASSERT_TRUE(loss.on_packet_sent(0, kApplication, 0, data_packet(0)));
  ASSERT_TRUE(loss.on_packet_sent(ms(5), kApplication, 1, data_packet(ms(5))));
  ASSERT_EQ(loss.on_ack_received(ms(10), kApplication, TestAck({{0, 0}}).frame(), false, events),
            WireError::kOk);
  EXPECT_EQ(loss.first_rtt_sample(), ms(10));
  // Packet 1 (5 ms) to packet 8 (160 ms) would be 155 ms; from packet 2
  // (20 ms) it is 140 ms.
  for (uint64_t pn = 2; pn <= 7; ++pn) {
    ASSERT_TRUE(
        loss.on_packet_sent(ms(20) * (pn - 1), kApplication, pn, data_packet(ms(20) * (pn - 1))));
  }
  ASSERT_TRUE(loss.on_packet_sent(ms(160), kApplication, 8, data_packet(ms(160))));
  ASSERT_TRUE(loss.on_packet_sent(ms(300), kApplication, 9, data_packet(ms(300))));
  cc.calls.clear();
  ASSERT_EQ(loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, events),
            WireError::kOk);
  EXPECT_EQ(events.lost_in(kApplication), (Pns{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THAT(cc.calls, ElementsAre("congestion now=310000000 sent=160000000",
                                    ::testing::StartsWith("acked now=310000000 pn=9 "),
                                    "ack_processed now=310000000"));
}

TEST(PersistentCongestionTest, TheFirstLossMustBeAckEliciting) {
  RecordingCongestionController cc;
  Scenario s(cc);
  s.send(1, ms(20), /*ack_eliciting=*/false);  // e.g. an ACK-only packet
  for (uint64_t pn = 2; pn <= 7; ++pn) s.send(pn, ms(20) * pn);
  s.send(8, ms(180));  // 160 ms after packet 1, 140 after packet 2
  s.send(9, ms(300));
  cc.calls.clear();
  ASSERT_EQ(
      s.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, s.events),
      WireError::kOk);
  EXPECT_EQ(s.events.lost_in(kApplication), (Pns{1, 2, 3, 4, 5, 6, 7, 8}));
  // Packet 1 is not in flight: 8 packets of 1200 bytes were.
  EXPECT_EQ(cc.calls, persistent_calls(ms(180), false, 9600));
}

TEST(PersistentCongestionTest, NoRttSampleNoPersistentCongestion) {
  RecordingCongestionController cc;
  SentPacketPool pool;
  AckXorBuffer xor_buffer;
  RecordingEvents events;
  LossDetection loss(Harness::server(), pool, xor_buffer, cc);
  loss.on_handshake_confirmed(0);
  for (uint64_t pn = 0; pn <= 8; ++pn) {
    ASSERT_TRUE(loss.on_packet_sent(ms(20) * pn, kApplication, pn, data_packet(ms(20) * pn)));
  }
  ASSERT_TRUE(loss.on_packet_sent(ms(300), kApplication, 9, ack_only_packet(ms(300))));
  // Only the ACK-only packet is newly acknowledged: no RTT sample, so the
  // time threshold is 9/8 * 333 ms and only the packet threshold applies.
  ASSERT_EQ(loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, events),
            WireError::kOk);
  EXPECT_FALSE(loss.rtt().has_sample());
  EXPECT_EQ(events.lost_in(kApplication), (Pns{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_THAT(cc.calls, ElementsAre("congestion now=310000000 sent=120000000",
                                    "ack_processed now=310000000"));
}

TEST(PersistentCongestionTest, NewRenoCollapsesToTwoDatagrams) {
  NewReno cc(1200);
  Scenario s(cc);
  EXPECT_EQ(cc.congestion_window(), 13200u);  // 12000 + packet 0 in slow start
  s.send_rfc_timeline(ms(200));
  // Application-limited, so acknowledging packet 9 does not grow the window
  // and what is left is exactly kMinimumWindow.
  s.loss.set_app_limited(true);
  ASSERT_EQ(
      s.loss.on_ack_received(ms(310), kApplication, TestAck({{9, 9}}).frame(), false, s.events),
      WireError::kOk);
  EXPECT_EQ(cc.congestion_window(), 2400u);
  EXPECT_EQ(cc.slow_start_threshold(), 6600u);  // halved from 13200 first
  EXPECT_EQ(s.loss.bytes_in_flight(), 0u);
}

}  // namespace
}  // namespace dpquic::recovery
