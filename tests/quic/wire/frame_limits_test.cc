// Frame limits and malformed input, with exact error codes; encoders refusing
// what does not fit or is invalid; the size helpers packet builders use.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "tests/quic/wire/frame_test_util.h"

namespace dpquic::wire {
namespace {

using Bytes = std::vector<uint8_t>;

// The 8-byte varint encoding of `value`.
Bytes varint8(uint64_t value) {
  Bytes out(8);
  EXPECT_TRUE(varint_encode_fixed(out, value, 8));
  return out;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

class FrameLimitsTest : public ::testing::Test {
 protected:
  WireError decode(const Bytes& bytes) {
    Frame frame;
    return decode(bytes, frame);
  }
  WireError decode(const Bytes& bytes, Frame& frame) {
    ByteReader reader(buffers_.copy(bytes));
    return decode_frame(reader, frame);
  }

  testing::ExactBuffers buffers_;
};

TEST_F(FrameLimitsTest, EmptyInputIsAnError) {
  EXPECT_EQ(decode(Bytes{}), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, UnknownFrameTypesAreFrameEncodingErrors) {
  // One-byte values no frame uses, 0xac (IMMEDIATE_ACK in early drafts), and
  // unassigned multi-byte types in minimal form.
  const Bytes unknown[] = {{0x20},
                           {0x2f},
                           {0x32},
                           {0x3f},
                           {0x40, 0x40},
                           {0x40, 0xac},
                           {0x40, 0xae},
                           {0x7f, 0xff},
                           {0x80, 0x00, 0x40, 0x00},
                           varint8(kVarintMax)};
  for (const Bytes& bytes : unknown) EXPECT_EQ(decode(bytes), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, NonMinimalFrameTypeIsProtocolViolation) {
  // RFC 9000 §12.4: a frame type MUST use its shortest encoding.
  EXPECT_EQ(decode(Bytes{0x40, 0x01}), WireError::kProtocolViolation);  // PING in 2 bytes
  EXPECT_EQ(decode(Bytes{0x40, 0x00}), WireError::kProtocolViolation);  // PADDING in 2 bytes
  EXPECT_EQ(decode(cat({{0x80, 0x00, 0x00, 0x08}, {0x00}})), WireError::kProtocolViolation);
  EXPECT_EQ(decode(cat({{0x80, 0x00, 0x00, 0xaf}, {0x00, 0x00, 0x00, 0x00}})),
            WireError::kProtocolViolation);  // ACK_FREQUENCY in 4 bytes
  EXPECT_EQ(decode(cat({varint8(0x1e)})), WireError::kProtocolViolation);
  // A truncated multi-byte type is a truncation, not a violation.
  EXPECT_EQ(decode(Bytes{0x40}), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, NonMinimalFieldsAreFine) {
  // Only the frame type must be minimal (§16): MAX_DATA 5 as an 8-byte varint.
  Frame frame;
  ASSERT_EQ(decode(cat({{0x10}, varint8(5)}), frame), WireError::kOk);
  EXPECT_EQ(frame.max_data.maximum_data, 5u);
}

TEST_F(FrameLimitsTest, StreamOffsetPlusLengthLimit) {
  const uint64_t top = kVarintMax - 5;
  // OFF|LEN: offset 2^62-6, 5 bytes -> ends exactly at 2^62-1.
  EXPECT_EQ(decode(cat({{0x0e, 0x00}, varint8(top), {0x05, 1, 2, 3, 4, 5}})), WireError::kOk);
  EXPECT_EQ(decode(cat({{0x0e, 0x00}, varint8(top), {0x06, 1, 2, 3, 4, 5, 6}})),
            WireError::kFrameEncodingError);
  // OFF without LEN: the data to the end of the packet counts too.
  EXPECT_EQ(decode(cat({{0x0c, 0x00}, varint8(top), {1, 2, 3, 4, 5}})), WireError::kOk);
  EXPECT_EQ(decode(cat({{0x0c, 0x00}, varint8(top), {1, 2, 3, 4, 5, 6}})),
            WireError::kFrameEncodingError);
  // Offset 2^62-1 with no data is the very end of a stream: fine.
  EXPECT_EQ(decode(cat({{0x0f, 0x00}, varint8(kVarintMax), {0x00}})), WireError::kOk);
}

TEST_F(FrameLimitsTest, StreamLengthBeyondPacketIsFrameEncodingError) {
  EXPECT_EQ(decode(Bytes{0x0a, 0x04, 0x05, 1, 2, 3, 4}), WireError::kFrameEncodingError);
  EXPECT_EQ(decode(cat({{0x0a, 0x04}, varint8(kVarintMax), {1}})), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, CryptoOffsetPlusLengthLimit) {
  const uint64_t top = kVarintMax - 3;
  EXPECT_EQ(decode(cat({{0x06}, varint8(top), {0x03, 1, 2, 3}})), WireError::kOk);
  EXPECT_EQ(decode(cat({{0x06}, varint8(top), {0x04, 1, 2, 3, 4}})),
            WireError::kFrameEncodingError);
  EXPECT_EQ(decode(Bytes{0x06, 0x00, 0x04, 1, 2, 3}), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, MaxStreamsAndStreamsBlockedLimit) {
  const uint64_t limit = StreamsLimitFrame::kMaxStreams;
  EXPECT_EQ(limit, uint64_t{1} << 60);
  for (uint8_t type : {0x12, 0x13, 0x16, 0x17}) {
    Frame frame;
    ASSERT_EQ(decode(cat({{type}, varint8(limit)}), frame), WireError::kOk) << int{type};
    EXPECT_EQ(frame.max_streams.maximum_streams, limit);
    EXPECT_EQ(decode(cat({{type}, varint8(limit + 1)})), WireError::kFrameEncodingError);
    EXPECT_EQ(decode(cat({{type}, varint8(kVarintMax)})), WireError::kFrameEncodingError);
  }
}

TEST_F(FrameLimitsTest, NewConnectionIdRules) {
  const Bytes token(16, 0xee);
  auto frame_bytes = [&](uint8_t seq, uint8_t retire, uint8_t length) {
    return cat({{0x18, seq, retire, length}, Bytes(length, 0xcc), token});
  };
  EXPECT_EQ(decode(frame_bytes(3, 3, 1)), WireError::kOk);
  EXPECT_EQ(decode(frame_bytes(3, 3, 20)), WireError::kOk);
  EXPECT_EQ(decode(frame_bytes(3, 0, 0)), WireError::kFrameEncodingError);   // length 0
  EXPECT_EQ(decode(frame_bytes(3, 0, 21)), WireError::kFrameEncodingError);  // length 21
  EXPECT_EQ(decode(cat({{0x18, 0x03, 0x00, 0xff}, Bytes(255 + 16, 0)})),
            WireError::kFrameEncodingError);
  EXPECT_EQ(decode(frame_bytes(3, 4, 8)), WireError::kFrameEncodingError);  // retire > seq
  // A missing reset-token byte is a truncation.
  Bytes short_token = frame_bytes(3, 0, 8);
  short_token.pop_back();
  EXPECT_EQ(decode(short_token), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, NewTokenMustNotBeEmpty) {
  EXPECT_EQ(decode(Bytes{0x07, 0x00}), WireError::kFrameEncodingError);
  EXPECT_EQ(decode(Bytes{0x07, 0x01, 0xab}), WireError::kOk);
  EXPECT_EQ(decode(Bytes{0x07, 0x03, 0xab, 0xcd}), WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, DeclaredLengthsBeyondThePacket) {
  // CONNECTION_CLOSE reason, DATAGRAM length, ACK range count.
  EXPECT_EQ(decode(Bytes{0x1c, 0x01, 0x00, 0x05, 'a', 'b'}), WireError::kFrameEncodingError);
  EXPECT_EQ(decode(Bytes{0x1d, 0x01, 0x05, 'a', 'b'}), WireError::kFrameEncodingError);
  EXPECT_EQ(decode(Bytes{0x31, 0x02, 'a'}), WireError::kFrameEncodingError);
  EXPECT_EQ(decode(Bytes{0x02, 0x10, 0x00, 0x03, 0x00, 0x00, 0x00}),
            WireError::kFrameEncodingError);
}

TEST_F(FrameLimitsTest, AckBelowZeroIsFrameEncodingError) {
  // First range larger than Largest Acknowledged.
  EXPECT_EQ(decode(Bytes{0x02, 0x05, 0x00, 0x00, 0x06}), WireError::kFrameEncodingError);
  // Gap underflow: [3,5], gap 2 -> largest 3-2-2 < 0.
  EXPECT_EQ(decode(Bytes{0x02, 0x05, 0x00, 0x01, 0x02, 0x02, 0x00}),
            WireError::kFrameEncodingError);
  // Range length underflow: [3,5], gap 0 -> largest 1, length 2.
  EXPECT_EQ(decode(Bytes{0x03, 0x05, 0x00, 0x01, 0x02, 0x00, 0x02, 0x00, 0x00, 0x00}),
            WireError::kFrameEncodingError);
  // Same ranges but reaching exactly 0 are fine.
  EXPECT_EQ(decode(Bytes{0x03, 0x05, 0x00, 0x01, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00}),
            WireError::kOk);
}

TEST_F(FrameLimitsTest, ErrorsInLaterFramesDoNotHideEarlierOnes) {
  const Bytes payload{0x01, 0x1e, 0x20};  // PING, HANDSHAKE_DONE, unknown
  FrameDecoder decoder(buffers_.copy(payload));
  Frame frame;
  EXPECT_EQ(decoder.next(frame), WireError::kOk);
  EXPECT_EQ(decoder.next(frame), WireError::kOk);
  EXPECT_EQ(decoder.next(frame), WireError::kFrameEncodingError);
}

// --- Encoders ------------------------------------------------------------------

TEST(FrameEncodeTest, EveryFrameRefusesATooSmallBufferAndWritesNothing) {
  for (const Frame& frame : testing::sample_frames()) {
    const Bytes encoded = testing::encode_or_die(frame);
    for (size_t size = 0; size < encoded.size(); ++size) {
      Bytes buffer(size + 1, 0x5a);
      ByteWriter writer(std::span<uint8_t>(buffer.data(), size));
      EXPECT_FALSE(encode_frame(writer, frame)) << to_string(frame.type) << " " << size;
      EXPECT_EQ(writer.position(), 0u);
      EXPECT_EQ(buffer[size], 0x5a);  // nothing written past the lent span
    }
  }
}

TEST(FrameEncodeTest, InvalidFramesAreRefused) {
  uint8_t buffer[256];
  auto refuses = [&](const Frame& frame) {
    ByteWriter writer(buffer);
    const bool ok = encode_frame(writer, frame);
    return !ok && writer.position() == 0;
  };
  Frame frame;
  frame.type = FrameType::kNewConnectionId;
  frame.new_connection_id.sequence_number = 1;
  EXPECT_TRUE(refuses(frame));  // empty connection ID
  const Bytes cid21(21, 1), cid8(8, 1);
  frame.new_connection_id.connection_id = cid21;
  EXPECT_TRUE(refuses(frame));
  frame.new_connection_id.connection_id = cid8;
  frame.new_connection_id.retire_prior_to = 2;
  EXPECT_TRUE(refuses(frame));  // retire prior to > sequence number

  frame.type = FrameType::kMaxStreamsUni;
  frame.max_streams.maximum_streams = StreamsLimitFrame::kMaxStreams + 1;
  EXPECT_TRUE(refuses(frame));
  frame.type = FrameType::kStreamsBlockedBidi;
  frame.streams_blocked.maximum_streams = StreamsLimitFrame::kMaxStreams + 1;
  EXPECT_TRUE(refuses(frame));

  frame.type = FrameType::kStream;
  frame.stream = {.stream_id = 0, .offset = kVarintMax, .data = cid8};
  EXPECT_TRUE(refuses(frame));
  frame.stream.offset = kVarintMax + 1;
  frame.stream.data = {};
  EXPECT_TRUE(refuses(frame));

  frame.type = FrameType::kCrypto;
  frame.crypto = {.offset = kVarintMax - 7, .data = cid8};
  EXPECT_TRUE(refuses(frame));

  frame.type = FrameType::kNewToken;
  frame.new_token.token = {};
  EXPECT_TRUE(refuses(frame));

  frame.type = FrameType::kPadding;
  frame.padding.length = 0;
  EXPECT_TRUE(refuses(frame));

  frame.type = FrameType::kMaxData;
  frame.max_data.maximum_data = kVarintMax + 1;
  EXPECT_TRUE(refuses(frame));

  // CONNECTION_CLOSE 0x1d has no Frame Type field: a frame_type would be lost
  // on the wire. The transport variant carries it.
  frame.type = FrameType::kConnectionCloseApplication;
  frame.connection_close = {.error_code = 1, .frame_type = 0x08, .reason_phrase = {}};
  EXPECT_TRUE(refuses(frame));
  frame.type = FrameType::kConnectionCloseTransport;
  EXPECT_FALSE(refuses(frame));

  ByteWriter writer(buffer);
  EXPECT_FALSE(encode_ack_frame(writer, {}, 0));
  const AckRange adjacent[] = {{5, 6}, {3, 4}};
  EXPECT_FALSE(encode_ack_frame(writer, adjacent, 0));
  EXPECT_EQ(writer.position(), 0u);
}

TEST(FrameEncodeTest, HeaderOnlyEncodersMatchWholeFrames) {
  const Bytes data(300, 0x42);
  for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{70000}}) {
    for (bool fin : {false, true}) {
      for (bool has_length : {false, true}) {
        StreamFrame stream{
            .stream_id = 9, .offset = offset, .data = data, .fin = fin, .has_length = has_length};
        uint8_t whole[512], header[32];
        ByteWriter whole_writer(whole), header_writer(header);
        ASSERT_TRUE(encode_stream_frame(whole_writer, stream));
        ASSERT_TRUE(
            encode_stream_frame_header(header_writer, 9, offset, data.size(), fin, has_length));
        EXPECT_EQ(header_writer.position(),
                  stream_frame_header_size(9, offset, data.size(), has_length));
        EXPECT_EQ(whole_writer.position(), header_writer.position() + data.size());
        EXPECT_TRUE(std::equal(header, header + header_writer.position(), whole));
      }
    }
    CryptoFrame crypto{.offset = offset, .data = data};
    uint8_t whole[512], header[32];
    ByteWriter whole_writer(whole), header_writer(header);
    ASSERT_TRUE(encode_crypto_frame(whole_writer, crypto));
    ASSERT_TRUE(encode_crypto_frame_header(header_writer, offset, data.size()));
    EXPECT_EQ(header_writer.position(), crypto_frame_header_size(offset, data.size()));
    EXPECT_EQ(whole_writer.position(), header_writer.position() + data.size());
    EXPECT_TRUE(std::equal(header, header + header_writer.position(), whole));
  }
  EXPECT_EQ(stream_frame_header_size(0, kVarintMax, 1, true), 0u);
  EXPECT_EQ(crypto_frame_header_size(kVarintMax, 1), 0u);
}

TEST(FrameEncodeTest, MaxDataLengthIsExactlyWhatFits) {
  for (uint64_t stream_id : {uint64_t{0}, uint64_t{100}, uint64_t{1} << 40}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{63}, uint64_t{1} << 20}) {
      for (bool has_length : {false, true}) {
        for (size_t available = 0; available < 20000; available += (available < 100 ? 1 : 97)) {
          const uint64_t n = max_stream_data_length(available, stream_id, offset, has_length);
          if (n > 0) {
            EXPECT_LE(stream_frame_header_size(stream_id, offset, n, has_length) + n, available);
          }
          // One more byte never fits.
          EXPECT_GT(stream_frame_header_size(stream_id, offset, n + 1, has_length) + n + 1,
                    available)
              << stream_id << " " << offset << " " << has_length << " " << available;
        }
      }
    }
  }
  for (uint64_t offset : {uint64_t{0}, uint64_t{1000}, uint64_t{1} << 31}) {
    for (size_t available = 0; available < 20000; available += (available < 100 ? 1 : 97)) {
      const uint64_t n = max_crypto_data_length(available, offset);
      if (n > 0) {
        EXPECT_LE(crypto_frame_header_size(offset, n) + n, available);
      }
      EXPECT_GT(crypto_frame_header_size(offset, n + 1) + n + 1, available);
    }
  }
  // 66 bytes for (1-byte id, no offset, LEN): 1 + 1 + 2 + 62 = 66, since a
  // 1-byte length tops out at 63 and 1 + 1 + 1 + 63 = 66 as well: 63 wins.
  EXPECT_EQ(max_stream_data_length(66, 0, 0, true), 63u);
  EXPECT_EQ(max_stream_data_length(67, 0, 0, true), 63u);
  EXPECT_EQ(max_stream_data_length(68, 0, 0, true), 64u);
  EXPECT_EQ(max_stream_data_length(1200, 4, 0, false), 1198u);
  EXPECT_EQ(max_stream_data_length(2, 4, 0, false), 0u);
  // The 2^62 - 1 offset limit caps the answer.
  EXPECT_EQ(max_stream_data_length(1200, 4, kVarintMax - 10, false), 10u);
  EXPECT_EQ(max_crypto_data_length(1200, kVarintMax), 0u);
}

}  // namespace
}  // namespace dpquic::wire
