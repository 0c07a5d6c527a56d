// Every frame: exact bytes, round trip (encode -> decode -> every field), and
// decoding of every truncated prefix. Limits and malformed input are in
// frame_limits_test.cc.
#include "quic/wire/frames.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "tests/quic/wire/frame_test_util.h"

namespace dpquic::wire {
namespace {

using testing::ExactBuffers;
using Bytes = std::vector<uint8_t>;

Bytes bytes_of(std::span<const uint8_t> span) { return Bytes(span.begin(), span.end()); }
Bytes bytes_of(const char* text) {
  return Bytes(text, text + std::char_traits<char>::length(text));
}

class FrameTest : public ::testing::Test {
 protected:
  // Decodes one frame from an exact heap copy of `bytes`.
  WireError decode(const Bytes& bytes, Frame& frame, size_t* consumed = nullptr) {
    ByteReader reader(buffers_.copy(bytes));
    const WireError error = decode_frame(reader, frame);
    if (consumed != nullptr) *consumed = reader.position();
    return error;
  }

  // Encodes `frame`, checks the bytes when `expected` is given, decodes them
  // back and returns the decoded frame (which must equal the original), then
  // checks that every strict prefix fails with kFrameEncodingError, except
  // prefixes of at least `shortest_valid_prefix` bytes, which are a valid
  // shorter frame of the same type ending exactly there.
  Frame round_trip(const Frame& frame, const Bytes* expected = nullptr,
                   size_t shortest_valid_prefix = SIZE_MAX) {
    const Bytes encoded = testing::encode_or_die(frame);
    if (expected != nullptr) {
      EXPECT_EQ(encoded, *expected);
    }
    Frame decoded;
    size_t consumed = 0;
    EXPECT_EQ(decode(encoded, decoded, &consumed), WireError::kOk);
    EXPECT_EQ(consumed, encoded.size());
    EXPECT_TRUE(same_frame(frame, decoded)) << to_string(frame.type);
    for (size_t length = 0; length < encoded.size(); ++length) {
      const Bytes prefix(encoded.begin(), encoded.begin() + length);
      Frame partial;
      const WireError error = decode(prefix, partial, &consumed);
      if (length >= shortest_valid_prefix) {
        EXPECT_EQ(error, WireError::kOk) << to_string(frame.type) << " prefix " << length;
        EXPECT_EQ(partial.type, frame.type);
        EXPECT_EQ(consumed, length);
      } else {
        EXPECT_EQ(error, WireError::kFrameEncodingError)
            << to_string(frame.type) << " prefix " << length;
      }
    }
    return decoded;
  }

  ExactBuffers buffers_;
};

TEST_F(FrameTest, PaddingRunsCollapse) {
  Frame frame;
  frame.type = FrameType::kPadding;
  frame.padding.length = 5;
  const Bytes expected(5, 0x00);
  // Any non-empty prefix of padding is itself a (shorter) padding run.
  const Frame decoded = round_trip(frame, &expected, 1);
  EXPECT_EQ(decoded.padding.length, 5u);

  // The run stops at the first non-zero byte.
  FrameDecoder decoder(buffers_.copy(Bytes{0x00, 0x00, 0x00, 0x01, 0x00}));
  ASSERT_EQ(decoder.next(frame), WireError::kOk);
  EXPECT_EQ(frame.type, FrameType::kPadding);
  EXPECT_EQ(frame.padding.length, 3u);
  ASSERT_EQ(decoder.next(frame), WireError::kOk);
  EXPECT_EQ(frame.type, FrameType::kPing);
  ASSERT_EQ(decoder.next(frame), WireError::kOk);
  EXPECT_EQ(frame.padding.length, 1u);
  EXPECT_TRUE(decoder.done());

  // Runs of every length up to 40, ending at the packet end or at a PING.
  for (size_t length = 1; length <= 40; ++length) {
    for (bool then_ping : {false, true}) {
      Bytes bytes(length, 0x00);
      if (then_ping) bytes.push_back(0x01);
      size_t consumed = 0;
      ASSERT_EQ(decode(bytes, frame, &consumed), WireError::kOk);
      EXPECT_EQ(frame.padding.length, length);
      EXPECT_EQ(consumed, length);
    }
  }

  uint8_t buffer[4];
  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_padding(writer, 4));
  EXPECT_EQ(bytes_of(writer.written()), Bytes(4, 0x00));
}

TEST_F(FrameTest, PayloadlessFrames) {
  const std::pair<FrameType, uint8_t> cases[] = {{FrameType::kPing, 0x01},
                                                 {FrameType::kHandshakeDone, 0x1e},
                                                 {FrameType::kImmediateAck, 0x1f}};
  for (const auto& [type, wire] : cases) {
    Frame frame;
    frame.type = type;
    const Bytes expected{wire};
    round_trip(frame, &expected);
  }
}

TEST_F(FrameTest, Ack) {
  const AckRange ranges[] = {{95, 100}, {86, 90}};
  uint8_t buffer[32];
  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_ack_frame(writer, ranges, 25));
  // Type, Largest 100 (2 bytes), Delay 25, Range Count 1, First Range 5, Gap 3, Length 4.
  const Bytes expected{0x02, 0x40, 0x64, 0x19, 0x01, 0x05, 0x03, 0x04};
  EXPECT_EQ(bytes_of(writer.written()), expected);

