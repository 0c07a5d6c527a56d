// Which frames may appear where (RFC 9000 §12.4 Table 3, §12.5), and the
// per-frame properties recovery and migration need (RFC 9000 §12.4 "Spec"
// column, RFC 9002 §2).
#pragma once

#include <cstdint>

#include "quic/wire/errors.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/role.h"

namespace dpquic::wire {

// kOk if a frame of `type` may appear in a packet of `packet`, else
// kProtocolViolation (§12.4). Beyond Table 3:
//  - 0-RTT also rejects RETIRE_CONNECTION_ID (§12.5 lists it among the frames
//    that cannot be sent in 0-RTT and lets a server reject them; we do);
//  - DATAGRAM (RFC 9221 §4) is application data: 0-RTT and 1-RTT only;
//  - ACK_FREQUENCY and IMMEDIATE_ACK (draft-ietf-quic-ack-frequency) are
//    1-RTT only: the draft keeps them out of 0-RTT (they presume the peer's
//    min_ack_delay transport parameter, which 0-RTT does not remember) and,
//    like every application-space frame, out of Initial and Handshake;
//  - Retry and Version Negotiation packets carry no frames at all.
WireError check_frame_allowed(FrameType type, PacketType packet);

// The same, plus the rules that depend on who receives: a server MUST treat
// NEW_TOKEN (§19.7) and HANDSHAKE_DONE (§19.20) as PROTOCOL_VIOLATION.
WireError check_frame_allowed(FrameType type, PacketType packet, Role receiver);

// All frames but ACK, ACK_ECN, PADDING and CONNECTION_CLOSE (RFC 9002 §2).
bool is_ack_eliciting(FrameType type);

// Whether a packet holding this frame counts toward bytes in flight: packets
// are in flight when ack-eliciting or carrying PADDING (RFC 9002 §2), so all
// frames but ACK, ACK_ECN and CONNECTION_CLOSE.
bool counts_in_flight(FrameType type);

// PATH_CHALLENGE, PATH_RESPONSE, NEW_CONNECTION_ID and PADDING: a packet of
// only these is a probing packet (§9.1).
bool is_probing(FrameType type);

// STREAM is the only flow-controlled frame (Table 3, "F").
bool is_flow_controlled(FrameType type);

}  // namespace dpquic::wire
