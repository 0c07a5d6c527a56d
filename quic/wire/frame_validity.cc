#include "quic/wire/frame_validity.h"

#include "quic/hot_path.h"

namespace dpquic::wire {

namespace {

// Bit per packet type that may carry a frame (Table 3's "Pkts" column).
enum PacketBits : uint8_t {
  kI = 1 << 0,  // Initial
  kH = 1 << 1,  // Handshake
  k0 = 1 << 2,  // 0-RTT
  k1 = 1 << 3,  // 1-RTT
};

uint8_t allowed_packets(FrameType type) {
  switch (type) {
    case FrameType::kPadding:
    case FrameType::kPing:
    case FrameType::kConnectionCloseTransport: return kI | kH | k0 | k1;
    case FrameType::kAck:
    case FrameType::kAckEcn:
    case FrameType::kCrypto: return kI | kH | k1;
    case FrameType::kResetStream:
    case FrameType::kStopSending:
    case FrameType::kStream:
    case FrameType::kMaxData:
    case FrameType::kMaxStreamData:
    case FrameType::kMaxStreamsBidi:
    case FrameType::kMaxStreamsUni:
    case FrameType::kDataBlocked:
    case FrameType::kStreamDataBlocked:
    case FrameType::kStreamsBlockedBidi:
    case FrameType::kStreamsBlockedUni:
    case FrameType::kNewConnectionId:
    case FrameType::kPathChallenge:
    case FrameType::kConnectionCloseApplication:
    case FrameType::kDatagram: return k0 | k1;
    case FrameType::kNewToken:
    case FrameType::kRetireConnectionId:
    case FrameType::kPathResponse:
    case FrameType::kHandshakeDone:
    case FrameType::kImmediateAck:
    case FrameType::kAckFrequency: return k1;
  }
  return 0;
}

uint8_t packet_bit(PacketType packet) {
  switch (packet) {
    case PacketType::kInitial: return kI;
    case PacketType::kHandshake: return kH;
    case PacketType::kZeroRtt: return k0;
    case PacketType::kOneRtt: return k1;
    case PacketType::kRetry:
    case PacketType::kVersionNegotiation: return 0;
  }
  return 0;
}

}  // namespace

WireError check_frame_allowed(FrameType type, PacketType packet) {
  return (allowed_packets(type) & packet_bit(packet)) != 0 ? WireError::kOk
                                                           : WireError::kProtocolViolation;
}

DPQUIC_HOT WireError check_frame_allowed(FrameType type, PacketType packet, Role receiver) {
  if (receiver == Role::kServer &&
      (type == FrameType::kNewToken || type == FrameType::kHandshakeDone))
    return WireError::kProtocolViolation;
  return check_frame_allowed(type, packet);
}

bool is_ack_eliciting(FrameType type) {
  switch (type) {
    case FrameType::kAck:
    case FrameType::kAckEcn:
    case FrameType::kPadding:
    case FrameType::kConnectionCloseTransport:
    case FrameType::kConnectionCloseApplication: return false;
    default: return true;
  }
}

bool counts_in_flight(FrameType type) {
  return type == FrameType::kPadding || is_ack_eliciting(type);
}

bool is_probing(FrameType type) {
  switch (type) {
    case FrameType::kPathChallenge:
    case FrameType::kPathResponse:
    case FrameType::kNewConnectionId:
    case FrameType::kPadding: return true;
    default: return false;
  }
}

bool is_flow_controlled(FrameType type) { return type == FrameType::kStream; }

}  // namespace dpquic::wire
