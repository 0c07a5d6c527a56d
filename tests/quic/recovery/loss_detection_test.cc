// Loss detection scenarios with RFC 9002's rules and exact numbers: packet
// threshold (§6.1.1), time threshold (§6.1.2), RTT samples (§5), ECN-CE
// (§B.7), discarding a space (§A.11), spurious losses, and ACKs naming
// packets never sent (RFC 9000 §13.1).
#include "quic/recovery/loss_detection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/quic/recovery/loss_detection_test_util.h"

namespace dpquic::recovery {
namespace {

using namespace ::dpquic::recovery::testing;  // NOLINT: test vocabulary
using ::testing::ElementsAre;
using wire::WireError;

std::string acked_line(Instant now, uint64_t pn, Instant sent, Duration srtt, uint64_t bif,
                       bool app_limited = false, uint64_t size = 1200) {
  return "acked now=" + std::to_string(now) + " pn=" + std::to_string(pn) +
         " sent=" + std::to_string(sent) + " size=" + std::to_string(size) +
         " srtt=" + std::to_string(srtt) + " bif=" + std::to_string(bif) +
         " app_limited=" + std::to_string(app_limited);
}
std::string congestion_line(Instant now, Instant sent) {
  return "congestion now=" + std::to_string(now) + " sent=" + std::to_string(sent);
}
std::string processed_line(Instant now) { return "ack_processed now=" + std::to_string(now); }
std::string ce_line(Instant now, uint64_t count) {
  return "ce now=" + std::to_string(now) + " count=" + std::to_string(count);
}

TEST(LossDelayTest, NineEighthsOfTheLargerRttWithAGranularityFloor) {
  RttEstimator rtt;
  EXPECT_EQ(loss_delay(rtt), ms(333) + ms(333) / 8);  // before a sample: kInitialRtt
  rtt.on_sample(ms(30), 0, false, ms(25));
  EXPECT_EQ(loss_delay(rtt), us(33750));
  // latest_rtt 10 ms < smoothed_rtt (7 * 30 + 10) / 8 = 27.5 ms: srtt wins.
  rtt.on_sample(ms(10), 0, false, ms(25));
  EXPECT_EQ(rtt.smoothed_rtt(), us(27500));
  EXPECT_EQ(loss_delay(rtt), 30937500u);  // 27.5 ms * 9/8, in ns
  // latest_rtt 100 ms > smoothed_rtt: latest wins.
  rtt.on_sample(ms(100), 0, false, ms(25));
  EXPECT_EQ(loss_delay(rtt), us(112500));

  RttEstimator tiny;
  tiny.on_sample(us(100), 0, false, ms(25));
  EXPECT_EQ(loss_delay(tiny), kGranularity);  // 112.5 us < 1 ms
}

// Five packets, the last acknowledged first: 0 and 1 are 3 or more below it
// (packet threshold), 2 and 3 are not, and are lost later by time.
TEST(LossDetectionTest, PacketThresholdThenTimeThresholdTimer) {
  Harness h(Harness::server());
  h.loss.on_handshake_confirmed(0);
  for (uint64_t pn = 0; pn < 5; ++pn) ASSERT_TRUE(h.send(ms(pn), kApplication, pn));
  EXPECT_EQ(h.loss.bytes_in_flight(), 6000u);

  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{4, 4}})), WireError::kOk);
  // latest_rtt = 100 - 4 = 96 ms: the first sample.
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), ms(96));
  EXPECT_EQ(h.loss.rtt().rttvar(), ms(48));
  EXPECT_EQ(h.loss.first_rtt_sample(), ms(100));
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0, 1}));
  EXPECT_EQ(h.events.acked_in(kApplication), (Pns{4}));
  // Losses are signalled before the acknowledgments (§A.7 order); the acked
  // packet sees bytes in flight from before the ACK.
  EXPECT_THAT(h.cc.calls,
              ElementsAre(congestion_line(ms(100), ms(1)),
                          acked_line(ms(100), 4, ms(4), ms(96), 6000), processed_line(ms(100))));
  EXPECT_EQ(h.loss.bytes_in_flight(), 2400u);
  EXPECT_EQ(h.loss.largest_acked(kApplication), 4u);
  // loss_delay = 96 * 9/8 = 108 ms; packet 2 (sent at 2 ms) is due at 110.
  EXPECT_EQ(h.loss.loss_time(kApplication), ms(110));
  EXPECT_EQ(h.loss.timer(), ms(110));

  h.cc.calls.clear();
  h.events.clear();
  h.timeout(ms(110) - 1);  // early: nothing
  EXPECT_TRUE(h.events.lost_in(kApplication).empty());
  EXPECT_EQ(h.loss.timer(), ms(110));

  h.timeout(ms(110));
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{2}));
  EXPECT_THAT(h.cc.calls, ElementsAre(congestion_line(ms(110), ms(2))));
  EXPECT_EQ(h.loss.timer(), ms(111));
  EXPECT_EQ(h.loss.pto_count(), 0u);  // a time threshold expiry is not a PTO

  h.timeout(ms(111));
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{2, 3}));
  EXPECT_EQ(h.loss.bytes_in_flight(), 0u);
  EXPECT_TRUE(h.loss.sent(kApplication).empty());
  EXPECT_EQ(h.loss.timer(), kNever);  // server, nothing in flight
}

