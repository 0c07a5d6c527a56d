// Attack: retired-CID growth through Retire Prior To (CVE-2024-1410,
// quiche). Every NEW_CONNECTION_ID with a higher Retire Prior To makes the
// receiver retire CIDs, and each retirement is a RETIRE_CONNECTION_ID frame
// to keep (and retransmit) until acknowledged. A peer that keeps raising
// Retire Prior To and never acknowledges grew that state without bound.
// RFC 9000 §5.1.2: an endpoint SHOULD bound the retirements it tracks and
// MAY close with CONNECTION_ID_LIMIT_ERROR beyond it; ours tracks
// max(16, 2 * active_connection_id_limit) and closes.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "tests/quic/attacks/forged_peer.h"

namespace dpquic::attacks {
namespace {

using wire::FrameType;
using wire::TransportErrorCode;

constexpr uint64_t kNewConnectionIdFrameType = 0x18;

// A CID of `length` bytes unique to `sequence`.
std::vector<uint8_t> cid_for(uint64_t sequence, size_t length) {
  std::vector<uint8_t> cid(length, 0xa5);
  for (size_t i = 0; i < 8 && i < length; ++i) cid[i] = static_cast<uint8_t>(sequence >> (8 * i));
  return cid;
}

std::set<uint64_t> retired_sequences(const ForgedPeer& peer, size_t from_packet) {
  std::set<uint64_t> out;
  for (size_t i = from_packet; i < peer.received().size(); ++i) {
    for (const wire::Frame& frame : peer.received()[i].frames()) {
      if (frame.type == FrameType::kRetireConnectionId) {
        out.insert(frame.retire_connection_id.sequence_number);
      }
    }
  }
  return out;
}

class RetirePriorToTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish());
    const uint64_t active_limit =
        peer_.pair().options.server.connection.transport.active_connection_id_limit;
    retire_bound_ = std::max<uint64_t>(16, 2 * active_limit);
  }

  // One NEW_CONNECTION_ID retiring every earlier sequence.
  void rotate() {
    const std::vector<uint8_t> cid = cid_for(sequence_, peer_.own_cid_length());
    FrameBuffer frames;
    ASSERT_TRUE(frames.add(new_connection_id_frame(sequence_, sequence_, cid)));
    ++sequence_;
    peer_.send(frames);
  }

  ForgedPeer peer_{Side::kClient};
  uint64_t retire_bound_ = 0;
  uint64_t sequence_ = 10;  // above the CIDs the real client issued
};

TEST_F(RetirePriorToTest, APeerAcknowledgingRetirementsMayRotateForever) {
  rotate();  // warm-up
  peer_.reset_victim_allocations();
  for (int i = 0; i < 300; ++i) ASSERT_NO_FATAL_FAILURE(rotate());
  EXPECT_FALSE(peer_.close().has_value());
  ASSERT_NE(peer_.victim(), nullptr);
  EXPECT_TRUE(peer_.victim()->is_established());
  EXPECT_EQ(peer_.victim_allocations(), 0u);
  // Every CID it retired was announced.
  EXPECT_GE(retired_sequences(peer_, 0).size(), 300u);
}

TEST_F(RetirePriorToTest, NeverAcknowledgedRetirementsAreBoundedThenConnectionIdLimitError) {
  peer_.set_auto_ack(false);
  const size_t from_packet = peer_.received().size();
  peer_.reset_victim_allocations();
  uint64_t frames_sent = 0;
  while (!peer_.close() && frames_sent < 10 * retire_bound_) {
    ASSERT_NO_FATAL_FAILURE(rotate());
    ++frames_sent;
  }
  ASSERT_TRUE(closed_with(peer_.close(), TransportErrorCode::kConnectionIdLimitError,
                          kNewConnectionIdFrameType))
      << "after " << frames_sent << " rotations";
  // It closed as soon as the bound was exceeded: the first rotation retires
  // the real client's CIDs (up to active_connection_id_limit), each later
  // one a single CID.
  EXPECT_LE(frames_sent, retire_bound_ + 1);
  EXPECT_LE(retired_sequences(peer_, from_packet).size(), retire_bound_);
  EXPECT_EQ(peer_.victim_allocations(), 0u);
  // The victim stops answering but our packets after the close get at most
  // a repeated CONNECTION_CLOSE, never more retirements.
  const std::set<uint64_t> retired = retired_sequences(peer_, from_packet);
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(rotate());
  EXPECT_EQ(retired_sequences(peer_, from_packet), retired);
  // After the closing period the connection is freed.
  peer_.advance(10 * kSecond);
  EXPECT_EQ(peer_.victim(), nullptr);
  EXPECT_EQ(peer_.pair().server->connection_count(), 0u);
}

}  // namespace
}  // namespace dpquic::attacks
