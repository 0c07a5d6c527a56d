// Congestion undo (RFC 9438 §4.9 for CUBIC, the Eifel response for NewReno):
// each controller restores what its latest reduction replaced, once, never
// after persistent congestion or a reset; and loss detection undoes a
// loss-triggered reduction when its losses prove spurious, but not after
// persistent congestion or when ECN-CE joined the event.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "quic/recovery/cubic.h"
#include "quic/recovery/loss_detection.h"
#include "quic/recovery/new_reno.h"
#include "tests/quic/recovery/loss_detection_test_util.h"

namespace dpquic::recovery {
namespace {

using namespace ::dpquic::recovery::testing;  // NOLINT: test vocabulary
using wire::WireError;

constexpr uint64_t kMds = 1200;

void ack(CongestionController& cc, Instant now, Instant time_sent, const RttEstimator& rtt) {
  cc.on_packet_acked(now, AckedPacket{0, time_sent, kMds}, rtt, cc.congestion_window(), false);
}

struct CubicState {
  uint64_t cwnd, ssthresh, cwnd_epoch, cwnd_prior, w_est;
  double w_max, k;
  bool epoch_started;
  Instant epoch_start;
  explicit CubicState(const Cubic& c)
      : cwnd(c.congestion_window()),
        ssthresh(c.slow_start_threshold()),
        cwnd_epoch(c.cwnd_epoch()),
        cwnd_prior(c.cwnd_prior()),
        w_est(c.w_est()),
        w_max(c.w_max()),
        k(c.k_seconds()),
        epoch_started(c.epoch_started()),
        epoch_start(c.epoch_start()) {}
  friend bool operator==(const CubicState&, const CubicState&) = default;
};

TEST(CubicUndoTest, RestoresTheWindowAndTheCurveOnce) {
  Cubic cc(kMds, /*hystart_enabled=*/false);
  const RttEstimator rtt(ms(100));
  for (int i = 0; i < 26; ++i) ack(cc, ms(100), 0, rtt);
  ASSERT_EQ(cc.congestion_window(), 43200u);
  EXPECT_FALSE(cc.undo_congestion_event());  // nothing to undo yet
  cc.on_congestion_event(ms(1000), ms(900));
  ack(cc, ms(2000), ms(1500), rtt);  // congestion avoidance: an epoch starts
  ASSERT_TRUE(cc.epoch_started());
  const CubicState before(cc);
  EXPECT_EQ(before.w_max, 43200.0);
  EXPECT_NEAR(before.k, 3.0, 1e-9);

  cc.on_congestion_event(ms(2500), ms(2400));
  ASSERT_LT(cc.congestion_window(), before.cwnd);
  ASSERT_LT(cc.w_max(), before.w_max);  // fast convergence
  ASSERT_FALSE(cc.epoch_started());

  EXPECT_TRUE(cc.undo_congestion_event());
  EXPECT_EQ(CubicState(cc), before);
  // The earlier recovery period is back, the undone one gone.
  EXPECT_TRUE(cc.in_recovery(ms(900)));
  EXPECT_FALSE(cc.in_recovery(ms(2400)));
  EXPECT_FALSE(cc.undo_congestion_event());  // once
  EXPECT_EQ(CubicState(cc), before);

  // The curve continues from the restored epoch.
  ack(cc, ms(2600), ms(2550), rtt);
  EXPECT_GT(cc.congestion_window(), before.cwnd);
  EXPECT_EQ(cc.epoch_start(), before.epoch_start);
}

TEST(CubicUndoTest, SlowStartWithHyStartComesBack) {
  Cubic cc(kMds);
  ASSERT_TRUE(cc.hystart_active());
  cc.on_congestion_event(ms(50), ms(10));
  EXPECT_FALSE(cc.hystart_active());
  EXPECT_EQ(cc.congestion_window(), 8400u);
  EXPECT_TRUE(cc.undo_congestion_event());
  EXPECT_EQ(cc.congestion_window(), 12000u);
  EXPECT_EQ(cc.slow_start_threshold(), UINT64_MAX);
  EXPECT_TRUE(cc.in_slow_start());
  EXPECT_TRUE(cc.hystart_active());
  EXPECT_FALSE(cc.in_recovery(ms(10)));
}

TEST(CubicUndoTest, NeverAfterPersistentCongestionOrReset) {
  Cubic cc(kMds);
  cc.on_congestion_event(ms(50), ms(10));
  cc.on_persistent_congestion(ms(60));
  EXPECT_FALSE(cc.undo_congestion_event());
  EXPECT_EQ(cc.congestion_window(), minimum_window(kMds));
  EXPECT_EQ(cc.slow_start_threshold(), 8400u);

  Cubic reset(kMds);
  reset.on_congestion_event(ms(50), ms(10));
  reset.reset();
  EXPECT_FALSE(reset.undo_congestion_event());
  EXPECT_EQ(reset.congestion_window(), 12000u);
}

TEST(NewRenoUndoTest, RestoresWindowThresholdAndRecoveryOnce) {
  NewReno cc(kMds);
  const RttEstimator rtt(ms(100));
  for (int i = 0; i < 10; ++i) ack(cc, ms(100), 0, rtt);
  ASSERT_EQ(cc.congestion_window(), 24000u);
  cc.on_congestion_event(ms(200), ms(150));
  ASSERT_EQ(cc.congestion_window(), 12000u);
  ASSERT_EQ(cc.slow_start_threshold(), 12000u);
  EXPECT_TRUE(cc.undo_congestion_event());
  EXPECT_EQ(cc.congestion_window(), 24000u);
  EXPECT_EQ(cc.slow_start_threshold(), UINT64_MAX);
  EXPECT_TRUE(cc.in_slow_start());
  EXPECT_FALSE(cc.in_recovery(ms(150)));
  EXPECT_FALSE(cc.undo_congestion_event());

  // A second event after a first: undo goes back to the first one's state.
  cc.on_congestion_event(ms(300), ms(250));  // 24000 -> 12000
  ack(cc, ms(400), ms(350), rtt);            // avoidance bytes, no growth yet
  cc.on_congestion_event(ms(500), ms(450));  // 12000 -> 6000
  EXPECT_TRUE(cc.undo_congestion_event());
  EXPECT_EQ(cc.congestion_window(), 12000u);
  EXPECT_EQ(cc.slow_start_threshold(), 12000u);
  EXPECT_TRUE(cc.in_recovery(ms(250)));
  EXPECT_FALSE(cc.in_recovery(ms(450)));
}

TEST(NewRenoUndoTest, NeverAfterPersistentCongestionOrReset) {
  NewReno cc(kMds);
  cc.on_congestion_event(ms(50), ms(10));
  cc.on_persistent_congestion(ms(60));
  EXPECT_FALSE(cc.undo_congestion_event());
  EXPECT_EQ(cc.congestion_window(), minimum_window(kMds));

  NewReno reset(kMds);
  reset.on_congestion_event(ms(50), ms(10));
  reset.reset_for_new_path(ms(70));
  EXPECT_FALSE(reset.undo_congestion_event());
}

// Loss detection driving a real controller, as a server with a confirmed
// handshake.
template <typename Cc>
struct RealHarness {
  RealHarness() : cc(kMds), loss(Harness::server(), pool, xor_buffer, cc) {
    loss.on_handshake_confirmed(0);
  }
  void send(Instant now, uint64_t pn) {
    ASSERT_TRUE(loss.on_packet_sent(now, kApplication, pn, data_packet(now)));
  }
  void send_range(uint64_t from, uint64_t to, Instant start) {
    for (uint64_t pn = from; pn < to; ++pn) send(start + ms(pn - from), pn);
  }
  WireError ack(Instant now, const TestAck& frame, bool has_ecn_counts = false) {
    return loss.on_ack_received(now, kApplication, frame.frame(), has_ecn_counts, events);
  }

