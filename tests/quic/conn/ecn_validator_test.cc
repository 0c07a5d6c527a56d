#include "quic/conn/ecn_validator.h"

#include <gtest/gtest.h>

namespace dpquic::conn {
namespace {

using State = EcnValidator::State;
using transmit::EcnCodepoint;
using wire::EcnCounts;
using wire::PacketNumberSpace;

constexpr auto kInitial = PacketNumberSpace::kInitial;
constexpr auto kApp = PacketNumberSpace::kApplication;

EcnCounts counts(uint64_t ect0, uint64_t ect1, uint64_t ce) {
  EcnCounts c;
  c.ect0 = ect0;
  c.ect1 = ect1;
  c.ecn_ce = ce;
  return c;
}

// Sends `n` packets in `space`, marked as the validator says.
void send(EcnValidator& ecn, PacketNumberSpace space, int n) {
  for (int i = 0; i < n; ++i) {
    ecn.on_packet_sent(space, ecn.codepoint_to_send() != EcnCodepoint::kNotEct);
  }
}

TEST(EcnValidatorTest, TestsWithTenMarkedPacketsThenWaits) {
  EcnValidator ecn;
  EXPECT_EQ(ecn.state(), State::kTesting);
  EXPECT_EQ(ecn.codepoint_to_send(), EcnCodepoint::kEct0);
  ecn.on_packet_sent(kApp, false);  // unmarked packets do not count
  send(ecn, kApp, 9);
  EXPECT_EQ(ecn.state(), State::kTesting);
  EXPECT_EQ(ecn.testing_packets_sent(), 9u);
  send(ecn, kInitial, 1);  // across spaces: ten on the path
  EXPECT_EQ(ecn.state(), State::kUnknown);
  EXPECT_EQ(ecn.codepoint_to_send(), EcnCodepoint::kNotEct);
}

TEST(EcnValidatorTest, ValidationSucceedsFromUnknown) {
  EcnValidator ecn;
  send(ecn, kApp, 12);  // 10 marked, 2 unmarked
  ASSERT_EQ(ecn.state(), State::kUnknown);
  // An ACK with counts but no marked packet acknowledged proves nothing.
  EXPECT_EQ(ecn.on_ack(kApp, 0, nullptr), 0u);
  const EcnCounts none = counts(0, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 0, &none), 0u);
  EXPECT_EQ(ecn.state(), State::kUnknown);
  // Four marked packets acknowledged, five ECT(0) counted (one earlier ACK
  // was lost): more is allowed.
  const EcnCounts first = counts(5, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 4, &first), 0u);
  EXPECT_EQ(ecn.state(), State::kCapable);
  EXPECT_EQ(ecn.codepoint_to_send(), EcnCodepoint::kEct0);
}

TEST(EcnValidatorTest, ValidationDuringTestingGoesStraightToCapable) {
  EcnValidator ecn;
  send(ecn, kApp, 3);
  const EcnCounts c = counts(2, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 2, &c), 0u);
  EXPECT_EQ(ecn.state(), State::kCapable);
}

TEST(EcnValidatorTest, ReportsNewCeMarksAsCongestion) {
  EcnValidator ecn;
  send(ecn, kApp, 10);
  const EcnCounts a = counts(4, 0, 0);
  ASSERT_EQ(ecn.on_ack(kApp, 4, &a), 0u);
  send(ecn, kApp, 10);
  // Three more acknowledged: two ECT(0), one CE.
  const EcnCounts b = counts(6, 0, 1);
  EXPECT_EQ(ecn.on_ack(kApp, 3, &b), 1u);
  // The same CE count again is not a new event.
  const EcnCounts c = counts(8, 0, 1);
  EXPECT_EQ(ecn.on_ack(kApp, 2, &c), 0u);
  // All of five newly acknowledged packets CE-marked.
  const EcnCounts d = counts(8, 0, 6);
  EXPECT_EQ(ecn.on_ack(kApp, 5, &d), 5u);
  EXPECT_EQ(ecn.state(), State::kCapable);
}

TEST(EcnValidatorTest, MissingCountsForMarkedPacketsFail) {
  EcnValidator ecn;
  send(ecn, kApp, 10);
  EXPECT_EQ(ecn.on_ack(kApp, 1, nullptr), 0u);
  EXPECT_EQ(ecn.state(), State::kFailed);
  EXPECT_EQ(ecn.codepoint_to_send(), EcnCodepoint::kNotEct);
  // Nothing is reported once failed.
  const EcnCounts c = counts(10, 0, 5);
  EXPECT_EQ(ecn.on_ack(kApp, 5, &c), 0u);
  EXPECT_EQ(ecn.state(), State::kFailed);
}

TEST(EcnValidatorTest, DecreasingCountsFail) {
  for (int which = 0; which < 2; ++which) {
    EcnValidator ecn;
    send(ecn, kApp, 10);
    const EcnCounts a = counts(5, 0, 2);
    ASSERT_EQ(ecn.on_ack(kApp, 7, &a), 2u);
    ASSERT_EQ(ecn.state(), State::kCapable);
    const EcnCounts b = which == 0 ? counts(4, 0, 3) : counts(7, 0, 1);
    EXPECT_EQ(ecn.on_ack(kApp, 0, &b), 0u);
    EXPECT_EQ(ecn.state(), State::kFailed) << which;
  }
}

