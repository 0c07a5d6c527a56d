// Frame decoding (RFC 9000 §12.4, §19; RFC 9221 §4; draft-ietf-quic-ack-frequency).
#include <cstring>

#include "quic/hot_path.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::wire {

namespace {

constexpr WireError kOk = WireError::kOk;
constexpr WireError kEncodingError = WireError::kFrameEncodingError;

// Reads each varint in order; false if any is truncated.
template <typename... Fields>
bool read_varints(ByteReader& reader, Fields&... fields) {
  return (reader.read_varint(fields) && ...);
}

// A varint length followed by that many bytes, as a view.
bool read_length_prefixed(ByteReader& reader, std::span<const uint8_t>& bytes) {
  uint64_t length = 0;
  return reader.read_varint(length) && length <= reader.remaining() &&
         reader.read_bytes(static_cast<size_t>(length), bytes);
}

// Stream and crypto data end at most at offset 2^62 - 1 (RFC 9000 §19.6,
// §19.8). The RFC allows FRAME_ENCODING_ERROR or FLOW_CONTROL_ERROR (CRYPTO:
// or CRYPTO_BUFFER_EXCEEDED); we report FRAME_ENCODING_ERROR because the frame
// is malformed on its own, without any flow-control state: no valid sender
// can produce it, and the wire layer can reject it before stream state is
// touched. Both values are at most 2^62 - 1, so the sum cannot wrap.
bool within_offset_limit(uint64_t offset, size_t length) { return offset + length <= kVarintMax; }

WireError decode_padding(ByteReader& reader, Frame& frame) {
  // The type byte was consumed; count it and every zero byte that follows.
  const std::span<const uint8_t> rest = reader.rest();
  size_t run = 0;
  // Initial packets carry up to ~1100 bytes of padding: skip it a word at a time.
  for (uint64_t word; run + 8 <= rest.size(); run += 8) {
    std::memcpy(&word, rest.data() + run, 8);
    if (word != 0) break;
  }
  while (run < rest.size() && rest[run] == 0) ++run;
  (void)reader.skip(run);
  frame.type = FrameType::kPadding;
  frame.padding = PaddingFrame{run + 1};
  return kOk;
}

WireError decode_ack(ByteReader& reader, bool with_ecn, Frame& frame) {
  frame.type = with_ecn ? FrameType::kAckEcn : FrameType::kAck;
  frame.ack = AckFrame{};
  uint64_t largest = 0;
  if (!read_varints(reader, largest, frame.ack.ack_delay)) return kEncodingError;
  if (WireError error = AckRangeView::parse(reader, largest, frame.ack.ranges); error != kOk)
    return error;
  if (with_ecn) {
    EcnCounts& ecn = frame.ack.ecn;
    if (!read_varints(reader, ecn.ect0, ecn.ect1, ecn.ecn_ce)) return kEncodingError;
  }
  return kOk;
}

WireError decode_reset_stream(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kResetStream;
  ResetStreamFrame& f = frame.reset_stream = {};
  return read_varints(reader, f.stream_id, f.application_error_code, f.final_size) ? kOk
                                                                                   : kEncodingError;
}

WireError decode_stop_sending(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kStopSending;
  StopSendingFrame& f = frame.stop_sending = {};
  return read_varints(reader, f.stream_id, f.application_error_code) ? kOk : kEncodingError;
}

WireError decode_crypto(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kCrypto;
  CryptoFrame& f = frame.crypto = {};
  if (!reader.read_varint(f.offset) || !read_length_prefixed(reader, f.data)) return kEncodingError;
  return within_offset_limit(f.offset, f.data.size()) ? kOk : kEncodingError;
}

WireError decode_new_token(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kNewToken;
  NewTokenFrame& f = frame.new_token = {};
  if (!read_length_prefixed(reader, f.token)) return kEncodingError;
  // An empty token is FRAME_ENCODING_ERROR for a client (§19.7); a server
  // rejects any NEW_TOKEN anyway (frame_validity.h).
  return f.token.empty() ? kEncodingError : kOk;
}

WireError decode_stream(ByteReader& reader, uint8_t type, Frame& frame) {
  frame.type = FrameType::kStream;
  StreamFrame& f = frame.stream = {};
  f.has_offset = (type & 0x04) != 0;
  f.has_length = (type & 0x02) != 0;
  f.fin = (type & 0x01) != 0;
  if (!reader.read_varint(f.stream_id)) return kEncodingError;
  if (f.has_offset && !reader.read_varint(f.offset)) return kEncodingError;
  if (f.has_length) {
    if (!read_length_prefixed(reader, f.data)) return kEncodingError;
  } else {
    // Without LEN the data runs to the end of the packet (§19.8).
    f.data = reader.rest();
    (void)reader.skip(f.data.size());
  }
  return within_offset_limit(f.offset, f.data.size()) ? kOk : kEncodingError;
}

// MAX_DATA and DATA_BLOCKED, MAX_STREAM_DATA and STREAM_DATA_BLOCKED, and
// MAX_STREAMS and STREAMS_BLOCKED share layouts; each is stored in the union
// member that its type names.
WireError decode_data_limit(ByteReader& reader, FrameType type, Frame& frame) {
  DataLimitFrame f;
  if (!reader.read_varint(f.maximum_data)) return kEncodingError;
  frame.type = type;
  if (type == FrameType::kMaxData) {
    frame.max_data = f;
  } else {
    frame.data_blocked = f;
  }
  return kOk;
}

WireError decode_stream_data_limit(ByteReader& reader, FrameType type, Frame& frame) {
  StreamDataLimitFrame f;
  if (!read_varints(reader, f.stream_id, f.maximum_stream_data)) return kEncodingError;
  frame.type = type;
  if (type == FrameType::kMaxStreamData) {
    frame.max_stream_data = f;
  } else {
    frame.stream_data_blocked = f;
  }
  return kOk;
}

WireError decode_streams_limit(ByteReader& reader, FrameType type, Frame& frame) {
  StreamsLimitFrame f;
  if (!reader.read_varint(f.maximum_streams)) return kEncodingError;
  // MAX_STREAMS: FRAME_ENCODING_ERROR (§19.11). STREAMS_BLOCKED: the RFC
  // allows STREAM_LIMIT_ERROR or FRAME_ENCODING_ERROR (§19.14); we use the
  // same code for both, as the value is malformed in itself.
  if (f.maximum_streams > StreamsLimitFrame::kMaxStreams) return kEncodingError;
  frame.type = type;
  if (type == FrameType::kMaxStreamsBidi || type == FrameType::kMaxStreamsUni) {
    frame.max_streams = f;
  } else {
    frame.streams_blocked = f;
  }
  return kOk;
}

WireError decode_new_connection_id(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kNewConnectionId;
  NewConnectionIdFrame& f = frame.new_connection_id = {};
  uint8_t length = 0;
  if (!read_varints(reader, f.sequence_number, f.retire_prior_to) || !reader.read_u8(length))
    return kEncodingError;
  if (length < 1 || length > kMaxConnectionIdLength) return kEncodingError;
  std::span<const uint8_t> token;
  if (!reader.read_bytes(length, f.connection_id) ||
      !reader.read_bytes(NewConnectionIdFrame::kResetTokenLength, token))
    return kEncodingError;
  std::memcpy(f.stateless_reset_token.data(), token.data(), token.size());
  return f.retire_prior_to <= f.sequence_number ? kOk : kEncodingError;
}

WireError decode_retire_connection_id(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kRetireConnectionId;
  frame.retire_connection_id = {};
  return reader.read_varint(frame.retire_connection_id.sequence_number) ? kOk : kEncodingError;
}

WireError decode_path_data(ByteReader& reader, FrameType type, Frame& frame) {
  PathDataFrame f;
  std::span<const uint8_t> data;
  if (!reader.read_bytes(f.data.size(), data)) return kEncodingError;
  std::memcpy(f.data.data(), data.data(), data.size());
  frame.type = type;
  if (type == FrameType::kPathChallenge) {
    frame.path_challenge = f;
  } else {
    frame.path_response = f;
  }
  return kOk;
}

WireError decode_connection_close(ByteReader& reader, FrameType type, Frame& frame) {
  frame.type = type;
  ConnectionCloseFrame& f = frame.connection_close = {};
  if (!reader.read_varint(f.error_code)) return kEncodingError;
  if (type == FrameType::kConnectionCloseTransport && !reader.read_varint(f.frame_type))
    return kEncodingError;
  // The reason phrase is meant to be UTF-8 but is not checked (§19.19).
  return read_length_prefixed(reader, f.reason_phrase) ? kOk : kEncodingError;
}

WireError decode_datagram(ByteReader& reader, bool has_length, Frame& frame) {
  frame.type = FrameType::kDatagram;
  DatagramFrame& f = frame.datagram = {};
  f.has_length = has_length;
  if (has_length) return read_length_prefixed(reader, f.data) ? kOk : kEncodingError;
  f.data = reader.rest();  // type 0x30 runs to the end of the packet (RFC 9221 §4)
  (void)reader.skip(f.data.size());
  return kOk;
}

WireError decode_ack_frequency(ByteReader& reader, Frame& frame) {
  frame.type = FrameType::kAckFrequency;
  AckFrequencyFrame& f = frame.ack_frequency = {};
  // Whether the values are acceptable (e.g. against min_ack_delay) is the
  // connection's call; the wire only checks that they are there.
  return read_varints(reader, f.sequence_number, f.ack_eliciting_threshold,
                      f.requested_max_ack_delay_us, f.reordering_threshold)
             ? kOk
             : kEncodingError;
}

void set_empty(FrameType type, Frame& frame) {
  frame.type = type;
  frame.padding = {};  // nothing to carry; keep the union in a known state
}

// Frame types of one byte: every RFC 9000 type, IMMEDIATE_ACK and DATAGRAM.
WireError decode_single_byte_type(ByteReader& reader, uint8_t type, Frame& frame) {
  switch (type) {
    case 0x00: return decode_padding(reader, frame);
    case 0x01: set_empty(FrameType::kPing, frame); return kOk;
    case 0x02: return decode_ack(reader, false, frame);
    case 0x03: return decode_ack(reader, true, frame);
    case 0x04: return decode_reset_stream(reader, frame);
    case 0x05: return decode_stop_sending(reader, frame);
    case 0x06: return decode_crypto(reader, frame);
    case 0x07: return decode_new_token(reader, frame);
    case 0x08:
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x0e:
    case 0x0f: return decode_stream(reader, type, frame);
    case 0x10: return decode_data_limit(reader, FrameType::kMaxData, frame);
    case 0x11: return decode_stream_data_limit(reader, FrameType::kMaxStreamData, frame);
    case 0x12: return decode_streams_limit(reader, FrameType::kMaxStreamsBidi, frame);
    case 0x13: return decode_streams_limit(reader, FrameType::kMaxStreamsUni, frame);
    case 0x14: return decode_data_limit(reader, FrameType::kDataBlocked, frame);
    case 0x15: return decode_stream_data_limit(reader, FrameType::kStreamDataBlocked, frame);
    case 0x16: return decode_streams_limit(reader, FrameType::kStreamsBlockedBidi, frame);
    case 0x17: return decode_streams_limit(reader, FrameType::kStreamsBlockedUni, frame);
    case 0x18: return decode_new_connection_id(reader, frame);
    case 0x19: return decode_retire_connection_id(reader, frame);
    case 0x1a: return decode_path_data(reader, FrameType::kPathChallenge, frame);
    case 0x1b: return decode_path_data(reader, FrameType::kPathResponse, frame);
    case 0x1c: return decode_connection_close(reader, FrameType::kConnectionCloseTransport, frame);
    case 0x1d:
      return decode_connection_close(reader, FrameType::kConnectionCloseApplication, frame);
    case 0x1e: set_empty(FrameType::kHandshakeDone, frame); return kOk;
    case 0x1f: set_empty(FrameType::kImmediateAck, frame); return kOk;
    case 0x30: return decode_datagram(reader, false, frame);
    case 0x31: return decode_datagram(reader, true, frame);
    default: return kEncodingError;  // unknown frame type (§12.4)
  }
}

}  // namespace

DPQUIC_HOT WireError decode_frame(ByteReader& reader, Frame& frame) {
  if (reader.empty()) return kEncodingError;
  const uint8_t first = reader.rest()[0];
  // Fast path: a first byte below 0x40 is a whole one-byte type.
  if (first < 0x40) {
    (void)reader.skip(1);
    return decode_single_byte_type(reader, first, frame);
  }
  const size_t start = reader.position();
  uint64_t type = 0;
  if (!reader.read_varint(type)) return kEncodingError;
  // A frame type MUST use its shortest encoding; §12.4 lets the receiver
  // treat a longer one as PROTOCOL_VIOLATION, which we do.
  if (reader.position() - start != varint_length(type)) return WireError::kProtocolViolation;
  if (type == static_cast<uint64_t>(FrameType::kAckFrequency))
    return decode_ack_frequency(reader, frame);
  return kEncodingError;  // unknown frame type (§12.4)
}

}  // namespace dpquic::wire