  SentPacketPool pool;
  AckXorBuffer xor_buffer;
  Cc cc;
  RecordingEvents events;
  LossDetection loss;
};

template <typename Cc>
class LossDetectionUndoTest : public ::testing::Test {};
using Controllers = ::testing::Types<Cubic, NewReno>;
TYPED_TEST_SUITE(LossDetectionUndoTest, Controllers);

TYPED_TEST(LossDetectionUndoTest, ReorderedPacketUndoesItsReduction) {
  RealHarness<TypeParam> h;
  h.send_range(0, 10, 0);
  const uint64_t window = h.cc.congestion_window();
  ASSERT_EQ(h.ack(ms(30), TestAck({{1, 3}})), WireError::kOk);
  ASSERT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  EXPECT_LT(h.cc.congestion_window(), window);
  EXPECT_TRUE(h.cc.in_recovery(ms(5)));

  ASSERT_EQ(h.ack(ms(31), TestAck({{0, 3}})), WireError::kOk);
  EXPECT_EQ(h.loss.congestion_undos(), 1u);
  EXPECT_EQ(h.cc.congestion_window(), window);
  EXPECT_EQ(h.cc.slow_start_threshold(), UINT64_MAX);
  EXPECT_FALSE(h.cc.in_recovery(ms(5)));
  EXPECT_EQ(h.loss.packet_threshold(), 4u);
}

TYPED_TEST(LossDetectionUndoTest, NoUndoAfterPersistentCongestion) {
  RealHarness<TypeParam> h;
  h.send(0, 0);
  ASSERT_EQ(h.ack(ms(10), TestAck({{0, 0}})), WireError::kOk);  // srtt 10, rttvar 5
  // Persistent congestion duration (10 + 4 * 5 + 25) * 3 = 165 ms; 1..3
  // span 180 ms.
  h.send(ms(20), 1);
  h.send(ms(100), 2);
  h.send(ms(200), 3);
  h.send(ms(210), 4);
  ASSERT_EQ(h.ack(ms(220), TestAck({{4, 4}})), WireError::kOk);
  ASSERT_EQ(h.events.lost_in(kApplication), (Pns{1, 2, 3}));
  // The minimum window, then packet 4 (acknowledged after the collapse, which
  // left recovery) grows it in slow start.
  ASSERT_EQ(h.cc.congestion_window(), minimum_window(kMds) + kMds);

  ASSERT_EQ(h.ack(ms(221), TestAck({{0, 4}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 3u);
  EXPECT_EQ(h.loss.congestion_undos(), 0u);
  EXPECT_EQ(h.cc.congestion_window(), minimum_window(kMds) + kMds);
  EXPECT_NE(h.cc.slow_start_threshold(), UINT64_MAX);
}

TYPED_TEST(LossDetectionUndoTest, NoUndoWhenEcnCeJoinsTheEvent) {
  RealHarness<TypeParam> h;
  h.send_range(0, 10, 0);
  ASSERT_EQ(h.ack(ms(30), TestAck({{1, 3}}), true), WireError::kOk);
  ASSERT_EQ(h.events.lost_in(kApplication), (Pns{0}));
  const uint64_t reduced = h.cc.congestion_window();
  // CE on packet 4, sent before the recovery period began: no second
  // reduction, but the network did signal congestion.
  ASSERT_EQ(h.ack(ms(31), TestAck({{1, 4}}, 0, {4, 0, 1}), true), WireError::kOk);
  EXPECT_EQ(h.cc.congestion_window(), reduced);
  ASSERT_EQ(h.ack(ms(32), TestAck({{0, 4}}, 0, {4, 0, 1}), true), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 1u);
  EXPECT_EQ(h.loss.congestion_undos(), 0u);
  EXPECT_EQ(h.cc.congestion_window(), reduced);
}

TYPED_TEST(LossDetectionUndoTest, NoUndoWhileARealLossRemains) {
  RealHarness<TypeParam> h;
  h.send_range(0, 10, 0);
  const uint64_t window = h.cc.congestion_window();
  ASSERT_EQ(h.ack(ms(30), TestAck({{3, 5}})), WireError::kOk);
  ASSERT_EQ(h.events.lost_in(kApplication), (Pns{0, 1, 2}));
  const uint64_t reduced = h.cc.congestion_window();
  ASSERT_LT(reduced, window);
  // 1 and 2 were reordered; 0 really was lost.
  ASSERT_EQ(h.ack(ms(31), TestAck({{1, 6}})), WireError::kOk);
  EXPECT_EQ(h.loss.spurious_losses(), 2u);
  EXPECT_EQ(h.loss.congestion_undos(), 0u);
  EXPECT_EQ(h.cc.congestion_window(), reduced);
}

}  // namespace
}  // namespace dpquic::recovery
