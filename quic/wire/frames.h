// QUIC frames (RFC 9000 §19, RFC 9221 DATAGRAM, draft-ietf-quic-ack-frequency)
// as plain values. A decoded frame refers to the packet bytes it came from
// (stream data, tokens, reason phrases, connection IDs): nothing is copied and
// nothing is allocated, so a Frame must not outlive its packet buffer.
//
// Codecs are in frame_codec.h; which packet types may carry which frames is in
// frame_validity.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "quic/wire/ack_ranges.h"

namespace dpquic::wire {

// The kind of a frame. Where a wire type carries flags in its low bits, the
// flags live in the frame's fields instead: all eight STREAM types 0x08-0x0f
// are kStream (StreamFrame::has_offset/has_length/fin), and both DATAGRAM types
// 0x30/0x31 are kDatagram (DatagramFrame::has_length). Every other value is
// the frame's wire type.
enum class FrameType : uint64_t {
  kPadding = 0x00,
  kPing = 0x01,
  kAck = 0x02,
  kAckEcn = 0x03,
  kResetStream = 0x04,
  kStopSending = 0x05,
  kCrypto = 0x06,
  kNewToken = 0x07,
  kStream = 0x08,
  kMaxData = 0x10,
  kMaxStreamData = 0x11,
  kMaxStreamsBidi = 0x12,
  kMaxStreamsUni = 0x13,
  kDataBlocked = 0x14,
  kStreamDataBlocked = 0x15,
  kStreamsBlockedBidi = 0x16,
  kStreamsBlockedUni = 0x17,
  kNewConnectionId = 0x18,
  kRetireConnectionId = 0x19,
  kPathChallenge = 0x1a,
  kPathResponse = 0x1b,
  kConnectionCloseTransport = 0x1c,
  kConnectionCloseApplication = 0x1d,
  kHandshakeDone = 0x1e,
  kImmediateAck = 0x1f,  // draft-ietf-quic-ack-frequency
  kDatagram = 0x30,      // RFC 9221
  kAckFrequency = 0xaf,  // draft-ietf-quic-ack-frequency
};

// Every FrameType, for tables and exhaustive tests.
inline constexpr FrameType kAllFrameTypes[] = {
    FrameType::kPadding,
    FrameType::kPing,
    FrameType::kAck,
    FrameType::kAckEcn,
    FrameType::kResetStream,
    FrameType::kStopSending,
    FrameType::kCrypto,
    FrameType::kNewToken,
    FrameType::kStream,
    FrameType::kMaxData,
    FrameType::kMaxStreamData,
    FrameType::kMaxStreamsBidi,
    FrameType::kMaxStreamsUni,
    FrameType::kDataBlocked,
    FrameType::kStreamDataBlocked,
    FrameType::kStreamsBlockedBidi,
    FrameType::kStreamsBlockedUni,
    FrameType::kNewConnectionId,
    FrameType::kRetireConnectionId,
    FrameType::kPathChallenge,
    FrameType::kPathResponse,
    FrameType::kConnectionCloseTransport,
    FrameType::kConnectionCloseApplication,
    FrameType::kHandshakeDone,
    FrameType::kImmediateAck,
    FrameType::kDatagram,
    FrameType::kAckFrequency,
};

// RFC name of the frame type, e.g. "STREAM".
const char* to_string(FrameType type);

// A run of consecutive PADDING bytes, collapsed into one frame.
struct PaddingFrame {
  size_t length = 0;
};

struct EcnCounts {
  uint64_t ect0 = 0;
  uint64_t ect1 = 0;
  uint64_t ecn_ce = 0;

