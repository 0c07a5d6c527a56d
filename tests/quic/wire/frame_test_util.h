// Shared by the frame tests: exactly-sized input copies (so AddressSanitizer
// catches any over-read) and one sample of every frame type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"

namespace dpquic::wire::testing {

// Heap copies whose size is exactly the input's, alive as long as this object.
class ExactBuffers {
 public:
  std::span<const uint8_t> copy(std::span<const uint8_t> bytes) {
    buffers_.push_back(std::make_unique<uint8_t[]>(bytes.size()));
    std::copy(bytes.begin(), bytes.end(), buffers_.back().get());
    return {buffers_.back().get(), bytes.size()};
  }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
};

inline std::vector<uint8_t> encode_or_die(const Frame& frame) {
  std::vector<uint8_t> buffer(4096);
  ByteWriter writer(buffer);
  if (!encode_frame(writer, frame)) std::abort();
  buffer.resize(writer.position());
  return buffer;
}

// Static bytes the sample frames refer to.
inline constexpr uint8_t kSampleData[] = {'h', 'e', 'l', 'l', 'o', ' ', 'q', 'u', 'i', 'c'};
inline constexpr uint8_t kSampleCid[] = {0xc0, 0xff, 0xee, 0x00, 0x01, 0x02, 0x03, 0x04};

// An ACK frame decoded from static bytes (a range view needs bytes to view).
inline Frame sample_ack(bool with_ecn) {
  static uint8_t storage[2][64];
  const AckRange ranges[] = {{95, 100}, {86, 90}, {10, 20}, {0, 3}};
  const EcnCounts ecn{7, 8, 9};
  ByteWriter writer(storage[with_ecn]);
  if (!encode_ack_frame(writer, ranges, 25, with_ecn ? &ecn : nullptr)) std::abort();
  ByteReader reader(writer.written());
  Frame frame;
  if (decode_frame(reader, frame) != WireError::kOk) std::abort();
  return frame;
}

// One frame of every FrameType, with non-trivial field values. Frames that
// run to the end of the packet (STREAM/DATAGRAM without Length) are not
// included; every frame here can be followed by another.
inline std::vector<Frame> sample_frames() {
  std::vector<Frame> frames;
  auto add = [&](FrameType type) -> Frame& {
    frames.emplace_back();
    frames.back().type = type;
    return frames.back();
  };
  add(FrameType::kPadding).padding.length = 3;
  add(FrameType::kPing);
  frames.push_back(sample_ack(false));
  frames.push_back(sample_ack(true));
  add(FrameType::kResetStream).reset_stream = {4, 0x1234, 1'000'000};
  add(FrameType::kStopSending).stop_sending = {8, 77};
  add(FrameType::kCrypto).crypto = {1000, kSampleData};
  add(FrameType::kNewToken).new_token = {kSampleData};
  add(FrameType::kStream).stream = {.stream_id = 4,
                                    .offset = 70000,
                                    .data = kSampleData,
                                    .fin = true,
                                    .has_offset = true,
                                    .has_length = true};
  add(FrameType::kMaxData).max_data = {1 << 20};
  add(FrameType::kMaxStreamData).max_stream_data = {4, 65536};
  add(FrameType::kMaxStreamsBidi).max_streams = {100};
  add(FrameType::kMaxStreamsUni).max_streams = {StreamsLimitFrame::kMaxStreams};
  add(FrameType::kDataBlocked).data_blocked = {1 << 20};
  add(FrameType::kStreamDataBlocked).stream_data_blocked = {8, 4096};
  add(FrameType::kStreamsBlockedBidi).streams_blocked = {100};
  add(FrameType::kStreamsBlockedUni).streams_blocked = {3};
  add(FrameType::kNewConnectionId).new_connection_id = {
      .sequence_number = 5,
      .retire_prior_to = 2,
      .connection_id = kSampleCid,
      .stateless_reset_token = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};
  add(FrameType::kRetireConnectionId).retire_connection_id = {3};
  add(FrameType::kPathChallenge).path_challenge = {{1, 2, 3, 4, 5, 6, 7, 8}};
  add(FrameType::kPathResponse).path_response = {{8, 7, 6, 5, 4, 3, 2, 1}};
  add(FrameType::kConnectionCloseTransport).connection_close = {0x0a, 0x08, kSampleData};
  add(FrameType::kConnectionCloseApplication).connection_close = {0x101, 0, kSampleData};
  add(FrameType::kHandshakeDone);
  add(FrameType::kImmediateAck);
  add(FrameType::kDatagram).datagram = {kSampleData, true};
  add(FrameType::kAckFrequency).ack_frequency = {1, 10, 25000, 3};
  return frames;
}

// All sample frames back to back: a payload with every frame type.
inline std::vector<uint8_t> every_frame_payload() {
  std::vector<uint8_t> payload;
  for (const Frame& frame : sample_frames()) {
    const std::vector<uint8_t> bytes = encode_or_die(frame);
    payload.insert(payload.end(), bytes.begin(), bytes.end());
  }
  return payload;
}

}  // namespace dpquic::wire::testing
