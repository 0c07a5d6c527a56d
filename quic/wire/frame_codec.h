// Decoding and encoding of QUIC frames (see frames.h).
//
// Decoding is strict (RFC 9000 §12.4, §19): a truncated frame, a length that
// runs past the packet, an unknown frame type, or a field outside its RFC
// range is kFrameEncodingError; a frame type in a longer varint encoding than
// necessary is kProtocolViolation (the MAY of §12.4, taken). Decoding never
// reads outside the payload and never allocates.
//
// Encoding writes into a lent buffer and is all or nothing: an encoder
// returns false, and writes nothing, when the frame does not fit or holds a
// value the decoder would reject.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "quic/wire/ack_ranges.h"
#include "quic/wire/errors.h"
#include "quic/wire/frames.h"
#include "quic/wire/varint.h"

namespace dpquic::wire {

// --- Decoding -----------------------------------------------------------------

// Decodes the frame at the reader's position into `frame` and moves the reader
// past it. A run of PADDING bytes becomes one kPadding frame. An empty reader
// is kFrameEncodingError. After an error the reader's position is unspecified
// and the rest of the payload must not be processed.
WireError decode_frame(ByteReader& reader, Frame& frame);

// Iterates the frames of a decrypted packet payload:
//   FrameDecoder decoder(payload);
//   while (!decoder.done()) {
//     if (WireError e = decoder.next(frame); e != WireError::kOk) return e;
//     ...
//   }
// (A payload without frames is the caller's PROTOCOL_VIOLATION, §12.4.)
class FrameDecoder {
 public:
  explicit FrameDecoder(std::span<const uint8_t> payload) : reader_(payload) {}

  bool done() const { return reader_.empty(); }
  WireError next(Frame& frame) { return decode_frame(reader_, frame); }
  // Offset of the next frame within the payload.
  size_t position() const { return reader_.position(); }

 private:
  ByteReader reader_;
};

// --- Encoding -----------------------------------------------------------------

// Any frame. For kPadding writes padding.length zero bytes; for ACK frames,
// re-encodes the received range view (round trips); for STREAM and DATAGRAM,
// has_length (and StreamFrame::has_offset) choose the wire type.
bool encode_frame(ByteWriter& writer, const Frame& frame);

// `length` PADDING bytes.
bool encode_padding(ByteWriter& writer, size_t length);

// An ACK frame for `ranges` (descending, disjoint, non-adjacent; see
// encode_ack_ranges) with the raw, already-scaled `ack_delay` field. With
// `ecn` it is an ACK_ECN frame (0x03) carrying those counts.
bool encode_ack_frame(ByteWriter& writer, std::span<const AckRange> ranges, uint64_t ack_delay,
                      const EcnCounts* ecn = nullptr);

// A whole STREAM frame. The OFF bit is set when offset != 0 or has_offset.
bool encode_stream_frame(ByteWriter& writer, const StreamFrame& frame);
// A whole CRYPTO frame.
bool encode_crypto_frame(ByteWriter& writer, const CryptoFrame& frame);

// Only the header of a STREAM/CRYPTO frame whose `data_length` bytes of data
// the caller places right after it (e.g. encrypting straight from the
// application's buffer into the packet).
// (The STREAM header is inline: the burst builder writes one per packet.)
inline bool encode_stream_frame_header(ByteWriter& writer, uint64_t stream_id, uint64_t offset,
                                       uint64_t data_length, bool fin, bool has_length);
bool encode_crypto_frame_header(ByteWriter& writer, uint64_t offset, uint64_t data_length);

// --- Sizes for packet builders --------------------------------------------------

// Bytes of a STREAM/CRYPTO frame header (type through Length) for these
// values, as the encoders above write it; 0 if the frame would be invalid
// (offset + data_length above 2^62 - 1).
inline size_t stream_frame_header_size(uint64_t stream_id, uint64_t offset, uint64_t data_length,
                                       bool has_length);
size_t crypto_frame_header_size(uint64_t offset, uint64_t data_length);

// The most data bytes a STREAM/CRYPTO frame can carry when header plus data
// must fit in `available` bytes; 0 when not even one byte of data fits.
// Never more than the offset limit of 2^62 - 1 allows.
uint64_t max_stream_data_length(size_t available, uint64_t stream_id, uint64_t offset,
                                bool has_length);
uint64_t max_crypto_data_length(size_t available, uint64_t offset);

// --- Inline definitions ---------------------------------------------------------

// The type byte of a STREAM frame (RFC 9000 §19.8): 0x08 plus OFF, LEN, FIN.
constexpr uint8_t stream_frame_type(bool has_offset, bool has_length, bool fin) {
  return static_cast<uint8_t>(0x08 | (has_offset ? 0x04 : 0) | (has_length ? 0x02 : 0) |
                              (fin ? 0x01 : 0));
}

inline size_t stream_frame_header_size(uint64_t stream_id, uint64_t offset, uint64_t data_length,
                                       bool has_length) {
  if (stream_id > kVarintMax || offset > kVarintMax || data_length > kVarintMax - offset) return 0;
  return 1 + varint_length(stream_id) + (offset != 0 ? varint_length(offset) : 0) +
         (has_length ? varint_length(data_length) : 0);
}

inline bool encode_stream_frame_header(ByteWriter& writer, uint64_t stream_id, uint64_t offset,
                                       uint64_t data_length, bool fin, bool has_length) {
  // Sized first, so the writes below cannot fail part way: all or nothing.
  const size_t size = stream_frame_header_size(stream_id, offset, data_length, has_length);
  if (size == 0 || size > writer.remaining()) return false;
  (void)writer.write_u8(stream_frame_type(offset != 0, has_length, fin));
  (void)writer.write_varint(stream_id);
  if (offset != 0) (void)writer.write_varint(offset);
  if (has_length) (void)writer.write_varint(data_length);
  return true;
}

}  // namespace dpquic::wire
