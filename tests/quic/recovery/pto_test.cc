// The probe timeout (RFC 9002 §6.2, §A.8 SetLossDetectionTimer, §A.9
// OnLossDetectionTimeout) with exact timer values: kInitialRtt gives a first
// PTO of 333 + 4 * 166.5 = 999 ms; Application adds max_ack_delay (25 ms);
// every expiry doubles the period in every space.
#include <gtest/gtest.h>

#include "quic/recovery/loss_detection.h"
#include "tests/quic/recovery/loss_detection_test_util.h"

namespace dpquic::recovery {
namespace {

using namespace ::dpquic::recovery::testing;  // NOLINT: test vocabulary
using wire::WireError;

TEST(PtoTest, InitialBackoffBeforeAnyRttSample) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  EXPECT_EQ(h.loss.pto_duration(kInitial), ms(999));
  EXPECT_EQ(h.loss.timer(), ms(999));

  h.timeout(ms(999) - 1);  // early: nothing
  EXPECT_EQ(h.loss.pto_count(), 0u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 0u);

  h.timeout(ms(999));
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 2u);
  EXPECT_EQ(h.loss.probes_pending(kHandshake), 0u);
  EXPECT_TRUE(h.events.lost_in(kInitial).empty());  // a PTO declares nothing lost
  EXPECT_EQ(h.loss.sent(kInitial).size(), 1u);
  EXPECT_EQ(h.loss.timer(), ms(1998));  // from the last ack-eliciting send (0)

  // Two probes: the timer restarts from the latest send.
  ASSERT_TRUE(h.send(ms(999), kInitial, 1));
  h.loss.on_probe_sent(kInitial);
  ASSERT_TRUE(h.send(ms(999), kInitial, 2));
  h.loss.on_probe_sent(kInitial);
  h.loss.on_probe_sent(kInitial);  // an extra report does not underflow
  EXPECT_EQ(h.loss.probes_pending(kInitial), 0u);
  EXPECT_EQ(h.loss.timer(), ms(999) + ms(1998));

  h.timeout(ms(2997));
  EXPECT_EQ(h.loss.pto_count(), 2u);
  EXPECT_EQ(h.loss.timer(), ms(999) + ms(3996));
  h.timeout(ms(4995));
  EXPECT_EQ(h.loss.pto_count(), 3u);
  EXPECT_EQ(h.loss.pto_duration(kInitial), ms(7992));
  EXPECT_EQ(h.loss.timer(), ms(999) + ms(7992));
}

// A burst's sends leave the deadline to be worked out when it is read: the
// value is the one the last send would have set, and on_timeout() fires on it
// even when nothing read timer() in between.
TEST(PtoTest, DeadlineAfterABurstIsTheLastSendsWithoutAnyReadInBetween) {
  Harness h(Harness::server());
  h.loss.on_handshake_confirmed(0);
  for (uint64_t pn = 0; pn < 32; ++pn) ASSERT_TRUE(h.send(ms(7), kApplication, pn));
  ASSERT_TRUE(h.send(ms(8), kApplication, 32));
  h.timeout(ms(8) + ms(1024) - 1);  // 999 + 25 ms after the last send: early
  EXPECT_EQ(h.loss.pto_count(), 0u);
  EXPECT_EQ(h.loss.timer(), ms(8) + ms(1024));

  ASSERT_TRUE(h.send(ms(9), kApplication, 33));
  h.timeout(ms(9) + ms(1024));  // not read since the send: due all the same
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.probes_pending(kApplication), 2u);
  EXPECT_EQ(h.loss.timer(), ms(9) + ms(2048));
}

