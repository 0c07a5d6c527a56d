// Frame encoding. Every encoder works on a scratch writer over the unwritten
// tail and commits only when the whole frame fits, so a failed encode leaves
// the caller's writer untouched.
#include <algorithm>

#include "quic/wire/connection_id.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::wire {

namespace {

template <typename... Values>
bool write_varints(ByteWriter& writer, Values... values) {
  return (writer.write_varint(values) && ...);
}

bool write_length_prefixed(ByteWriter& writer, std::span<const uint8_t> bytes) {
  return writer.write_varint(bytes.size()) && writer.write_bytes(bytes);
}

// Runs `write` on a scratch writer over out's tail; commits on success.
template <typename Write>
bool all_or_nothing(ByteWriter& out, Write write) {
  ByteWriter scratch(out.tail());
  if (!write(scratch)) return false;
  return out.advance(scratch.position());
}

bool within_offset_limit(uint64_t offset, uint64_t length) {
  return offset <= kVarintMax && length <= kVarintMax - offset;
}

bool write_stream_header(ByteWriter& w, uint64_t stream_id, uint64_t offset, uint64_t data_length,
                         bool has_offset, bool fin, bool has_length) {
  if (!within_offset_limit(offset, data_length)) return false;
  has_offset = has_offset || offset != 0;
  if (!w.write_u8(stream_frame_type(has_offset, has_length, fin)) || !w.write_varint(stream_id))
    return false;
  if (has_offset && !w.write_varint(offset)) return false;
  return !has_length || w.write_varint(data_length);
}

bool write_crypto_header(ByteWriter& w, uint64_t offset, uint64_t data_length) {
  return within_offset_limit(offset, data_length) &&
         write_varints(w, uint64_t{0x06}, offset, data_length);
}

bool write_ack(ByteWriter& w, FrameType type, uint64_t largest, uint64_t ack_delay,
               const EcnCounts& ecn, auto write_ranges) {
  if (!write_varints(w, static_cast<uint64_t>(type), largest, ack_delay) || !write_ranges(w))
    return false;
  return type != FrameType::kAckEcn || write_varints(w, ecn.ect0, ecn.ect1, ecn.ecn_ce);
}

bool write_new_connection_id(ByteWriter& w, const NewConnectionIdFrame& f) {
  const size_t length = f.connection_id.size();
  if (length < 1 || length > kMaxConnectionIdLength || f.retire_prior_to > f.sequence_number)
    return false;
  return write_varints(w, uint64_t{0x18}, f.sequence_number, f.retire_prior_to) &&
         w.write_u8(static_cast<uint8_t>(length)) && w.write_bytes(f.connection_id) &&
         w.write_bytes(f.stateless_reset_token);
}

bool write_connection_close(ByteWriter& w, FrameType type, const ConnectionCloseFrame& f) {
  // The application variant has no Frame Type field: a non-zero frame_type
  // would be silently lost, so the frame would not decode back as given.
  if (type == FrameType::kConnectionCloseApplication && f.frame_type != 0) return false;
  if (!write_varints(w, static_cast<uint64_t>(type), f.error_code)) return false;
  if (type == FrameType::kConnectionCloseTransport && !w.write_varint(f.frame_type)) return false;
  return write_length_prefixed(w, f.reason_phrase);
}

bool write_datagram(ByteWriter& w, const DatagramFrame& f) {
  if (!w.write_u8(f.has_length ? 0x31 : 0x30)) return false;
  return f.has_length ? write_length_prefixed(w, f.data) : w.write_bytes(f.data);
}

// One case per frame type (RFC 9000 §19, RFC 9221, the ACK frequency
// draft): long for that reason alone.
bool write_frame(ByteWriter& w, const Frame& frame) {
  const uint64_t type = static_cast<uint64_t>(frame.type);
  switch (frame.type) {
    case FrameType::kPadding: return frame.padding.length != 0 && w.fill(0, frame.padding.length);
    case FrameType::kPing:
    case FrameType::kHandshakeDone:
    case FrameType::kImmediateAck: return w.write_varint(type);
    case FrameType::kAck:
    case FrameType::kAckEcn: {
      const AckRangeView& ranges = frame.ack.ranges;
      return write_ack(w, frame.type, ranges.largest(), frame.ack.ack_delay, frame.ack.ecn,
                       [&](ByteWriter& rw) { return encode_ack_ranges(rw, ranges); });
    }
    case FrameType::kResetStream: {
      const ResetStreamFrame& f = frame.reset_stream;
      return write_varints(w, type, f.stream_id, f.application_error_code, f.final_size);
    }
    case FrameType::kStopSending:
      return write_varints(w, type, frame.stop_sending.stream_id,
                           frame.stop_sending.application_error_code);
    case FrameType::kCrypto:
      return write_crypto_header(w, frame.crypto.offset, frame.crypto.data.size()) &&
             w.write_bytes(frame.crypto.data);
    case FrameType::kNewToken:
      return !frame.new_token.token.empty() && w.write_varint(type) &&
             write_length_prefixed(w, frame.new_token.token);
    case FrameType::kStream: {
      const StreamFrame& f = frame.stream;
      return write_stream_header(w, f.stream_id, f.offset, f.data.size(), f.has_offset, f.fin,
                                 f.has_length) &&
             w.write_bytes(f.data);
    }
    case FrameType::kMaxData: return write_varints(w, type, frame.max_data.maximum_data);
    case FrameType::kDataBlocked: return write_varints(w, type, frame.data_blocked.maximum_data);
    case FrameType::kMaxStreamData:
      return write_varints(w, type, frame.max_stream_data.stream_id,
                           frame.max_stream_data.maximum_stream_data);
    case FrameType::kStreamDataBlocked:
      return write_varints(w, type, frame.stream_data_blocked.stream_id,
                           frame.stream_data_blocked.maximum_stream_data);
    case FrameType::kMaxStreamsBidi:
    case FrameType::kMaxStreamsUni:
      return frame.max_streams.maximum_streams <= StreamsLimitFrame::kMaxStreams &&
             write_varints(w, type, frame.max_streams.maximum_streams);
    case FrameType::kStreamsBlockedBidi:
    case FrameType::kStreamsBlockedUni:
      return frame.streams_blocked.maximum_streams <= StreamsLimitFrame::kMaxStreams &&
             write_varints(w, type, frame.streams_blocked.maximum_streams);
    case FrameType::kNewConnectionId: return write_new_connection_id(w, frame.new_connection_id);
    case FrameType::kRetireConnectionId:
      return write_varints(w, type, frame.retire_connection_id.sequence_number);
    case FrameType::kPathChallenge:
      return w.write_varint(type) && w.write_bytes(frame.path_challenge.data);
    case FrameType::kPathResponse:
      return w.write_varint(type) && w.write_bytes(frame.path_response.data);
    case FrameType::kConnectionCloseTransport:
    case FrameType::kConnectionCloseApplication:
      return write_connection_close(w, frame.type, frame.connection_close);
    case FrameType::kDatagram: return write_datagram(w, frame.datagram);
    case FrameType::kAckFrequency: {
      const AckFrequencyFrame& f = frame.ack_frequency;
      return write_varints(w, type, f.sequence_number, f.ack_eliciting_threshold,
                           f.requested_max_ack_delay_us, f.reordering_threshold);
    }
  }
  return false;
}

}  // namespace