TEST(LossDetectionTest, PacketThresholdIsExactlyThree) {
  Harness h(Harness::server());
  for (uint64_t pn = 0; pn < 4; ++pn) ASSERT_TRUE(h.send(ms(pn), kInitial, pn));
  // 3 >= 0 + 3: packet 0 lost; 3 >= 1 + 3 is false: packet 1 waits.
  ASSERT_EQ(h.ack(ms(50), kInitial, TestAck({{3, 3}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kInitial), (Pns{0}));
  EXPECT_EQ(h.loss.sent(kInitial).size(), 2u);
  // latest_rtt 47 ms, loss_delay 52.875 ms: packet 1 due at 53.875 ms.
  EXPECT_EQ(h.loss.loss_time(kInitial), us(53875));
  EXPECT_EQ(h.loss.timer(), us(53875));
}

TEST(LossDetectionTest, TimeThresholdOnAck) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kHandshake, 0));
  ASSERT_TRUE(h.send(ms(20), kHandshake, 1));
  // latest_rtt 10 ms, loss_delay 11.25 ms: sent before 18.75 ms is lost.
  ASSERT_EQ(h.ack(ms(30), kHandshake, TestAck({{1, 1}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kHandshake), (Pns{0}));
  EXPECT_EQ(h.events.acked_in(kHandshake), (Pns{1}));
  EXPECT_THAT(h.cc.calls,
              ElementsAre(congestion_line(ms(30), 0), acked_line(ms(30), 1, ms(20), ms(10), 2400),
                          processed_line(ms(30))));
  EXPECT_EQ(h.loss.loss_time(kHandshake), kNever);
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(LossDetectionTest, TimeThresholdTimerAtNineEighthsRtt) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kHandshake, 0));
  ASSERT_TRUE(h.send(ms(1), kHandshake, 1));
  ASSERT_EQ(h.ack(ms(31), kHandshake, TestAck({{1, 1}})), WireError::kOk);
  // latest_rtt 30 ms -> loss_delay 33.75 ms after packet 0's send time.
  EXPECT_TRUE(h.events.lost_in(kHandshake).empty());
  EXPECT_EQ(h.loss.timer(), 33750000u);
  h.timeout(33749999);
  EXPECT_TRUE(h.events.lost_in(kHandshake).empty());
  h.timeout(33750000);
  EXPECT_EQ(h.events.lost_in(kHandshake), (Pns{0}));
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(LossDetectionTest, TimeThresholdHasAGranularityFloor) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kHandshake, 0));
  ASSERT_TRUE(h.send(us(100), kHandshake, 1));
  ASSERT_EQ(h.ack(us(200), kHandshake, TestAck({{1, 1}})), WireError::kOk);
  // 9/8 * 100 us = 112.5 us < kGranularity.
  EXPECT_EQ(h.loss.timer(), ms(1));
}

