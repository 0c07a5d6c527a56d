#include "quic/transmit/packet_writer.h"

#include <algorithm>
#include <cstring>

#include "quic/wire/frame_codec.h"

namespace dpquic::transmit {

void GatherStorage::clear() {
  for (size_t i = 0; i < chunk_count; ++i) chunks[i].reset();
  chunk_count = 0;
  segment_count = 0;
}

bool PacketPayloadWriter::append_stream_data(const Chunk& chunk, size_t offset, size_t length) {
  // Slots even for no data: a zero-length append still records its segment
  // and reference (dropped again if the packet is abandoned).
  if (!can_reference(chunk, offset, length) || !has_slots_for_data() ||
      length > writer_.remaining()) {
    return false;
  }
  append_checked(chunk, offset, length);
  return true;
}

void PacketPayloadWriter::append_checked(const Chunk& chunk, size_t offset, size_t length) {
  uint8_t* at = payload_.data() + writer_.position();
  // The first bytes of the data up to the next 16-byte block of the payload
  // are copied in place, so the out-of-place segment starts on an AES-GCM
  // block boundary: a segment that starts mid-block sends the AEAD through
  // its slower partial-block path.
  const size_t lead = std::min(length, (size_t{0} - writer_.position()) & 15);
  if (lead != 0) std::memcpy(at, chunk.data() + offset, lead);
  // Close the open in-place segment there, add the data, open the next one.
  crypto::GatherSegment* segments = &storage_.segments[storage_.segment_count];
  segments[-1].length = static_cast<size_t>(at + lead - segments[-1].out);
  segments[0] = crypto::GatherSegment{chunk.data() + offset + lead, at + lead, length - lead};
  segments[1] = crypto::GatherSegment{at + length, at + length, 0};
  storage_.segment_count += 2;
  // One reference per run of data from the same owner: consecutive frames
  // from one chunk (the common case) do not churn its count. A reference
  // taken by an earlier packet is not dropped if this one is abandoned,
  // which is right: that packet still uses it.
  if (storage_.chunk_count == 0 ||
      !storage_.chunks[storage_.chunk_count - 1].shares_owner_with(chunk)) {
    storage_.chunks[storage_.chunk_count++] = chunk;
  }
  (void)writer_.advance(length);
}

bool PacketPayloadWriter::write_stream_frame(uint64_t stream_id, uint64_t stream_offset, bool fin,
                                             const Chunk& chunk, size_t chunk_offset,
                                             size_t length) {
  if (!can_reference(chunk, chunk_offset, length)) return false;
  // Without a Length field the data must run to the packet's end exactly.
  const size_t bare = wire::stream_frame_header_size(stream_id, stream_offset, length, false);
  const size_t room = writer_.remaining();
  if (bare == 0 || bare > room || length > room - bare) return false;
  const bool has_length = room - bare != length;
  const size_t header = has_length ? bare + wire::varint_length(length) : bare;
  if (header > room || length > room - header) return false;
  write_sized_stream_frame(stream_id, stream_offset, fin, chunk, chunk_offset, length, has_length);
  return true;
}

size_t PacketPayloadWriter::write_stream_frame_up_to(uint64_t stream_id, uint64_t stream_offset,
                                                     const Chunk& chunk, size_t chunk_offset,
                                                     size_t up_to, bool fin_if_whole) {
  if (up_to == 0 || !can_reference(chunk, chunk_offset, up_to)) return 0;
  const size_t bare = wire::stream_frame_header_size(stream_id, stream_offset, up_to, false);
  const size_t room = writer_.remaining();
  if (bare == 0 || bare >= room) return 0;
  size_t length = room - bare;  // the rest of the packet, without a Length field
  bool has_length = false;
  if (up_to < length) {
    // Shorter than the rest: with a Length field, as much as fits with one.
    has_length = true;
    length = up_to;
    if (bare + wire::varint_length(length) + length > room) {
      length = static_cast<size_t>(
          wire::max_stream_data_length(room, stream_id, stream_offset, /*has_length=*/true));
      if (length == 0) return 0;
    }
  }
  write_sized_stream_frame(stream_id, stream_offset, fin_if_whole && length == up_to, chunk,
                           chunk_offset, length, has_length);
  return length;
}

void PacketPayloadWriter::write_sized_stream_frame(uint64_t stream_id, uint64_t stream_offset,
                                                   bool fin, const Chunk& chunk,
                                                   size_t chunk_offset, size_t length,
                                                   bool has_length) {
  (void)wire::encode_stream_frame_header(writer_, stream_id, stream_offset, length, fin,
                                         has_length);
  if (length != 0) append_checked(chunk, chunk_offset, length);
}

bool PacketPayloadWriter::write_crypto_frame(uint64_t crypto_offset, const Chunk& chunk,
                                             size_t chunk_offset, size_t length) {
  if (!can_reference(chunk, chunk_offset, length)) return false;
  const size_t header = wire::crypto_frame_header_size(crypto_offset, length);
  if (header == 0 || header > writer_.remaining() || length > writer_.remaining() - header) {
    return false;
  }
  if (!wire::encode_crypto_frame_header(writer_, crypto_offset, length)) return false;
  if (length != 0) append_checked(chunk, chunk_offset, length);
  return true;
}

void PacketPayloadWriter::abandon() {
  storage_.segment_count = first_segment_;
  while (storage_.chunk_count > first_chunk_) storage_.chunks[--storage_.chunk_count].reset();
}

}  // namespace dpquic::transmit
