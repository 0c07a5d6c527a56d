#include "quic/wire/frame_validity.h"

#include <gtest/gtest.h>

#include <string>

#include "quic/wire/frames.h"

namespace dpquic::wire {
namespace {

// RFC 9000 Table 3 as written in the RFC ("Pkts" and "Spec" columns), with
// the 0-RTT exclusions of §12.5 applied (RETIRE_CONNECTION_ID) and the
// extension frames added. Pkts: I Initial, H Handshake, 0 0-RTT, 1 1-RTT.
// Spec: N not ack-eliciting, C not counted in flight, P probing, F flow
// controlled.
struct Row {
  FrameType type;
  const char* packets;
  const char* spec;
};

constexpr Row kTable[] = {
    {FrameType::kPadding, "IH01", "NP"},
    {FrameType::kPing, "IH01", ""},
    {FrameType::kAck, "IH_1", "NC"},
    {FrameType::kAckEcn, "IH_1", "NC"},
    {FrameType::kResetStream, "__01", ""},
    {FrameType::kStopSending, "__01", ""},
    {FrameType::kCrypto, "IH_1", ""},
    {FrameType::kNewToken, "___1", ""},
    {FrameType::kStream, "__01", "F"},
    {FrameType::kMaxData, "__01", ""},
    {FrameType::kMaxStreamData, "__01", ""},
    {FrameType::kMaxStreamsBidi, "__01", ""},
    {FrameType::kMaxStreamsUni, "__01", ""},
    {FrameType::kDataBlocked, "__01", ""},
    {FrameType::kStreamDataBlocked, "__01", ""},
    {FrameType::kStreamsBlockedBidi, "__01", ""},
    {FrameType::kStreamsBlockedUni, "__01", ""},
    {FrameType::kNewConnectionId, "__01", "P"},
    {FrameType::kRetireConnectionId, "___1", ""},  // Table 3 says __01; §12.5 excludes 0-RTT
    {FrameType::kPathChallenge, "__01", "P"},
    {FrameType::kPathResponse, "___1", "P"},
    {FrameType::kConnectionCloseTransport, "IH01", "NC"},
    {FrameType::kConnectionCloseApplication, "__01", "NC"},
    {FrameType::kHandshakeDone, "___1", ""},
    {FrameType::kImmediateAck, "___1", ""},
    {FrameType::kDatagram, "__01", ""},
    {FrameType::kAckFrequency, "___1", ""},
};

bool has(const char* text, char c) { return std::string(text).find(c) != std::string::npos; }

TEST(FrameValidityTest, TableCoversEveryFrameType) {
  ASSERT_EQ(std::size(kTable), std::size(kAllFrameTypes));
  for (size_t i = 0; i < std::size(kTable); ++i) EXPECT_EQ(kTable[i].type, kAllFrameTypes[i]);
}

TEST(FrameValidityTest, WholeMatrix) {
  const std::pair<PacketType, char> packets[] = {{PacketType::kInitial, 'I'},
                                                 {PacketType::kHandshake, 'H'},
                                                 {PacketType::kZeroRtt, '0'},
                                                 {PacketType::kOneRtt, '1'}};
  for (const Row& row : kTable) {
    for (const auto& [packet, letter] : packets) {
      const WireError expected =
          has(row.packets, letter) ? WireError::kOk : WireError::kProtocolViolation;
      EXPECT_EQ(check_frame_allowed(row.type, packet), expected)
          << to_string(row.type) << " in " << letter;
    }
    // Retry and Version Negotiation packets carry no frames.
    EXPECT_EQ(check_frame_allowed(row.type, PacketType::kRetry), WireError::kProtocolViolation);
    EXPECT_EQ(check_frame_allowed(row.type, PacketType::kVersionNegotiation),
              WireError::kProtocolViolation);
    // "Note that all frames can appear in 1-RTT packets."
    EXPECT_EQ(check_frame_allowed(row.type, PacketType::kOneRtt), WireError::kOk);
  }
}

TEST(FrameValidityTest, IssueExamples) {
  EXPECT_EQ(check_frame_allowed(FrameType::kStream, PacketType::kInitial),
            WireError::kProtocolViolation);
  EXPECT_EQ(check_frame_allowed(FrameType::kConnectionCloseApplication, PacketType::kHandshake),
            WireError::kProtocolViolation);
  EXPECT_EQ(check_frame_allowed(FrameType::kConnectionCloseTransport, PacketType::kInitial),
            WireError::kOk);
  for (FrameType type :
       {FrameType::kAck, FrameType::kAckEcn, FrameType::kCrypto, FrameType::kHandshakeDone,
        FrameType::kNewToken, FrameType::kPathResponse, FrameType::kRetireConnectionId}) {
    EXPECT_EQ(check_frame_allowed(type, PacketType::kZeroRtt), WireError::kProtocolViolation)
        << to_string(type);
  }
}

TEST(FrameValidityTest, ServerRejectsNewTokenAndHandshakeDone) {
  for (const Row& row : kTable) {
    const bool client_only =
        row.type == FrameType::kNewToken || row.type == FrameType::kHandshakeDone;
    for (PacketType packet : {PacketType::kInitial, PacketType::kHandshake, PacketType::kZeroRtt,
                              PacketType::kOneRtt, PacketType::kRetry}) {
      const WireError table = check_frame_allowed(row.type, packet);
      EXPECT_EQ(check_frame_allowed(row.type, packet, Role::kClient), table);
      EXPECT_EQ(check_frame_allowed(row.type, packet, Role::kServer),
                client_only ? WireError::kProtocolViolation : table)
          << to_string(row.type);
    }
  }
}

TEST(FrameValidityTest, SpecColumn) {
  for (const Row& row : kTable) {
    EXPECT_EQ(is_ack_eliciting(row.type), !has(row.spec, 'N')) << to_string(row.type);
    EXPECT_EQ(counts_in_flight(row.type), !has(row.spec, 'C')) << to_string(row.type);
    EXPECT_EQ(is_probing(row.type), has(row.spec, 'P')) << to_string(row.type);
    EXPECT_EQ(is_flow_controlled(row.type), has(row.spec, 'F')) << to_string(row.type);
  }
  // RFC 9002 §2: PADDING is not ack-eliciting, yet its packets are in flight.
  EXPECT_FALSE(is_ack_eliciting(FrameType::kPadding));
  EXPECT_TRUE(counts_in_flight(FrameType::kPadding));
}

}  // namespace
}  // namespace dpquic::wire
