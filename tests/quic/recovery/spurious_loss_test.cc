// Spurious losses: the bounded history of declared-lost packets, the
// adaptive reordering thresholds (bounded, never below RFC 9002's), and when
// loss detection asks congestion control to undo a reduction.
#include "quic/recovery/spurious_loss.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/quic/recovery/loss_detection_test_util.h"

namespace dpquic::recovery {
namespace {

using namespace ::dpquic::recovery::testing;  // NOLINT: test vocabulary
using ::testing::ElementsAre;
using wire::WireError;

TEST(ReorderingThresholdsTest, StartAtRfc9002ConstantsAndOnlyGrowToTheirBounds) {
  ReorderingThresholds t;
  EXPECT_EQ(t.packet_threshold(), 3u);
  EXPECT_EQ(t.time_threshold_eighths(), 9u);

  t.on_spurious_by_packets(3);  // reordered by 3: 4 tolerates it
  EXPECT_EQ(t.packet_threshold(), 4u);
  t.on_spurious_by_packets(1);  // never lowered
  EXPECT_EQ(t.packet_threshold(), 4u);
  t.on_spurious_by_packets(40);
  EXPECT_EQ(t.packet_threshold(), 41u);
  t.on_spurious_by_packets(100000);
  EXPECT_EQ(t.packet_threshold(), kMaxPacketThreshold);
  t.on_spurious_by_packets(UINT64_MAX);
  EXPECT_EQ(t.packet_threshold(), 256u);

  // Acknowledged 12 ms after the send at a 10 ms RTT: 9.6 eighths -> 10.
  t.on_spurious_by_time(ms(12), ms(10));
  EXPECT_EQ(t.time_threshold_eighths(), 10u);
  t.on_spurious_by_time(ms(10) + us(100), ms(10));  // 8.08 -> 9: no change
  EXPECT_EQ(t.time_threshold_eighths(), 10u);
  t.on_spurious_by_time(ms(17), ms(10));  // 13.6 -> 14
  EXPECT_EQ(t.time_threshold_eighths(), 14u);
  t.on_spurious_by_time(ms(50), ms(10));  // capped at 2 RTTs
  EXPECT_EQ(t.time_threshold_eighths(), kMaxTimeThresholdEighths);
  t.on_spurious_by_time(UINT64_MAX, 1);
  EXPECT_EQ(t.time_threshold_eighths(), 16u);
  t.on_spurious_by_time(ms(1), 0);  // no RTT: nothing to scale
  EXPECT_EQ(t.time_threshold_eighths(), 16u);

  t.reset();
  EXPECT_EQ(t.packet_threshold(), 3u);
  EXPECT_EQ(t.time_threshold_eighths(), 9u);
}

TEST(ReorderingThresholdsTest, LossDelayScalesWithTheTimeThreshold) {
  RttEstimator rtt;
  rtt.on_sample(ms(40), 0, false, ms(25));
  EXPECT_EQ(loss_delay(rtt, 9), ms(45));
  EXPECT_EQ(loss_delay(rtt, 10), ms(50));
  EXPECT_EQ(loss_delay(rtt, 16), ms(80));
  EXPECT_EQ(loss_delay(rtt), loss_delay(rtt, kTimeThresholdEighths));
  RttEstimator tiny;
  tiny.on_sample(us(100), 0, false, ms(25));
  EXPECT_EQ(loss_delay(tiny, 16), kGranularity);
}

LostPacketRecord lost(wire::PacketNumberSpace space, uint64_t pn) {
  LostPacketRecord record;
  record.space = space;
  record.packet_number = pn;
  record.time_sent = ms(pn);
  record.in_flight = true;
  return record;
}

std::vector<uint64_t> acknowledged(LossHistory& history, wire::PacketNumberSpace space,
                                   const TestAck& ack) {
  std::vector<uint64_t> found;
  history.find_acknowledged(space, ack.frame().ranges, [&](const LostPacketRecord& record) {
    EXPECT_EQ(record.space, space);
    EXPECT_EQ(record.time_sent, ms(record.packet_number));
    found.push_back(record.packet_number);
  });
  return found;
}

TEST(LossHistoryTest, FindsAcknowledgedRecordsOfTheSpaceOnceAscending) {
  LossHistory history;
  for (uint64_t pn : {5, 7, 9, 12}) history.record(lost(kApplication, pn));
  history.record(lost(kHandshake, 6));
  EXPECT_EQ(history.pending(), 5u);

  TestAck ack({{11, 13}, {9, 9}, {3, 6}});
  EXPECT_EQ(acknowledged(history, kApplication, ack), (Pns{5, 9, 12}));
  EXPECT_EQ(history.pending(), 2u);  // 7 (not acknowledged) and Handshake 6
  EXPECT_TRUE(acknowledged(history, kApplication, ack).empty());  // only once
  EXPECT_EQ(acknowledged(history, kHandshake, ack), (Pns{6}));

  history.forget(kApplication);
  EXPECT_EQ(history.pending(), 0u);
  EXPECT_TRUE(acknowledged(history, kApplication, TestAck({{0, 20}})).empty());
}

TEST(LossHistoryTest, BoundedRingForgetsTheOldest) {
  LossHistory history;
  for (uint64_t pn = 0; pn < 70; ++pn) history.record(lost(kApplication, pn));
  EXPECT_EQ(history.pending(), LossHistory::kCapacity);
  Pns expected;
  for (uint64_t pn = 70 - LossHistory::kCapacity; pn < 70; ++pn) expected.push_back(pn);
  EXPECT_EQ(acknowledged(history, kApplication, TestAck({{0, 100}})), expected);
  EXPECT_EQ(history.pending(), 0u);
}

// Application packets 0..n-1 sent 1 ms apart by a server with a confirmed
// handshake.
Harness& sent(Harness& h, uint64_t from, uint64_t to, Instant start) {
  h.loss.on_handshake_confirmed(0);
  for (uint64_t pn = from; pn < to; ++pn)
    EXPECT_TRUE(h.send(start + ms(pn - from), kApplication, pn));
  return h;
}

TEST(SpuriousLossTest, ReorderingByThreeRaisesThePacketThresholdToFour) {
  Harness h(Harness::server());
  sent(h, 0, 20, 0);
  // Packet 0 overtaken by three: declared lost by the packet threshold.
  ASSERT_EQ(h.ack(ms(30), kApplication, TestAck({{1, 3}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  ASSERT_EQ(h.ack(ms(31), kApplication, TestAck({{0, 3}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 1u);
  EXPECT_EQ(h.loss.packet_threshold(), 4u);
  EXPECT_EQ(h.loss.time_threshold_eighths(), 9u);  // the time threshold did not fire
  EXPECT_EQ(h.loss.congestion_undos(), 1u);

  // The same reordering again is not a loss any more, a larger one is.
  h.events.clear();
  ASSERT_EQ(h.ack(ms(32), kApplication, TestAck({{5, 7}, {0, 3}})), WireError::kOk);
  EXPECT_TRUE(h.events.lost_in(kApplication).empty());
  ASSERT_EQ(h.ack(ms(33), kApplication, TestAck({{5, 8}, {0, 3}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{4}));
  // The distance is the one when the loss was declared (8 - 4), however
  // far the largest acknowledged has moved since.
  ASSERT_EQ(h.ack(ms(34), kApplication, TestAck({{0, 16}})), WireError::kOk);
  EXPECT_EQ(h.loss.packet_threshold(), 5u);
  EXPECT_EQ(h.loss.spurious_losses(), 2u);
}

TEST(SpuriousLossTest, PacketThresholdIsBounded) {
  Harness h(Harness::server());
  sent(h, 0, 600, 0);
  ASSERT_EQ(h.ack(ms(700), kApplication, TestAck({{1, 599}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  ASSERT_EQ(h.ack(ms(701), kApplication, TestAck({{0, 599}})), WireError::kOk);
  EXPECT_EQ(h.loss.packet_threshold(), kMaxPacketThreshold);
}

TEST(SpuriousLossTest, DelayBeyondTheTimeThresholdRaisesIt) {
  Harness h(Harness::server());
  sent(h, 0, 2, 0);
  ASSERT_EQ(h.ack(ms(11), kApplication, TestAck({{1, 1}})), WireError::kOk);  // RTT 10 ms
  EXPECT_EQ(h.loss.loss_time(kApplication), us(11250));  // 9/8 * 10 ms after packet 0
  h.timeout(us(11250));
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  // Packet 0 took 12 ms: 9.6 eighths of the RTT, so the threshold becomes
  // 10/8; the packet threshold was not involved.
  ASSERT_EQ(h.ack(ms(12), kApplication, TestAck({{0, 1}})), WireError::kOk);
  EXPECT_EQ(h.loss.time_threshold_eighths(), 10u);
  EXPECT_EQ(h.loss.packet_threshold(), 3u);

  // loss_delay is now 12.5 ms.
  ASSERT_TRUE(h.send(ms(20), kApplication, 2));
  ASSERT_TRUE(h.send(ms(21), kApplication, 3));
  ASSERT_EQ(h.ack(ms(31), kApplication, TestAck({{3, 3}})), WireError::kOk);
  EXPECT_EQ(h.loss.loss_time(kApplication), us(32500));
}

TEST(SpuriousLossTest, UndoOnlyWhenEveryLossOfTheEventWasSpurious) {
  Harness h(Harness::server());
  sent(h, 0, 10, 0);
  ASSERT_EQ(h.ack(ms(20), kApplication, TestAck({{4, 6}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0, 1, 2, 3}));
  h.cc.calls.clear();
  ASSERT_EQ(h.ack(ms(21), kApplication, TestAck({{4, 7}, {0, 1}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 2u);
  EXPECT_EQ(h.loss.congestion_undos(), 0u);  // 2 and 3 may really be lost
  ASSERT_EQ(h.ack(ms(22), kApplication, TestAck({{0, 8}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 4u);
  EXPECT_EQ(h.loss.congestion_undos(), 1u);
  EXPECT_EQ(std::count(h.cc.calls.begin(), h.cc.calls.end(), "undo"), 1);
  // Acknowledging them again changes nothing.
  h.cc.calls.clear();
  ASSERT_EQ(h.ack(ms(23), kApplication, TestAck({{0, 9}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 4u);
  EXPECT_EQ(std::count(h.cc.calls.begin(), h.cc.calls.end(), "undo"), 0);
}

TEST(SpuriousLossTest, NoUndoOnceEcnCeJoinedTheEvent) {
  Harness h(Harness::server());
  sent(h, 0, 10, 0);
  ASSERT_EQ(h.ack(ms(20), kApplication, TestAck({{3, 3}}), true), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  // CE on packet 4: congestion for certain (the recorder is never in
  // recovery, so this is its own reduction, which supersedes the loss's;
  // congestion_undo_test.cc has CE inside a real recovery period).
  ASSERT_EQ(h.ack(ms(21), kApplication, TestAck({{1, 4}}, 0, {0, 4, 1}), true), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  h.cc.calls.clear();
  ASSERT_EQ(h.ack(ms(22), kApplication, TestAck({{0, 5}}, 0, {0, 6, 1}), true), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 1u);
  EXPECT_EQ(h.loss.congestion_undos(), 0u);
  EXPECT_EQ(std::count(h.cc.calls.begin(), h.cc.calls.end(), "undo"), 0);
}

TEST(SpuriousLossTest, AbandonedAndDiscardedSpacesAreForgotten) {
  // A client's 0-RTT packets, two declared lost, then 0-RTT is rejected:
  // the space stays in use, but its losses are no longer remembered.
  Harness h(Harness::client());
  for (uint64_t pn = 0; pn < 5; ++pn) ASSERT_TRUE(h.send(ms(pn), kApplication, pn));
  ASSERT_EQ(h.ack(ms(20), kApplication, TestAck({{2, 4}})), WireError::kOk);
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{0, 1}));
  h.loss.on_zero_rtt_rejected(ms(21), h.events);
  ASSERT_EQ(h.ack(ms(22), kApplication, TestAck({{0, 4}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 0u);
  EXPECT_EQ(h.loss.packet_threshold(), 3u);
}

TEST(SpuriousLossTest, NewPathRestartsTheThresholds) {
  Harness h(Harness::server());
  sent(h, 0, 10, 0);
  ASSERT_EQ(h.ack(ms(20), kApplication, TestAck({{5, 5}})), WireError::kOk);
  ASSERT_EQ(h.ack(ms(21), kApplication, TestAck({{0, 5}})), WireError::kOk);
  EXPECT_EQ(h.loss.packet_threshold(), 6u);
  h.loss.reset_rtt();
  EXPECT_EQ(h.loss.packet_threshold(), 3u);
  EXPECT_EQ(h.loss.time_threshold_eighths(), 9u);
}

}  // namespace
}  // namespace dpquic::recovery
