#pragma once
// Writing one packet's payload: ordinary frames in place, stream data by
// reference.
//
// The source writes ACK, CRYPTO, flow-control and other frames through
// frames(), a ByteWriter over the packet's payload in the datagram buffer.
// Stream data is not copied: append_stream_data() reserves its bytes in the
// packet and records a gather segment pointing into the chunk, and the burst
// keeps a reference to the chunk until it is sealed. The AEAD later reads the
// chunk once, encrypting straight into the reserved bytes.
//
// The payload ends where the packet must end (the datagram's room minus the
// AEAD tag); remaining() is what is left. Everything is all-or-nothing: a
// call that does not fit writes and records nothing.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/aead_gather.h"
#include "quic/transmit/chunk.h"
#include "quic/wire/varint.h"

namespace dpquic::transmit {

// Gather segments and chunk references of one burst, owned by the builder
// and reused for every burst.
inline constexpr size_t kMaxSegmentsPerBurst = 2048;
inline constexpr size_t kMaxChunkRefsPerBurst = 1024;

struct GatherStorage {
  std::array<crypto::GatherSegment, kMaxSegmentsPerBurst> segments{};
  size_t segment_count = 0;
  std::array<Chunk, kMaxChunkRefsPerBurst> chunks;
  size_t chunk_count = 0;

  // Drops the chunk references and forgets the segments.
  void clear();
};

class PacketPayloadWriter {
 public:
  // Opens the packet's first segment (in place). The builder checks
  // has_room_for_packet() first.
  PacketPayloadWriter(std::span<uint8_t> payload, GatherStorage& storage)
      : payload_(payload),
        writer_(payload),
        storage_(storage),
        first_segment_(storage.segment_count),
        first_chunk_(storage.chunk_count) {
    storage_.segments[storage_.segment_count++] =
        crypto::GatherSegment{payload.data(), payload.data(), 0};
  }

  static bool has_room_for_packet(const GatherStorage& storage) {
    return storage.segment_count + 1 <= storage.segments.size();
  }

  // In-place frames.
  wire::ByteWriter& frames() { return writer_; }
  size_t remaining() const { return writer_.remaining(); }
  size_t written() const { return writer_.position(); }

  // Reserves `length` bytes for chunk[offset, offset + length) at the current
  // position. False (nothing reserved) if the range is outside the chunk, the
  // packet has no room, or the burst is out of segments or chunk references.
  bool append_stream_data(const Chunk& chunk, size_t offset, size_t length);

  // A whole STREAM frame carrying chunk[chunk_offset, +length): its header in
  // place, its data by reference. The Length field is left out only when the
  // frame fills the packet exactly (so padding can never follow a frame
  // without one). False, having written nothing, if it does not fit.
  bool write_stream_frame(uint64_t stream_id, uint64_t stream_offset, bool fin, const Chunk& chunk,
                          size_t chunk_offset, size_t length);
  // The longest STREAM frame of chunk[chunk_offset, + up_to) that fits (the
  // same Length rule), with FIN when it carries all `up_to` bytes and
  // `fin_if_whole`. Returns the data bytes written, 0 when none fit (then
  // nothing was written).
  size_t write_stream_frame_up_to(uint64_t stream_id, uint64_t stream_offset, const Chunk& chunk,
                                  size_t chunk_offset, size_t up_to, bool fin_if_whole);
  // A whole CRYPTO frame whose data comes from a chunk.
  bool write_crypto_frame(uint64_t crypto_offset, const Chunk& chunk, size_t chunk_offset,
                          size_t length);

  // For the builder: closes the last in-place segment at the end of what was
  // written. Returns the packet's segments [first, first + count).
  void finish(size_t& first_segment, size_t& segment_count) {
    crypto::GatherSegment& open = storage_.segments[storage_.segment_count - 1];
    open.length = static_cast<size_t>(payload_.data() + writer_.position() - open.out);
    first_segment = first_segment_;
    segment_count = storage_.segment_count - first_segment_;
  }
  // For the builder: forgets a packet nothing was written to, dropping any
  // chunk references it took (a zero-length append writes nothing).
  void abandon();

 private:
  // A STREAM frame once its size is known to fit.
  void write_sized_stream_frame(uint64_t stream_id, uint64_t stream_offset, bool fin,
                                const Chunk& chunk, size_t chunk_offset, size_t length,
                                bool has_length);
  // append_stream_data() once the range, room and slots are known good.
  void append_checked(const Chunk& chunk, size_t offset, size_t length);
  // chunk[offset, offset + length) exists, and the burst has the segments
  // and chunk reference its data needs (none for no data).
  bool can_reference(const Chunk& chunk, size_t offset, size_t length) const {
    return chunk.valid() && offset <= chunk.size() && length <= chunk.size() - offset &&
           (length == 0 || has_slots_for_data());
  }
  bool has_slots_for_data() const {
    // A data segment, the in-place segment after it, and chunk reference.
    return storage_.segment_count + 2 <= storage_.segments.size() &&
           storage_.chunk_count < storage_.chunks.size();
  }

  std::span<uint8_t> payload_;
  wire::ByteWriter writer_;
  GatherStorage& storage_;
  size_t first_segment_;
  size_t first_chunk_;
};

}  // namespace dpquic::transmit