TEST(LossDetectionTest, TimeThresholdUsesTheLargerOfSmoothedAndLatestRtt) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kHandshake, 0));
  ASSERT_EQ(h.ack(ms(80), kHandshake, TestAck({{0, 0}})), WireError::kOk);  // srtt 80
  ASSERT_TRUE(h.send(ms(100), kHandshake, 1));
  ASSERT_TRUE(h.send(ms(110), kHandshake, 2));
  ASSERT_EQ(h.ack(ms(150), kHandshake, TestAck({{2, 2}})), WireError::kOk);
  // latest 40 ms, smoothed (7 * 80 + 40) / 8 = 75 ms -> 84.375 ms.
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), ms(75));
  EXPECT_EQ(h.loss.timer(), ms(100) + us(84375));

  ASSERT_TRUE(h.send(ms(200), kHandshake, 3));
  ASSERT_TRUE(h.send(ms(201), kHandshake, 4));
  ASSERT_EQ(h.ack(ms(401), kHandshake, TestAck({{4, 4}})), WireError::kOk);
  // latest 200 ms > smoothed 90.625 ms -> 225 ms: packet 1 (sent at 100)
  // is past 401 - 225 = 176 ms, packet 3 is due at 425 ms.
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(90625));
  EXPECT_EQ(h.events.lost_in(kHandshake), (Pns{1}));
  EXPECT_EQ(h.loss.timer(), ms(425));
}

TEST(LossDetectionTest, LossesStayInTheirSpace) {
  Harness h(Harness::server());
  for (uint64_t pn = 0; pn < 4; ++pn) ASSERT_TRUE(h.send(ms(pn), kInitial, pn));
  for (uint64_t pn = 0; pn < 4; ++pn) ASSERT_TRUE(h.send(ms(pn), kHandshake, pn));
  ASSERT_EQ(h.ack(ms(40), kHandshake, TestAck({{3, 3}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kHandshake), (Pns{0}));
  EXPECT_TRUE(h.events.lost_in(kInitial).empty());
  EXPECT_EQ(h.loss.sent(kInitial).size(), 4u);
  EXPECT_EQ(h.loss.bytes_in_flight(), 6 * 1200u);
}

TEST(RttSampleTest, AckDelayScaledAndUncappedBeforeConfirmation) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{0, 0}}, 1000)), WireError::kOk);
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), ms(100));  // first sample: no delay
  ASSERT_TRUE(h.send(ms(200), kApplication, 1));
  // Raw 5000 << 3 = 40 ms, not capped at 25 ms yet: adjusted 110 ms.
  ASSERT_EQ(h.ack(ms(350), kApplication, TestAck({{1, 1}}, 5000)), WireError::kOk);
  EXPECT_EQ(h.loss.rtt().latest_rtt(), ms(150));
  EXPECT_EQ(h.loss.rtt().min_rtt(), ms(100));
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(101250));
  EXPECT_EQ(h.loss.rtt().rttvar(), ms(40));
}

TEST(RttSampleTest, AckDelayCappedAtMaxAckDelayAfterConfirmation) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{0, 0}})), WireError::kOk);
  h.loss.on_handshake_confirmed(ms(100));
  ASSERT_TRUE(h.send(ms(200), kApplication, 1));
  ASSERT_EQ(h.ack(ms(350), kApplication, TestAck({{1, 1}}, 5000)), WireError::kOk);
  // min(40, 25) = 25 ms: adjusted 125 ms.
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(103125));
  EXPECT_EQ(h.loss.rtt().rttvar(), us(43750));
}

TEST(RttSampleTest, PeerAckParamsReplaceTheDefaults) {
  Harness h(Harness::server());
  h.loss.set_peer_ack_params(ms(10), 2);
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{0, 0}})), WireError::kOk);
  ASSERT_TRUE(h.send(ms(200), kApplication, 1));
  // Raw 5000 << 2 = 20 ms (before confirmation: not capped at 10 ms).
  ASSERT_EQ(h.ack(ms(350), kApplication, TestAck({{1, 1}}, 5000)), WireError::kOk);
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(103750));  // (700 + 130) / 8
  h.loss.on_handshake_confirmed(ms(350));
  EXPECT_EQ(h.loss.pto_duration(kApplication),
            h.loss.rtt().smoothed_rtt() + 4 * h.loss.rtt().rttvar() + ms(10));
}

