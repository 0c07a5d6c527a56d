#include "quic/transmit/packet_writer.h"

#include "quic/wire/frame_codec.h"

namespace dpquic::transmit {

void GatherStorage::clear() {
  for (size_t i = 0; i < chunk_count; ++i) chunks[i].reset();
  chunk_count = 0;
  segment_count = 0;
}

PacketPayloadWriter::PacketPayloadWriter(std::span<uint8_t> payload, GatherStorage& storage)
    : payload_(payload),
      writer_(payload),
      storage_(storage),
      first_segment_(storage.segment_count),
      first_chunk_(storage.chunk_count) {
  storage_.segments[storage_.segment_count++] =
      crypto::GatherSegment{payload.data(), payload.data(), 0};
}

bool PacketPayloadWriter::append_stream_data(const Chunk& chunk, size_t offset, size_t length) {
  if (!chunk.valid() || offset > chunk.size() || length > chunk.size() - offset ||
      length > writer_.remaining() || !has_slots_for_data()) {
    return false;
  }
  uint8_t* at = payload_.data() + writer_.position();
  // Close the open in-place segment here, add the data, open the next one.
  crypto::GatherSegment& open = storage_.segments[storage_.segment_count - 1];
  open.length = static_cast<size_t>(at - open.out);
  storage_.segments[storage_.segment_count++] =
      crypto::GatherSegment{chunk.data() + offset, at, length};
  storage_.segments[storage_.segment_count++] = crypto::GatherSegment{at + length, at + length, 0};
  storage_.chunks[storage_.chunk_count++] = chunk;
  (void)writer_.advance(length);
  return true;
}

bool PacketPayloadWriter::write_stream_frame(uint64_t stream_id, uint64_t stream_offset, bool fin,
                                             const Chunk& chunk, size_t chunk_offset,
                                             size_t length) {
  if (!chunk.valid() || chunk_offset > chunk.size() || length > chunk.size() - chunk_offset ||
      (length != 0 && !has_slots_for_data())) {
    return false;
  }
  // Without a Length field the data must run to the packet's end exactly.
  const size_t bare = wire::stream_frame_header_size(stream_id, stream_offset, length, false);
  const bool fills =
      bare != 0 && bare <= writer_.remaining() && writer_.remaining() - bare == length;
  const bool has_length = !fills;
  const size_t header =
      wire::stream_frame_header_size(stream_id, stream_offset, length, has_length);
  if (header == 0 || header > writer_.remaining() || length > writer_.remaining() - header) {
    return false;
  }
  if (!wire::encode_stream_frame_header(writer_, stream_id, stream_offset, length, fin,
                                        has_length)) {
    return false;
  }
  return length == 0 || append_stream_data(chunk, chunk_offset, length);
}

bool PacketPayloadWriter::write_crypto_frame(uint64_t crypto_offset, const Chunk& chunk,
                                             size_t chunk_offset, size_t length) {
  if (!chunk.valid() || chunk_offset > chunk.size() || length > chunk.size() - chunk_offset ||
      (length != 0 && !has_slots_for_data())) {
    return false;
  }
  const size_t header = wire::crypto_frame_header_size(crypto_offset, length);
  if (header == 0 || header > writer_.remaining() || length > writer_.remaining() - header) {
    return false;
  }
  if (!wire::encode_crypto_frame_header(writer_, crypto_offset, length)) return false;
  return length == 0 || append_stream_data(chunk, chunk_offset, length);
}

void PacketPayloadWriter::finish(size_t& first_segment, size_t& segment_count) {
  crypto::GatherSegment& open = storage_.segments[storage_.segment_count - 1];
  open.length = static_cast<size_t>(payload_.data() + writer_.position() - open.out);
  first_segment = first_segment_;
  segment_count = storage_.segment_count - first_segment_;
}

void PacketPayloadWriter::abandon() {
  storage_.segment_count = first_segment_;
  while (storage_.chunk_count > first_chunk_) storage_.chunks[--storage_.chunk_count].reset();
}

}  // namespace dpquic::transmit