TEST(EcnValidatorTest, TooSmallIncreaseFails) {
  // Remarking to not-ECT: five marked packets acknowledged, only four
  // counted as ECT(0) or CE.
  EcnValidator ecn;
  send(ecn, kApp, 10);
  const EcnCounts c = counts(3, 0, 1);
  EXPECT_EQ(ecn.on_ack(kApp, 5, &c), 0u);
  EXPECT_EQ(ecn.state(), State::kFailed);
}

TEST(EcnValidatorTest, Ect1CountFails) {
  // We only send ECT(0): an ECT(1) count means the network remarks.
  EcnValidator ecn;
  send(ecn, kApp, 10);
  const EcnCounts c = counts(2, 1, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 2, &c), 0u);
  EXPECT_EQ(ecn.state(), State::kFailed);
}

TEST(EcnValidatorTest, MoreCountedThanSentFails) {
  EcnValidator ecn;
  send(ecn, kApp, 4);
  const EcnCounts ect0 = counts(5, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 4, &ect0), 0u);
  EXPECT_EQ(ecn.state(), State::kFailed);

  EcnValidator ce;
  send(ce, kApp, 4);
  const EcnCounts with_ce = counts(3, 0, 2);
  EXPECT_EQ(ce.on_ack(kApp, 4, &with_ce), 0u);
  EXPECT_EQ(ce.state(), State::kFailed);

  // Counts for a space we never sent marked packets in.
  EcnValidator other_space;
  send(other_space, kInitial, 3);
  const EcnCounts app = counts(1, 0, 0);
  EXPECT_EQ(other_space.on_ack(kApp, 0, &app), 0u);
  EXPECT_EQ(other_space.state(), State::kFailed);
}

TEST(EcnValidatorTest, AllTestingPacketsLostFails) {
  EcnValidator ecn;
  send(ecn, kApp, 10);
  ecn.on_all_testing_lost();
  EXPECT_EQ(ecn.state(), State::kFailed);
  EXPECT_EQ(ecn.codepoint_to_send(), EcnCodepoint::kNotEct);

  // Once validated, the test's packets were not all lost: no effect.
  EcnValidator capable;
  send(capable, kApp, 10);
  const EcnCounts c = counts(1, 0, 0);
  ASSERT_EQ(capable.on_ack(kApp, 1, &c), 0u);
  capable.on_all_testing_lost();
  EXPECT_EQ(capable.state(), State::kCapable);
}

TEST(EcnValidatorTest, ReorderedAckNeverFailsAndIsIgnored) {
  EcnValidator ecn;
  send(ecn, kApp, 10);
  const EcnCounts newer = counts(6, 0, 1);
  ASSERT_EQ(ecn.on_ack(kApp, 7, &newer), 1u);
  send(ecn, kApp, 10);
  // An older ACK arriving late: lower counts, largest acknowledged not raised.
  const EcnCounts older = counts(3, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 1, &older, /*largest_acked_increased=*/false), 0u);
  EXPECT_EQ(ecn.on_ack(kApp, 1, nullptr, /*largest_acked_increased=*/false), 0u);
  EXPECT_EQ(ecn.state(), State::kCapable);
  // The baseline stayed at the newer counts.
  const EcnCounts next = counts(8, 0, 2);
  EXPECT_EQ(ecn.on_ack(kApp, 3, &next), 1u);
  EXPECT_EQ(ecn.state(), State::kCapable);
  // A non-increasing ACK with valid, larger counts is still used.
  const EcnCounts same_largest = counts(9, 0, 3);
  EXPECT_EQ(ecn.on_ack(kApp, 2, &same_largest, false), 1u);
}

TEST(EcnValidatorTest, SpacesKeepSeparateBaselines) {
  EcnValidator ecn;
  send(ecn, kInitial, 2);
  send(ecn, kApp, 8);
  const EcnCounts initial = counts(2, 0, 0);
  ASSERT_EQ(ecn.on_ack(kInitial, 2, &initial), 0u);
  // The application space starts from zero, not from the Initial counts.
  const EcnCounts app = counts(1, 0, 1);
  EXPECT_EQ(ecn.on_ack(kApp, 2, &app), 1u);
  EXPECT_EQ(ecn.state(), State::kCapable);
}

TEST(EcnValidatorTest, NewPathRetestsWithCountsCarriedOver) {
  EcnValidator ecn;
  send(ecn, kApp, 10);
  ASSERT_EQ(ecn.on_ack(kApp, 1, nullptr), 0u);
  ASSERT_EQ(ecn.state(), State::kFailed);
  ecn.reset_for_new_path();
  EXPECT_EQ(ecn.state(), State::kTesting);
  EXPECT_EQ(ecn.testing_packets_sent(), 0u);
  EXPECT_EQ(ecn.codepoint_to_send(), EcnCodepoint::kEct0);
  send(ecn, kApp, 5);
  // 15 marked packets sent in total in the space; the counts are cumulative.
  const EcnCounts c = counts(12, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 5, &c), 0u);
  EXPECT_EQ(ecn.state(), State::kCapable);
  // A capable path that later fails is disabled.
  const EcnCounts worse = counts(12, 0, 0);
  EXPECT_EQ(ecn.on_ack(kApp, 2, &worse), 0u);
  EXPECT_EQ(ecn.state(), State::kFailed);
}

}  // namespace
}  // namespace dpquic::conn