TEST(RttSampleTest, AbsurdAckDelayIsNotSubtractedAndDoesNotOverflow) {
  Harness h(Harness::server());
  h.loss.set_peer_ack_params(ms(25), 20);
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{0, 0}})), WireError::kOk);
  ASSERT_TRUE(h.send(ms(200), kApplication, 1));
  // (2^62 - 1) << 20 microseconds saturates; larger than the sample, it is
  // not subtracted: adjusted_rtt = latest_rtt = 150 ms.
  ASSERT_EQ(h.ack(ms(350), kApplication, TestAck({{1, 1}}, (uint64_t{1} << 62) - 1)),
            WireError::kOk);
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(106250));
  EXPECT_EQ(h.loss.rtt().rttvar(), ms(50));
}

TEST(RttSampleTest, InitialAckDelayIsIgnored) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_EQ(h.ack(ms(100), kInitial, TestAck({{0, 0}})), WireError::kOk);
  ASSERT_TRUE(h.send(ms(200), kInitial, 1));
  ASSERT_EQ(h.ack(ms(350), kInitial, TestAck({{1, 1}}, 5000)), WireError::kOk);
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(106250));  // (700 + 150) / 8
  EXPECT_EQ(h.loss.rtt().rttvar(), ms(50));
}

TEST(RttSampleTest, OnlyWhenTheLargestIsNewlyAckedAndAckEliciting) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(ms(8), kApplication, 0));
  ASSERT_TRUE(h.send(ms(10), kApplication, 1));
  // latest_rtt 20 ms; packet 0 (sent after 30 - 22.5 ms) is not lost yet.
  ASSERT_EQ(h.ack(ms(30), kApplication, TestAck({{1, 1}})), WireError::kOk);
  EXPECT_EQ(h.loss.rtt().latest_rtt(), ms(20));
  EXPECT_TRUE(h.events.lost_in(kApplication).empty());
  // Packet 0 newly acknowledged, but the largest (1) is not: no sample.
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{0, 1}})), WireError::kOk);
  EXPECT_EQ(h.events.acked_in(kApplication), (Pns{1, 0}));
  EXPECT_EQ(h.loss.rtt().latest_rtt(), ms(20));
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), ms(20));

  // Only an ACK-only packet newly acknowledged: no sample either.
  Harness only_acks(Harness::server());
  ASSERT_TRUE(only_acks.loss.on_packet_sent(0, kApplication, 0, ack_only_packet(0)));
  ASSERT_EQ(only_acks.ack(ms(30), kApplication, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_EQ(only_acks.events.acked_in(kApplication), (Pns{0}));
  EXPECT_FALSE(only_acks.loss.rtt().has_sample());
  EXPECT_EQ(only_acks.loss.first_rtt_sample(), std::nullopt);
  // Not in flight: congestion control hears only the end of the ACK.
  EXPECT_THAT(only_acks.cc.calls, ElementsAre(processed_line(ms(30))));
}

TEST(EcnTest, CeIncreaseIsACongestionEventForTheLargestAcked) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_TRUE(h.send(ms(10), kApplication, 1));
  ASSERT_EQ(h.ack(ms(50), kApplication, TestAck({{0, 1}}, 0, {2, 0, 0}), true), WireError::kOk);
  EXPECT_THAT(h.cc.calls,
              ElementsAre(acked_line(ms(50), 0, 0, ms(40), 2400),
                          acked_line(ms(50), 1, ms(10), ms(40), 2400), processed_line(ms(50))));
  h.cc.calls.clear();

  ASSERT_TRUE(h.send(ms(60), kApplication, 2));
  ASSERT_TRUE(h.send(ms(70), kApplication, 3));
  h.loss.set_app_limited(true);
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{2, 3}}, 0, {3, 0, 1}), true), WireError::kOk);
  // srtt (7 * 40 + 30) / 8 = 38.75 ms; the event names packet 3's send time,
  // after the count of newly marked packets.
  EXPECT_THAT(h.cc.calls, ElementsAre(ce_line(ms(100), 1), congestion_line(ms(100), ms(70)),
                                      acked_line(ms(100), 2, ms(60), us(38750), 2400, true),
                                      acked_line(ms(100), 3, ms(70), us(38750), 2400, true),
                                      processed_line(ms(100))));
  h.cc.calls.clear();

  // Two more marks at once: their number.
  ASSERT_TRUE(h.send(ms(101), kApplication, 4));
  ASSERT_EQ(h.ack(ms(102), kApplication, TestAck({{4, 4}}, 0, {3, 0, 3}), true), WireError::kOk);
  ASSERT_GE(h.cc.calls.size(), 2u);
  EXPECT_EQ(h.cc.calls[0], ce_line(ms(102), 2));
  h.cc.calls.clear();

  // The same CE count again: nothing new.
  ASSERT_TRUE(h.send(ms(110), kApplication, 5));
  ASSERT_EQ(h.ack(ms(140), kApplication, TestAck({{5, 5}}, 0, {4, 0, 3}), true), WireError::kOk);
  EXPECT_EQ(h.cc.calls.size(), 2u);
  EXPECT_EQ(h.cc.calls[0].rfind("acked ", 0), 0u);
  h.cc.calls.clear();

  // A plain ACK frame carries no counts: its (zero) ecn field is ignored, and
  // CE counts stay per space.
  ASSERT_TRUE(h.send(ms(150), kApplication, 6));
  ASSERT_EQ(h.ack(ms(180), kApplication, TestAck({{6, 6}}, 0, {0, 0, 9}), false), WireError::kOk);
  EXPECT_EQ(h.cc.calls.size(), 2u);
  h.cc.calls.clear();
  ASSERT_TRUE(h.send(ms(190), kHandshake, 0));
  ASSERT_EQ(h.ack(ms(220), kHandshake, TestAck({{0, 0}}, 0, {0, 0, 1}), true), WireError::kOk);
  // Handshake-space marks are a congestion event but not counted for the
  // model (Application space only).
  EXPECT_EQ(h.cc.calls.front(), congestion_line(ms(220), ms(190)));
}