  friend bool operator==(const EcnCounts&, const EcnCounts&) = default;
};

// ACK (0x02) and ACK_ECN (0x03); `ecn` is meaningful only for the latter.
struct AckFrame {
  // Raw ACK Delay field; the receiver scales it by 2^ack_delay_exponent.
  uint64_t ack_delay = 0;
  AckRangeView ranges;  // ranges.largest() is the Largest Acknowledged field
  EcnCounts ecn;
};

struct ResetStreamFrame {
  uint64_t stream_id = 0;
  uint64_t application_error_code = 0;
  uint64_t final_size = 0;
};

struct StopSendingFrame {
  uint64_t stream_id = 0;
  uint64_t application_error_code = 0;
};

struct CryptoFrame {
  uint64_t offset = 0;
  std::span<const uint8_t> data;
};

struct NewTokenFrame {
  std::span<const uint8_t> token;
};

struct StreamFrame {
  uint64_t stream_id = 0;
  uint64_t offset = 0;
  std::span<const uint8_t> data;
  bool fin = false;
  // Whether the Offset field is present (OFF bit). The encoder writes it
  // whenever offset != 0, and also when this is set.
  bool has_offset = false;
  // Whether the Length field is present (LEN bit). Without it the data runs
  // to the end of the packet, so such a frame must be the packet's last.
  bool has_length = true;
};

// MAX_DATA and DATA_BLOCKED.
struct DataLimitFrame {
  uint64_t maximum_data = 0;
};

// MAX_STREAM_DATA and STREAM_DATA_BLOCKED.
struct StreamDataLimitFrame {
  uint64_t stream_id = 0;
  uint64_t maximum_stream_data = 0;
};

// MAX_STREAMS and STREAMS_BLOCKED, bidirectional or unidirectional by type.
struct StreamsLimitFrame {
  // Largest valid value: stream IDs stop at 2^62 - 1 (RFC 9000 §19.11).
  static constexpr uint64_t kMaxStreams = uint64_t{1} << 60;

  uint64_t maximum_streams = 0;
};

struct NewConnectionIdFrame {
  static constexpr size_t kResetTokenLength = 16;

  uint64_t sequence_number = 0;
  uint64_t retire_prior_to = 0;
  std::span<const uint8_t> connection_id;  // 1 to 20 bytes
  std::array<uint8_t, kResetTokenLength> stateless_reset_token{};
};

struct RetireConnectionIdFrame {
  uint64_t sequence_number = 0;
};

// PATH_CHALLENGE and PATH_RESPONSE.
struct PathDataFrame {
  std::array<uint8_t, 8> data{};
};

// CONNECTION_CLOSE, transport (0x1c) or application (0x1d) by type.
struct ConnectionCloseFrame {
  uint64_t error_code = 0;
  // The type of the frame that triggered the error; 0x1c only (0 if unknown).
  // Must be 0 for 0x1d, which has no such field: the encoder refuses others.
  uint64_t frame_type = 0;
  std::span<const uint8_t> reason_phrase;
};

struct DatagramFrame {
  std::span<const uint8_t> data;
  // Type 0x31 has a Length field; type 0x30 runs to the end of the packet.
  bool has_length = true;
};

// draft-ietf-quic-ack-frequency, -10 layout: four varints.
struct AckFrequencyFrame {
  uint64_t sequence_number = 0;
  uint64_t ack_eliciting_threshold = 0;
  uint64_t requested_max_ack_delay_us = 0;
  uint64_t reordering_threshold = 0;
};

// One frame: `type` says which member of the union is live. PING,
// HANDSHAKE_DONE and IMMEDIATE_ACK carry nothing.
struct Frame {
  FrameType type = FrameType::kPadding;
  union {
    PaddingFrame padding;
    AckFrame ack;
    ResetStreamFrame reset_stream;
    StopSendingFrame stop_sending;
    CryptoFrame crypto;
    NewTokenFrame new_token;
    StreamFrame stream;
    DataLimitFrame max_data;                   // kMaxData
    DataLimitFrame data_blocked;               // kDataBlocked
    StreamDataLimitFrame max_stream_data;      // kMaxStreamData
    StreamDataLimitFrame stream_data_blocked;  // kStreamDataBlocked
    StreamsLimitFrame max_streams;             // kMaxStreamsBidi, kMaxStreamsUni
    StreamsLimitFrame streams_blocked;         // kStreamsBlockedBidi, kStreamsBlockedUni
    NewConnectionIdFrame new_connection_id;
    RetireConnectionIdFrame retire_connection_id;
    PathDataFrame path_challenge;  // kPathChallenge
    PathDataFrame path_response;   // kPathResponse
    ConnectionCloseFrame connection_close;
    DatagramFrame datagram;
    AckFrequencyFrame ack_frequency;
  };

  Frame() : padding() {}
};

// Frames are plain values: copying one copies a few words, never the data.
static_assert(std::is_trivially_copyable_v<Frame> && std::is_trivially_destructible_v<Frame>);

// Same type and same field values, comparing referenced bytes by content.
bool same_frame(const Frame& a, const Frame& b);

}  // namespace dpquic::wire
