// Attack: acknowledging packet numbers that were never sent. RFC 9000
// §13.1: "An endpoint SHOULD treat receipt of an acknowledgment for a packet
// it did not send as a connection error of type PROTOCOL_VIOLATION". Such
// an ACK must not reach loss detection or congestion control (no packets
// are freed, no window grows, nothing is allocated for the unknown range).
// Numbers above the largest sent and numbers our sender skipped on purpose
// (RFC 9000 §21.4) are both "never sent".

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/quic/attacks/forged_peer.h"

namespace dpquic::attacks {
namespace {

using wire::TransportErrorCode;

constexpr uint64_t kAckFrameType = 0x02;

class AckUnsentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish());
    // A PING gets us an ACK, so the victim's largest packet number is known.
    FrameBuffer frames;
    ASSERT_TRUE(frames.add(ping_frame()));
    peer_.send(frames);
    peer_.advance(100 * kMillisecond);
    ASSERT_FALSE(peer_.received().empty());
  }

  uint64_t largest_received() const { return peer_.victim_packet_ranges().front().largest; }
  size_t pool_allocations() {
    return peer_.victim_endpoint().core().sent_packet_pool->allocations();
  }

  // Sends an ACK of exactly [smallest, largest] (no other frame), then
  // checks the victim closed with PROTOCOL_VIOLATION without allocating.
  void expect_ack_refused(uint64_t smallest, uint64_t largest) {
    peer_.set_auto_ack(false);
    const size_t pool_before = pool_allocations();
    const uint64_t cwnd_before = peer_.victim()->congestion().congestion_window();
    peer_.reset_victim_allocations();
    FrameBuffer frames;
    const wire::AckRange range{smallest, largest};
    ASSERT_TRUE(frames.add_ack({&range, 1}));
    peer_.send(frames);
    ASSERT_TRUE(closed_with(peer_.close(), TransportErrorCode::kProtocolViolation, kAckFrameType));
    EXPECT_EQ(peer_.victim_allocations(), 0u);
    EXPECT_EQ(pool_allocations(), pool_before);
    ASSERT_NE(peer_.victim(), nullptr);  // closing: kept for the closing period
    EXPECT_EQ(peer_.victim()->congestion().congestion_window(), cwnd_before);
    peer_.advance(10 * kSecond);
    EXPECT_EQ(peer_.victim(), nullptr);
    EXPECT_EQ(peer_.pair().server->connection_count(), 0u);
  }

  ForgedPeer peer_{Side::kClient};
};

TEST_F(AckUnsentTest, AckOfTheNumberAfterTheLargestSentIsAProtocolViolation) {
  expect_ack_refused(largest_received(), largest_received() + 1);
}

TEST_F(AckUnsentTest, AckOfAFarFutureNumberIsAProtocolViolation) {
  expect_ack_refused(uint64_t{1} << 40, uint64_t{1} << 40);
}

TEST_F(AckUnsentTest, RepeatedAckOfSentPacketsIsFine) {
  // Acknowledging again what was acknowledged before is legal.
  peer_.set_auto_ack(false);
  FrameBuffer frames;
  const std::vector<wire::AckRange> ranges = peer_.victim_packet_ranges();
  for (int i = 0; i < 3; ++i) {
    frames.clear();
    ASSERT_TRUE(frames.add_ack(ranges));
    ASSERT_TRUE(frames.add(ping_frame()));
    peer_.send(frames);
  }
  EXPECT_FALSE(peer_.close().has_value());
  EXPECT_TRUE(peer_.victim()->is_established());
}

TEST_F(AckUnsentTest, AckOfASkippedNumberIsAProtocolViolation) {
  // Each PATH_CHALLENGE draws one packet: enough of them to pass a skip
  // (one every 128 to 383 packets).
  for (int i = 0; i < 500; ++i) {
    FrameBuffer frames;
    ASSERT_TRUE(frames.add(path_challenge_frame(static_cast<uint64_t>(i))));
    peer_.send(frames);
  }
  ASSERT_FALSE(peer_.close().has_value());
  // Every victim datagram reached us, so a hole between two received
  // numbers is a number it skipped.
  const std::vector<wire::AckRange> ranges = peer_.victim_packet_ranges();
  ASSERT_GE(ranges.size(), 2u) << "no packet number was skipped in 500 packets";
  const uint64_t skipped = ranges[0].smallest - 1;
  ASSERT_GT(skipped, ranges[1].largest);
  expect_ack_refused(skipped, skipped);
}

}  // namespace
}  // namespace dpquic::attacks