TEST(DiscardSpaceTest, RemovesBytesInFlightWithoutACongestionSignal) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_TRUE(h.send(ms(1), kInitial, 1));
  ASSERT_TRUE(h.send(ms(2), kHandshake, 0));
  EXPECT_EQ(h.loss.bytes_in_flight(), 3600u);
  EXPECT_EQ(h.loss.timer(), ms(1) + ms(999));  // Initial's PTO first
  h.timeout(ms(1000));
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 2u);
  h.cc.calls.clear();

  h.loss.discard_space(ms(1500), kInitial);
  EXPECT_EQ(h.loss.bytes_in_flight(), 1200u);
  EXPECT_TRUE(h.loss.sent(kInitial).empty());
  EXPECT_TRUE(h.cc.calls.empty());
  EXPECT_TRUE(h.events.lost_in(kInitial).empty());
  EXPECT_EQ(h.loss.probes_pending(kInitial), 0u);
  EXPECT_EQ(h.loss.pto_count(), 0u);  // backoff reset
  EXPECT_EQ(h.loss.timer(), ms(2) + ms(999));

  // The space is closed: sends refused, ACKs ignored.
  EXPECT_FALSE(h.send(ms(1600), kInitial, 2));
  EXPECT_EQ(h.ack(ms(1600), kInitial, TestAck({{1, 1}})), WireError::kOk);
  EXPECT_TRUE(h.events.acked_in(kInitial).empty());
  EXPECT_EQ(h.loss.bytes_in_flight(), 1200u);
}