bool encode_frame(ByteWriter& writer, const Frame& frame) {
  return all_or_nothing(writer, [&](ByteWriter& w) { return write_frame(w, frame); });
}

bool encode_padding(ByteWriter& writer, size_t length) { return writer.fill(0, length); }

bool encode_ack_frame(ByteWriter& writer, std::span<const AckRange> ranges, uint64_t ack_delay,
                      const EcnCounts* ecn) {
  if (ranges.empty()) return false;
  const FrameType type = ecn != nullptr ? FrameType::kAckEcn : FrameType::kAck;
  const EcnCounts counts = ecn != nullptr ? *ecn : EcnCounts{};
  return all_or_nothing(writer, [&](ByteWriter& w) {
    return write_ack(w, type, ranges[0].largest, ack_delay, counts,
                     [&](ByteWriter& rw) { return encode_ack_ranges(rw, ranges); });
  });
}

bool encode_stream_frame(ByteWriter& writer, const StreamFrame& f) {
  return all_or_nothing(writer, [&](ByteWriter& w) {
    return write_stream_header(w, f.stream_id, f.offset, f.data.size(), f.has_offset, f.fin,
                               f.has_length) &&
           w.write_bytes(f.data);
  });
}

bool encode_crypto_frame(ByteWriter& writer, const CryptoFrame& f) {
  return all_or_nothing(writer, [&](ByteWriter& w) {
    return write_crypto_header(w, f.offset, f.data.size()) && w.write_bytes(f.data);
  });
}

bool encode_crypto_frame_header(ByteWriter& writer, uint64_t offset, uint64_t data_length) {
  return all_or_nothing(writer,
                        [&](ByteWriter& w) { return write_crypto_header(w, offset, data_length); });
}

size_t crypto_frame_header_size(uint64_t offset, uint64_t data_length) {
  if (!within_offset_limit(offset, data_length)) return 0;
  return 1 + varint_length(offset) + varint_length(data_length);
}

namespace {

// Most data that fits in `available` after `fixed` header bytes plus, if
// `has_length`, a Length field sized for the data itself; capped so that
// offset + length stays within 2^62 - 1.
uint64_t max_data_after(size_t available, size_t fixed, uint64_t offset, bool has_length) {
  if (fixed == 0 || offset > kVarintMax || available <= fixed) return 0;
  const uint64_t cap = kVarintMax - offset;
  const uint64_t room = available - fixed;
  if (!has_length) return std::min(room, cap);
  uint64_t best = 0;
  // Try each Length field size; the largest value each can both express and
  // fit wins.
  for (size_t field : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    if (room <= field) break;
    const uint64_t field_max = field == 8 ? kVarintMax : (uint64_t{1} << (8 * field - 2)) - 1;
    best = std::max(best, std::min({room - field, field_max, cap}));
  }
  return best;
}

}  // namespace

uint64_t max_stream_data_length(size_t available, uint64_t stream_id, uint64_t offset,
                                bool has_length) {
  if (stream_id > kVarintMax || offset > kVarintMax) return 0;
  const size_t fixed = 1 + varint_length(stream_id) + (offset != 0 ? varint_length(offset) : 0);
  return max_data_after(available, fixed, offset, has_length);
}

uint64_t max_crypto_data_length(size_t available, uint64_t offset) {
  if (offset > kVarintMax) return 0;
  return max_data_after(available, 1 + varint_length(offset), offset, true);
}

}  // namespace dpquic::wire