  Frame frame;
  ASSERT_EQ(decode(expected, frame), WireError::kOk);
  EXPECT_EQ(frame.type, FrameType::kAck);
  EXPECT_EQ(frame.ack.ack_delay, 25u);
  EXPECT_EQ(frame.ack.ranges.largest(), 100u);
  EXPECT_EQ(frame.ack.ranges.smallest(), 86u);
  EXPECT_EQ(std::vector<AckRange>(frame.ack.ranges.begin(), frame.ack.ranges.end()),
            std::vector<AckRange>(std::begin(ranges), std::end(ranges)));
  EXPECT_EQ(frame.ack.ecn, EcnCounts{});
  const Frame again = round_trip(frame, &expected);
  EXPECT_TRUE(same_ranges(again.ack.ranges, frame.ack.ranges));
}

TEST_F(FrameTest, AckEcn) {
  const AckRange ranges[] = {{1'000'000, 1'000'010}, {0, 999'000}};
  const EcnCounts ecn{1, 2, 0x4000};
  uint8_t buffer[64];
  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_ack_frame(writer, ranges, 0x3fff, &ecn));
  const Bytes encoded = bytes_of(writer.written());
  EXPECT_EQ(encoded[0], 0x03);
  // The ECN counts close the frame: ECT0 1, ECT1 2, CE 0x4000 (4 bytes).
  EXPECT_EQ(Bytes(encoded.end() - 6, encoded.end()), (Bytes{0x01, 0x02, 0x80, 0x00, 0x40, 0x00}));

  Frame frame;
  ASSERT_EQ(decode(encoded, frame), WireError::kOk);
  EXPECT_EQ(frame.type, FrameType::kAckEcn);
  EXPECT_EQ(frame.ack.ack_delay, 0x3fffu);
  EXPECT_EQ(frame.ack.ecn, ecn);
  EXPECT_EQ(frame.ack.ranges.size(), 2u);
  EXPECT_EQ(frame.ack.ranges.smallest(), 0u);
  EXPECT_EQ(std::vector<AckRange>(frame.ack.ranges.begin(), frame.ack.ranges.end()),
            std::vector<AckRange>(std::begin(ranges), std::end(ranges)));
  round_trip(frame, &encoded);
}

TEST_F(FrameTest, AckSamplesRoundTrip) {
  round_trip(testing::sample_ack(false));
  round_trip(testing::sample_ack(true));
}

TEST_F(FrameTest, ResetStreamAndStopSending) {
  Frame frame;
  frame.type = FrameType::kResetStream;
  frame.reset_stream = {.stream_id = 4, .application_error_code = 0x100, .final_size = kVarintMax};
  const Bytes expected{0x04, 0x04, 0x41, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  Frame decoded = round_trip(frame, &expected);
  EXPECT_EQ(decoded.reset_stream.stream_id, 4u);
  EXPECT_EQ(decoded.reset_stream.application_error_code, 0x100u);
  EXPECT_EQ(decoded.reset_stream.final_size, kVarintMax);

  frame.type = FrameType::kStopSending;
  frame.stop_sending = {.stream_id = 0x3fff'ffff, .application_error_code = 7};
  const Bytes stop{0x05, 0xbf, 0xff, 0xff, 0xff, 0x07};
  decoded = round_trip(frame, &stop);
  EXPECT_EQ(decoded.stop_sending.stream_id, 0x3fff'ffffu);
  EXPECT_EQ(decoded.stop_sending.application_error_code, 7u);
}

TEST_F(FrameTest, Crypto) {
  Frame frame;
  frame.type = FrameType::kCrypto;
  frame.crypto = {.offset = 1000, .data = testing::kSampleData};
  Bytes expected{0x06, 0x43, 0xe8, 0x0a};
  const Bytes data = bytes_of("hello quic");
  expected.insert(expected.end(), data.begin(), data.end());
  const Frame decoded = round_trip(frame, &expected);
  EXPECT_EQ(decoded.crypto.offset, 1000u);
  EXPECT_EQ(bytes_of(decoded.crypto.data), data);

  frame.crypto = {.offset = 0, .data = {}};  // empty CRYPTO frames are legal
  const Bytes empty{0x06, 0x00, 0x00};
  round_trip(frame, &empty);
}

TEST_F(FrameTest, CryptoDataPointsIntoThePacket) {
  const Bytes bytes{0x06, 0x00, 0x03, 0xaa, 0xbb, 0xcc};
  const std::span<const uint8_t> packet = buffers_.copy(bytes);
  ByteReader reader(packet);
  Frame frame;
  ASSERT_EQ(decode_frame(reader, frame), WireError::kOk);
  EXPECT_EQ(frame.crypto.data.data(), packet.data() + 3);  // zero copy
  EXPECT_EQ(frame.crypto.data.size(), 3u);
}

TEST_F(FrameTest, NewToken) {
  Frame frame;
  frame.type = FrameType::kNewToken;
  frame.new_token.token = testing::kSampleData;
  Bytes expected{0x07, 0x0a};
  const Bytes token = bytes_of("hello quic");
  expected.insert(expected.end(), token.begin(), token.end());
  const Frame decoded = round_trip(frame, &expected);
  EXPECT_EQ(bytes_of(decoded.new_token.token), token);
}

// All eight STREAM types: OFF (0x04), LEN (0x02), FIN (0x01).
TEST_F(FrameTest, StreamAllEightForms) {
  const Bytes data = bytes_of("hello quic");
  for (uint8_t type = 0x08; type <= 0x0f; ++type) {
    const bool has_offset = type & 0x04, has_length = type & 0x02, fin = type & 0x01;
    Frame frame;
    frame.type = FrameType::kStream;
    frame.stream = {.stream_id = 0x3f,
                    .offset = has_offset ? 0x4000u : 0u,
                    .data = testing::kSampleData,
                    .fin = fin,
                    .has_offset = has_offset,
                    .has_length = has_length};
    Bytes expected{type, 0x3f};
    if (has_offset) expected.insert(expected.end(), {0x80, 0x00, 0x40, 0x00});
    if (has_length) expected.push_back(0x0a);
    const size_t header = expected.size();
    expected.insert(expected.end(), data.begin(), data.end());
    // Without LEN the data runs to the end of the packet: any prefix that
    // holds the whole header is a valid frame with less data.
    const Frame decoded = round_trip(frame, &expected, has_length ? SIZE_MAX : header);
    EXPECT_EQ(decoded.stream.stream_id, 0x3fu) << int{type};
    EXPECT_EQ(decoded.stream.offset, has_offset ? 0x4000u : 0u);
    EXPECT_EQ(decoded.stream.fin, fin);
    EXPECT_EQ(decoded.stream.has_offset, has_offset);
    EXPECT_EQ(decoded.stream.has_length, has_length);
    EXPECT_EQ(bytes_of(decoded.stream.data), data);

    if (!has_length) {
      Frame partial;
      const Bytes prefix(expected.begin(), expected.begin() + header + 3);
      ASSERT_EQ(decode(prefix, partial), WireError::kOk);
      EXPECT_EQ(bytes_of(partial.stream.data), bytes_of("hel"));
    }
  }
}

TEST_F(FrameTest, StreamOffsetBitFollowsOffset) {
  // A zero offset is omitted unless has_offset asks for it; a non-zero one is
  // always written.
  Frame frame;
  frame.type = FrameType::kStream;
  frame.stream = {.stream_id = 1, .offset = 0, .data = {}, .fin = true};
  EXPECT_EQ(testing::encode_or_die(frame), (Bytes{0x0b, 0x01, 0x00}));
  frame.stream.has_offset = true;
  EXPECT_EQ(testing::encode_or_die(frame), (Bytes{0x0f, 0x01, 0x00, 0x00}));
  frame.stream.has_offset = false;
  frame.stream.offset = 9;
  EXPECT_EQ(testing::encode_or_die(frame), (Bytes{0x0f, 0x01, 0x09, 0x00}));
}

TEST_F(FrameTest, StreamWithoutLengthTakesTheRestOfThePacket) {
  // STREAM (no LEN) followed by what looks like a PING: it is stream data.
  FrameDecoder decoder(buffers_.copy(Bytes{0x0c, 0x04, 0x10, 0x01, 0x01}));
  Frame frame;
  ASSERT_EQ(decoder.next(frame), WireError::kOk);
  EXPECT_EQ(frame.stream.offset, 0x10u);
  EXPECT_EQ(bytes_of(frame.stream.data), (Bytes{0x01, 0x01}));
  EXPECT_TRUE(decoder.done());
}

TEST_F(FrameTest, FlowControlFrames) {
  struct Case {
    FrameType type;
    Bytes expected;
  };
  const Case cases[] = {
      {FrameType::kMaxData, {0x10, 0x80, 0x10, 0x00, 0x00}},
      {FrameType::kDataBlocked, {0x14, 0x80, 0x10, 0x00, 0x00}},
      {FrameType::kMaxStreamData, {0x11, 0x04, 0x80, 0x10, 0x00, 0x00}},
      {FrameType::kStreamDataBlocked, {0x15, 0x04, 0x80, 0x10, 0x00, 0x00}},
      {FrameType::kMaxStreamsBidi, {0x12, 0x40, 0x64}},
      {FrameType::kMaxStreamsUni, {0x13, 0x40, 0x64}},
      {FrameType::kStreamsBlockedBidi, {0x16, 0x40, 0x64}},
      {FrameType::kStreamsBlockedUni, {0x17, 0x40, 0x64}},
  };
  for (const Case& c : cases) {
    Frame frame;
    frame.type = c.type;
    switch (c.type) {
      case FrameType::kMaxData: frame.max_data.maximum_data = 1 << 20; break;
      case FrameType::kDataBlocked: frame.data_blocked.maximum_data = 1 << 20; break;
      case FrameType::kMaxStreamData: frame.max_stream_data = {4, 1 << 20}; break;
      case FrameType::kStreamDataBlocked: frame.stream_data_blocked = {4, 1 << 20}; break;
      case FrameType::kMaxStreamsBidi:
      case FrameType::kMaxStreamsUni: frame.max_streams.maximum_streams = 100; break;
      default: frame.streams_blocked.maximum_streams = 100; break;
    }
    const Frame decoded = round_trip(frame, &c.expected);
    EXPECT_EQ(decoded.type, c.type);
    switch (c.type) {
      case FrameType::kMaxData: EXPECT_EQ(decoded.max_data.maximum_data, 1u << 20); break;
      case FrameType::kDataBlocked: EXPECT_EQ(decoded.data_blocked.maximum_data, 1u << 20); break;
      case FrameType::kMaxStreamData:
        EXPECT_EQ(decoded.max_stream_data.stream_id, 4u);
        EXPECT_EQ(decoded.max_stream_data.maximum_stream_data, 1u << 20);
        break;
      case FrameType::kStreamDataBlocked:
        EXPECT_EQ(decoded.stream_data_blocked.stream_id, 4u);
        EXPECT_EQ(decoded.stream_data_blocked.maximum_stream_data, 1u << 20);
        break;
      case FrameType::kMaxStreamsBidi:
      case FrameType::kMaxStreamsUni: EXPECT_EQ(decoded.max_streams.maximum_streams, 100u); break;
      default: EXPECT_EQ(decoded.streams_blocked.maximum_streams, 100u); break;
    }
  }
}

TEST_F(FrameTest, NewConnectionId) {
  for (size_t cid_length : {size_t{1}, size_t{8}, size_t{20}}) {
    Bytes cid(cid_length);
    for (size_t i = 0; i < cid_length; ++i) cid[i] = static_cast<uint8_t>(0xa0 + i);
    Frame frame;
    frame.type = FrameType::kNewConnectionId;
    auto& f = frame.new_connection_id;
    f.sequence_number = 7;
    f.retire_prior_to = 7;  // equal is allowed
    f.connection_id = cid;
    for (size_t i = 0; i < 16; ++i) f.stateless_reset_token[i] = static_cast<uint8_t>(0xf0 | i);
    Bytes expected{0x18, 0x07, 0x07, static_cast<uint8_t>(cid_length)};
    expected.insert(expected.end(), cid.begin(), cid.end());
    expected.insert(expected.end(), f.stateless_reset_token.begin(), f.stateless_reset_token.end());
    const Frame decoded = round_trip(frame, &expected);
    EXPECT_EQ(decoded.new_connection_id.sequence_number, 7u);
    EXPECT_EQ(decoded.new_connection_id.retire_prior_to, 7u);
    EXPECT_EQ(bytes_of(decoded.new_connection_id.connection_id), cid);
    EXPECT_EQ(decoded.new_connection_id.stateless_reset_token, f.stateless_reset_token);
  }
}

TEST_F(FrameTest, RetireConnectionId) {
  Frame frame;
  frame.type = FrameType::kRetireConnectionId;
  frame.retire_connection_id.sequence_number = 300;
  const Bytes expected{0x19, 0x41, 0x2c};
  EXPECT_EQ(round_trip(frame, &expected).retire_connection_id.sequence_number, 300u);
}

TEST_F(FrameTest, PathChallengeAndResponse) {
  Frame frame;
  frame.type = FrameType::kPathChallenge;
  frame.path_challenge.data = {1, 2, 3, 4, 5, 6, 7, 8};
  const Bytes challenge{0x1a, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(round_trip(frame, &challenge).path_challenge.data, frame.path_challenge.data);

  frame.type = FrameType::kPathResponse;
  frame.path_response.data = {9, 8, 7, 6, 5, 4, 3, 2};
  const Bytes response{0x1b, 9, 8, 7, 6, 5, 4, 3, 2};
  EXPECT_EQ(round_trip(frame, &response).path_response.data, frame.path_response.data);
}

TEST_F(FrameTest, ConnectionCloseTransport) {
  Frame frame;
  frame.type = FrameType::kConnectionCloseTransport;
  frame.connection_close = {.error_code = 0x0a, .frame_type = 0x08, .reason_phrase = {}};
  const Bytes no_reason{0x1c, 0x0a, 0x08, 0x00};
  round_trip(frame, &no_reason);

  const Bytes reason = bytes_of("bad frame");
  frame.connection_close.reason_phrase = reason;
  Bytes expected{0x1c, 0x0a, 0x08, 0x09};
  expected.insert(expected.end(), reason.begin(), reason.end());
  const Frame decoded = round_trip(frame, &expected);
  EXPECT_EQ(decoded.connection_close.error_code, 0x0au);
  EXPECT_EQ(decoded.connection_close.frame_type, 0x08u);
  EXPECT_EQ(bytes_of(decoded.connection_close.reason_phrase), reason);
}

TEST_F(FrameTest, ConnectionCloseApplication) {
  Frame frame;
  frame.type = FrameType::kConnectionCloseApplication;
  const Bytes reason = bytes_of("bye");
  frame.connection_close = {.error_code = 0x0101, .frame_type = 0, .reason_phrase = reason};
  const Bytes expected{0x1d, 0x41, 0x01, 0x03, 'b', 'y', 'e'};
  const Frame decoded = round_trip(frame, &expected);
  EXPECT_EQ(decoded.connection_close.error_code, 0x101u);
  EXPECT_EQ(decoded.connection_close.frame_type, 0u);  // no Frame Type field in 0x1d
  EXPECT_EQ(bytes_of(decoded.connection_close.reason_phrase), reason);
}

TEST_F(FrameTest, Datagram) {
  Frame frame;
  frame.type = FrameType::kDatagram;
  frame.datagram = {.data = testing::kSampleData, .has_length = true};
  Bytes with_length{0x31, 0x0a};
  const Bytes data = bytes_of("hello quic");
  with_length.insert(with_length.end(), data.begin(), data.end());
  EXPECT_EQ(bytes_of(round_trip(frame, &with_length).datagram.data), data);

  frame.datagram.has_length = false;
  Bytes to_end{0x30};
  to_end.insert(to_end.end(), data.begin(), data.end());
  const Frame decoded = round_trip(frame, &to_end, 1);
  EXPECT_FALSE(decoded.datagram.has_length);
  EXPECT_EQ(bytes_of(decoded.datagram.data), data);
}

TEST_F(FrameTest, AckFrequency) {
  Frame frame;
  frame.type = FrameType::kAckFrequency;
  frame.ack_frequency = {.sequence_number = 1,
                         .ack_eliciting_threshold = 9,
                         .requested_max_ack_delay_us = 25000,
                         .reordering_threshold = 0};
  // Type 0xaf in its minimal, two-byte form.
  const Bytes expected{0x40, 0xaf, 0x01, 0x09, 0x80, 0x00, 0x61, 0xa8, 0x00};
  const Frame decoded = round_trip(frame, &expected);
  EXPECT_EQ(decoded.ack_frequency.sequence_number, 1u);
  EXPECT_EQ(decoded.ack_frequency.ack_eliciting_threshold, 9u);
  EXPECT_EQ(decoded.ack_frequency.requested_max_ack_delay_us, 25000u);
  EXPECT_EQ(decoded.ack_frequency.reordering_threshold, 0u);
}

TEST_F(FrameTest, EverySampleRoundTrips) {
  for (const Frame& frame : testing::sample_frames()) {
    round_trip(frame, nullptr, frame.type == FrameType::kPadding ? 1 : SIZE_MAX);
  }
}

TEST_F(FrameTest, DecoderWalksAPacketOfEveryFrame) {
  const std::vector<Frame> frames = testing::sample_frames();
  const Bytes payload = testing::every_frame_payload();
  FrameDecoder decoder(buffers_.copy(payload));
  size_t index = 0;
  Frame frame;
  while (!decoder.done()) {
    ASSERT_LT(index, frames.size());
    ASSERT_EQ(decoder.next(frame), WireError::kOk) << index;
    EXPECT_TRUE(same_frame(frame, frames[index])) << to_string(frames[index].type);
    ++index;
  }
  EXPECT_EQ(index, frames.size());
  EXPECT_EQ(decoder.position(), payload.size());
}

TEST_F(FrameTest, SameFrameComparesContent) {
  const std::vector<Frame> frames = testing::sample_frames();
  for (size_t i = 0; i < frames.size(); ++i) {
    for (size_t j = 0; j < frames.size(); ++j) {
      EXPECT_EQ(same_frame(frames[i], frames[j]), i == j) << i << " " << j;
    }
  }
  Frame a = frames[6], b = frames[6];  // CRYPTO; same bytes at another address
  const Bytes copy(a.crypto.data.begin(), a.crypto.data.end());
  b.crypto.data = copy;
  EXPECT_TRUE(same_frame(a, b));
  b.crypto.offset += 1;
  EXPECT_FALSE(same_frame(a, b));
}

TEST(FrameTypeTest, NamesAreRfcNames) {
  EXPECT_STREQ(to_string(FrameType::kStream), "STREAM");
  EXPECT_STREQ(to_string(FrameType::kAckFrequency), "ACK_FREQUENCY");
  for (FrameType type : kAllFrameTypes) EXPECT_STRNE(to_string(type), "UNKNOWN");
}

}  // namespace
}  // namespace dpquic::wire