TEST(SpuriousLossTest, LateAckOfALostPacketGivesNoEventsButUndoesTheReduction) {
  Harness h(Harness::server());
  for (uint64_t pn = 0; pn < 5; ++pn) ASSERT_TRUE(h.send(ms(pn), kApplication, pn));
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{4, 4}})), WireError::kOk);
  ASSERT_EQ(h.events.lost_in(kApplication), (Pns{0, 1}));
  h.cc.calls.clear();
  h.events.clear();
  const Instant timer = h.loss.timer();

  // The "lost" packets arrive after all: no acknowledgment events (their
  // frames were requeued), no RTT sample, but both losses of the congestion
  // event were spurious, so its reduction is undone (spurious_loss_test.cc
  // has the rules).
  ASSERT_EQ(h.ack(ms(105), kApplication, TestAck({{0, 1}})), WireError::kOk);
  EXPECT_TRUE(h.events.acked_in(kApplication).empty());
  EXPECT_TRUE(h.events.lost_in(kApplication).empty());
  EXPECT_THAT(h.cc.calls, ElementsAre("undo"));
  EXPECT_EQ(h.loss.spurious_losses(), 2u);
  EXPECT_EQ(h.loss.congestion_undos(), 1u);
  EXPECT_EQ(h.loss.bytes_in_flight(), 2400u);
  EXPECT_EQ(h.loss.timer(), timer);
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), ms(96));

  // Mixed with packets still outstanding: only those count.
  ASSERT_EQ(h.ack(ms(106), kApplication, TestAck({{0, 4}})), WireError::kOk);
  EXPECT_EQ(h.events.acked_in(kApplication), (Pns{2, 3}));
  EXPECT_EQ(h.loss.bytes_in_flight(), 0u);
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(InvalidAckTest, NeverSentPacketIsAProtocolViolationWithNoStateChange) {
  Harness h(Harness::server());
  h.loss.on_handshake_confirmed(0);
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_TRUE(h.send(ms(1), kApplication, 1));
  ASSERT_TRUE(h.send(ms(2), kApplication, 2));
  ASSERT_TRUE(h.send(ms(3), kApplication, 4));  // 3 skipped (RFC 9000 §21.4)
  const Instant timer = h.loss.timer();
  EXPECT_EQ(timer, ms(3) + ms(999) + ms(25));
  h.cc.calls.clear();

  const auto expect_unchanged = [&] {
    EXPECT_EQ(h.loss.sent(kApplication).size(), 4u);
    EXPECT_EQ(h.loss.bytes_in_flight(), 4800u);
    EXPECT_EQ(h.loss.largest_acked(kApplication), std::nullopt);
    EXPECT_FALSE(h.loss.rtt().has_sample());
    EXPECT_EQ(h.loss.timer(), timer);
    EXPECT_TRUE(h.cc.calls.empty());
    EXPECT_TRUE(h.events.acked_in(kApplication).empty());
    EXPECT_TRUE(h.events.lost_in(kApplication).empty());
  };
  EXPECT_EQ(h.ack(ms(50), kApplication, TestAck({{3, 4}})), WireError::kProtocolViolation);
  expect_unchanged();
  EXPECT_EQ(h.ack(ms(50), kApplication, TestAck({{3, 3}, {0, 1}})), WireError::kProtocolViolation);
  expect_unchanged();
  EXPECT_EQ(h.ack(ms(50), kApplication, TestAck({{5, 5}})), WireError::kProtocolViolation);
  expect_unchanged();
  EXPECT_EQ(h.ack(ms(50), kHandshake, TestAck({{0, 0}})), WireError::kProtocolViolation);
  expect_unchanged();

  // Around the skipped number the ACK is fine.
  EXPECT_EQ(h.ack(ms(50), kApplication, TestAck({{4, 4}, {0, 2}})), WireError::kOk);
  EXPECT_EQ(h.events.acked_in(kApplication), (Pns{0, 1, 2, 4}));
}

TEST(OnPacketSentTest, RefusesNumbersThatDoNotGrowAndReportsInFlightPackets) {
  Harness h(Harness::server());
  h.cc.record_sends = true;
  ASSERT_TRUE(h.send(ms(1), kApplication, 7));
  EXPECT_FALSE(h.send(ms(2), kApplication, 7));
  EXPECT_FALSE(h.send(ms(2), kApplication, 3));
  ASSERT_TRUE(h.loss.on_packet_sent(ms(3), kApplication, 8, ack_only_packet(ms(3))));
  ASSERT_TRUE(h.send(ms(4), kHandshake, 0));
  // ACK-only packets are not in flight: congestion control never sees them.
  EXPECT_THAT(h.cc.calls, ElementsAre("sent now=1000000 pn=7 size=1200 bif=1200",
                                      "sent now=4000000 pn=0 size=1200 bif=2400"));
  EXPECT_EQ(h.loss.sent(kApplication).size(), 2u);
}

}  // namespace
}  // namespace dpquic::recovery
