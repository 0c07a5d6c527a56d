#pragma once
// Test helpers for send streams: packets built the way the burst builder
// builds them (PacketPayloadWriter over a GatherStorage), materialized as the
// sealer would and decoded back, and the peer's reassembly of what arrives.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "quic/conn/send_stream.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_writer.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"

namespace dpquic::conn::testing {

using transmit::Chunk;
using transmit::ChunkPool;
using transmit::GatherStorage;
using transmit::PacketPayloadWriter;

constexpr uint64_t kStreamId = 4;
constexpr uint64_t kLots = uint64_t{1} << 40;

// One STREAM frame as sent: its record and what it decoded to on the wire.
struct SentFrame {
  StreamFrameRecord record;
  uint64_t new_bytes = 0;
  std::vector<uint8_t> data;  // copied out of the packet
};

// The peer's reassembly of delivered frames; every byte delivered twice must
// be identical.
class Receiver {
 public:
  void deliver(const SentFrame& frame) {
    const uint64_t end = frame.record.offset + frame.record.length;
    if (bytes_.size() < end) {
      bytes_.resize(end);
      have_.resize(end, false);
    }
    for (size_t i = 0; i < frame.data.size(); ++i) {
      const uint64_t at = frame.record.offset + i;
      if (have_[at]) {
        EXPECT_EQ(bytes_[at], frame.data[i]) << "offset " << at;
      }
      bytes_[at] = frame.data[i];
      have_[at] = true;
    }
    if (frame.record.fin) {
      if (fin_) {
        EXPECT_EQ(final_size_, end);
      }
      fin_ = true;
      final_size_ = end;
    }
  }
  bool complete() const {
    return fin_ && bytes_.size() == final_size_ &&
           std::all_of(have_.begin(), have_.end(), [](bool b) { return b; });
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  bool fin() const { return fin_; }
  uint64_t final_size() const { return final_size_; }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<bool> have_;
  bool fin_ = false;
  uint64_t final_size_ = 0;
};

// Builds packets the way the burst builder does: a PacketPayloadWriter over a
// payload buffer with a GatherStorage, then the gather segments materialized
// (segment.in copied to segment.out, as the sealer's AEAD would) and the
// payload decoded back frame by frame.
class PacketBench {
 public:
  PacketBench() : storage_(std::make_unique<GatherStorage>()) {}

  // Fills one packet of `size` payload bytes with STREAM frames of `stream`,
  // charging new bytes to `credit`. Each decoded frame is checked against
  // the record write_stream_frame() returned.
  std::vector<SentFrame> send(SendStream& stream, size_t size, uint64_t& credit) {
    buffer_.assign(size, 0xee);
    PacketPayloadWriter writer(std::span<uint8_t>(buffer_), *storage_);
    std::vector<SentFrame> frames;
    StreamFrameRecord record;
    uint64_t new_bytes = 0;
    const uint64_t limit = stream.peer_max_stream_data();
    while (stream.write_stream_frame(writer, credit, record, new_bytes)) {
      EXPECT_LE(new_bytes, credit);
      EXPECT_LE(record.offset + record.length, limit) << "beyond the stream limit";
      credit -= new_bytes;
      frames.push_back(SentFrame{record, new_bytes, {}});
    }
    size_t first = 0;
    size_t count = 0;
    writer.finish(first, count);
    for (size_t i = first; i < first + count; ++i) {
      const crypto::GatherSegment& segment = storage_->segments[i];
      if (segment.in != segment.out && segment.length != 0) {
        std::memcpy(segment.out, segment.in, segment.length);
      }
    }
    wire::FrameDecoder decoder(std::span<const uint8_t>(buffer_.data(), writer.written()));
    size_t index = 0;
    while (!decoder.done()) {
      wire::Frame frame;
      if (decoder.next(frame) != wire::WireError::kOk) {
        ADD_FAILURE() << "undecodable payload";
        break;
      }
      if (frame.type != wire::FrameType::kStream || index >= frames.size()) {
        ADD_FAILURE() << "unexpected frame " << static_cast<int>(frame.type);
        break;
      }
      SentFrame& sent = frames[index++];
      EXPECT_EQ(frame.stream.stream_id, stream.id());
      EXPECT_EQ(frame.stream.offset, sent.record.offset);
      EXPECT_EQ(frame.stream.data.size(), sent.record.length);
      EXPECT_EQ(frame.stream.fin, sent.record.fin);
      sent.data.assign(frame.stream.data.begin(), frame.stream.data.end());
    }
    EXPECT_EQ(index, frames.size());
    last_written_ = writer.written();
    storage_->clear();  // the packet is sealed: its chunk references go
    return frames;
  }

  std::vector<SentFrame> send(SendStream& stream, size_t size) {
    uint64_t credit = kLots;
    return send(stream, size, credit);
  }

  size_t last_written() const { return last_written_; }

 private:
  std::unique_ptr<GatherStorage> storage_;
  std::vector<uint8_t> buffer_;
  size_t last_written_ = 0;
};

inline std::vector<uint8_t> pattern(size_t length, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> bytes(length);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

inline void ack_all(SendStream& stream, Receiver& receiver, const std::vector<SentFrame>& frames) {
  for (const SentFrame& frame : frames) {
    receiver.deliver(frame);
    stream.on_stream_frame_acked(frame.record);
  }
}

// Decodes exactly one frame from `bytes`.
inline wire::Frame decode_one(std::span<const uint8_t> bytes) {
  wire::FrameDecoder decoder(bytes);
  wire::Frame frame;
  EXPECT_EQ(decoder.next(frame), wire::WireError::kOk);
  EXPECT_TRUE(decoder.done());
  return frame;
}

}  // namespace dpquic::conn::testing