// The client's anti-deadlock PTO counts from the send that armed it, however
// late the deadline is read.
TEST(PtoTest, AntiDeadlockDeadlineCountsFromTheSendNotTheRead) {
  Harness h(Harness::client());
  SentPacket padding = data_packet(ms(5));
  padding.ack_eliciting = false;  // in flight (padded), not ack-eliciting
  ASSERT_TRUE(h.loss.on_packet_sent(ms(5), kInitial, 0, padding));
  h.timeout(ms(5) + ms(999) - 1);
  EXPECT_EQ(h.loss.pto_count(), 0u);
  EXPECT_EQ(h.loss.timer(), ms(5) + ms(999));
}

TEST(PtoTest, ApplicationAddsMaxAckDelayAndAnAckResetsTheBackoff) {
  Harness h(Harness::server());
  h.loss.on_handshake_confirmed(0);
  ASSERT_TRUE(h.send(0, kApplication, 0));
  ASSERT_EQ(h.ack(ms(100), kApplication, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_EQ(h.loss.timer(), kNever);  // nothing in flight
  ASSERT_TRUE(h.send(ms(200), kApplication, 1));
  // srtt 100 + 4 * rttvar 50 + max_ack_delay 25.
  EXPECT_EQ(h.loss.pto_duration(kApplication), ms(325));
  EXPECT_EQ(h.loss.pto_duration(kHandshake), ms(300));
  EXPECT_EQ(h.loss.timer(), ms(525));

  h.timeout(ms(525));
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.probes_pending(kApplication), 2u);
  EXPECT_EQ(h.loss.timer(), ms(200) + ms(650));
  ASSERT_TRUE(h.send(ms(525), kApplication, 2));
  ASSERT_TRUE(h.send(ms(525), kApplication, 3));
  EXPECT_EQ(h.loss.timer(), ms(525) + ms(650));

  h.timeout(ms(1175));
  EXPECT_EQ(h.loss.pto_count(), 2u);
  EXPECT_EQ(h.loss.pto_duration(kApplication), ms(1300));
  EXPECT_EQ(h.loss.timer(), ms(525) + ms(1300));

  // The probes are acknowledged: latest_rtt 1375 ms; packet 1 (sent at 200)
  // is older than 1900 - 9/8 * 1375 = 353.125 ms. The backoff resets.
  ASSERT_EQ(h.ack(ms(1900), kApplication, TestAck({{2, 3}})), WireError::kOk);
  EXPECT_EQ(h.loss.rtt().smoothed_rtt(), us(259375));
  EXPECT_EQ(h.loss.rtt().rttvar(), us(356250));
  EXPECT_EQ(h.events.lost_in(kApplication), (Pns{1}));
  EXPECT_EQ(h.loss.pto_count(), 0u);
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(PtoTest, EarliestSpaceWinsAndTheBackoffIsShared) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_TRUE(h.send(ms(10), kHandshake, 0));
  EXPECT_EQ(h.loss.timer(), ms(999));

  h.timeout(ms(999));  // Initial's PTO
  EXPECT_EQ(h.loss.probes_pending(kInitial), 2u);
  EXPECT_EQ(h.loss.probes_pending(kHandshake), 0u);
  EXPECT_EQ(h.loss.timer(), ms(1998));  // Initial 0 + 1998 < Handshake 10 + 1998

  ASSERT_TRUE(h.send(ms(999), kInitial, 1));
  EXPECT_EQ(h.loss.timer(), ms(10) + ms(1998));  // now Handshake's is earlier

  h.timeout(ms(2008));
  EXPECT_EQ(h.loss.pto_count(), 2u);
  EXPECT_EQ(h.loss.probes_pending(kHandshake), 2u);
  EXPECT_EQ(h.loss.timer(), ms(10) + ms(3996));
}

TEST(PtoTest, ApplicationNotArmedBeforeConfirmation) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kApplication, 0));  // e.g. 0.5-RTT data
  EXPECT_TRUE(h.loss.has_ack_eliciting_in_flight());
  EXPECT_EQ(h.loss.timer(), kNever);

  ASSERT_TRUE(h.send(ms(5), kHandshake, 0));
  EXPECT_EQ(h.loss.timer(), ms(5) + ms(999));  // Handshake's only
  ASSERT_EQ(h.ack(ms(50), kHandshake, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_EQ(h.loss.timer(), kNever);

  // Confirmed: srtt 45 + 4 * 22.5 + 25 = 160 ms after packet 0.
  h.loss.on_handshake_confirmed(ms(60));
  EXPECT_EQ(h.loss.timer(), ms(160));
  h.timeout(ms(160));
  EXPECT_EQ(h.loss.probes_pending(kApplication), 2u);
}

TEST(PtoTest, ClientAntiDeadlockUntilTheServerValidatedItsAddress) {
  Harness h(Harness::client());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  EXPECT_EQ(h.loss.timer(), ms(999));
  h.timeout(ms(999));
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 2u);
  for (uint64_t pn = 1; pn <= 2; ++pn) {
    ASSERT_TRUE(h.send(ms(999), kInitial, pn));
    h.loss.on_probe_sent(kInitial);
  }
  EXPECT_EQ(h.loss.timer(), ms(999) + ms(1998));

  // Everything acknowledged in Initial (latest_rtt 100 ms). The client keeps
  // its backoff (§6.2.1) and, with nothing in flight, arms the anti-deadlock
  // PTO from now: 1099 + (100 + 4 * 50) * 2.
  ASSERT_EQ(h.ack(ms(1099), kInitial, TestAck({{0, 2}})), WireError::kOk);
  EXPECT_FALSE(h.loss.peer_completed_address_validation());
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_FALSE(h.loss.has_ack_eliciting_in_flight());
  EXPECT_EQ(h.loss.timer(), ms(1699));

  h.loss.on_handshake_keys_available(ms(1099));
  EXPECT_EQ(h.loss.timer(), ms(1699));
  h.timeout(ms(1699));
  // One Handshake probe, since the client has Handshake keys.
  EXPECT_EQ(h.loss.probes_pending(kHandshake), 1u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 0u);
  EXPECT_EQ(h.loss.pto_count(), 2u);
  EXPECT_EQ(h.loss.timer(), ms(1699) + ms(1200));

  ASSERT_TRUE(h.send(ms(1699), kHandshake, 0));
  h.loss.on_probe_sent(kHandshake);
  EXPECT_EQ(h.loss.timer(), ms(1699) + ms(1200));  // no max_ack_delay in Handshake

  // A Handshake ACK: the server validated the address; backoff reset and,
  // nothing in flight, no timer.
  ASSERT_EQ(h.ack(ms(1799), kHandshake, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_TRUE(h.loss.peer_completed_address_validation());
  EXPECT_EQ(h.loss.pto_count(), 0u);
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(PtoTest, ClientAntiDeadlockProbeIsInitialWithoutHandshakeKeys) {
  Harness h(Harness::client());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_EQ(h.ack(ms(100), kInitial, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_EQ(h.loss.timer(), ms(100) + ms(300));
  h.timeout(ms(400));
  EXPECT_EQ(h.loss.probes_pending(kInitial), 1u);
  EXPECT_EQ(h.loss.probes_pending(kHandshake), 0u);
  EXPECT_EQ(h.loss.timer(), ms(400) + ms(600));

  // Validation learnt another way (e.g. handshake confirmed) stops it.
  h.loss.on_peer_address_validated(ms(500));
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(PtoTest, ClientAntiDeadlockEvenWith0RttInFlight) {
  // §6.2.2.1: until the server validated its address the client MUST arm
  // the PTO. 0-RTT packets in flight do not count: their PTO cannot be
  // armed before confirmation, and the server may be waiting at its
  // anti-amplification limit.
  Harness h(Harness::client());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_TRUE(h.send(0, kApplication, 0));  // 0-RTT
  ASSERT_EQ(h.ack(ms(100), kInitial, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_TRUE(h.loss.has_ack_eliciting_in_flight());
  EXPECT_FALSE(h.loss.peer_completed_address_validation());
  EXPECT_EQ(h.loss.timer(), ms(100) + ms(300));
  h.timeout(ms(400));
  EXPECT_EQ(h.loss.probes_pending(kInitial), 1u);
  EXPECT_EQ(h.loss.probes_pending(kApplication), 0u);
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.timer(), ms(400) + ms(600));

  // Once validated, the unconfirmed Application space arms nothing.
  h.loss.on_peer_address_validated(ms(500));
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(PtoTest, ServerHasNoAntiDeadlockTimer) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_EQ(h.ack(ms(100), kInitial, TestAck({{0, 0}})), WireError::kOk);
  EXPECT_EQ(h.loss.timer(), kNever);
}

TEST(PtoTest, ServerAtTheAmplificationLimitArmsNoPto) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  EXPECT_EQ(h.loss.timer(), ms(999));
  h.loss.set_amplification_blocked(ms(10), true);
  EXPECT_EQ(h.loss.timer(), kNever);
  h.timeout(ms(1500));  // not armed: nothing happens
  EXPECT_EQ(h.loss.pto_count(), 0u);

  // A datagram from the client unblocks it: the timer is in the past, so the
  // caller runs the timeout at once (§A.6).
  h.loss.set_amplification_blocked(ms(2000), false);
  EXPECT_EQ(h.loss.timer(), ms(999));
  h.timeout(ms(2000));
  EXPECT_EQ(h.loss.pto_count(), 1u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 2u);
  EXPECT_EQ(h.loss.timer(), ms(1998));
}

TEST(PtoTest, BackoffSaturatesInsteadOfOverflowing) {
  Harness h(Harness::server());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  // 999 ms * 2^34 still fits in 64 bits of nanoseconds; * 2^35 does not.
  while (h.loss.timer() != kNever) h.timeout(h.loss.timer());
  EXPECT_EQ(h.loss.pto_count(), 35u);
  EXPECT_EQ(h.loss.pto_duration(kInitial), UINT64_MAX);
}

// RFC 9002 §6.3: after a Retry, what the client sent is reported lost (to
// requeue its frames) with no congestion signal, recovery restarts, and both
// spaces keep their packet numbers going.
TEST(PtoTest, RetryReportsEverythingLostWithoutACongestionEvent) {
  Harness h(Harness::client());
  ASSERT_TRUE(h.send(0, kInitial, 0));
  ASSERT_TRUE(h.send(ms(1), kApplication, 0));  // 0-RTT
  ASSERT_TRUE(h.send(ms(2), kApplication, 1));
  h.timeout(h.loss.timer());  // a PTO: backoff 1
  ASSERT_EQ(h.loss.pto_count(), 1u);
  h.cc.calls.clear();

  h.loss.on_retry(ms(1500), h.events);
  EXPECT_EQ(h.events.lost_in(kInitial), Pns({0}));
  EXPECT_EQ(h.events.lost_in(kApplication), Pns({0, 1}));
  EXPECT_EQ(h.loss.bytes_in_flight(), 0u);
  EXPECT_EQ(h.loss.pto_count(), 0u);
  EXPECT_EQ(h.loss.probes_pending(kInitial), 0u);
  for (const std::string& call : h.cc.calls) {
    EXPECT_EQ(call.find("congestion"), std::string::npos) << call;
    EXPECT_EQ(call.find("persistent"), std::string::npos) << call;
  }
  // Numbers continue; an old number is no longer expected in an ACK, and a
  // new packet is tracked as usual.
  EXPECT_FALSE(h.send(ms(1501), kInitial, 0));
  ASSERT_TRUE(h.send(ms(1501), kInitial, 1));
  EXPECT_EQ(h.loss.bytes_in_flight(), 1200u);
  EXPECT_NE(h.loss.timer(), kNever);
}

}  // namespace
}  // namespace dpquic::recovery
