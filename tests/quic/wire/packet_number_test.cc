#include "quic/wire/packet_number.h"

#include <gtest/gtest.h>

#include <array>

#include "quic/wire/varint.h"

namespace dpquic::wire {
namespace {

// RFC 9000 Appendix A.2: 0xac5c02 after an ACK of 0xabe8b3 needs 16 bits;
// 0xace8fe in the same state needs 24.
TEST(PacketNumberTest, EncodingLengthMatchesRfcExamples) {
  EXPECT_EQ(packet_number_length(0xac5c02, 0xabe8b3), 2u);
  EXPECT_EQ(packet_number_length(0xace8fe, 0xabe8b3), 3u);
}

TEST(PacketNumberTest, RfcExampleTruncatesToTheExpectedBytes) {
  std::array<uint8_t, 4> out{};
  ByteWriter writer(out);
  ASSERT_TRUE(writer.write_uint(0xac5c02, packet_number_length(0xac5c02, 0xabe8b3)));
  ASSERT_TRUE(writer.write_uint(0xace8fe, 1));
  const std::array<uint8_t, 4> expected = {0x5c, 0x02, 0xfe, 0x00};
  EXPECT_EQ(out, expected);
}

// RFC 9000 Appendix A.3: largest 0xa82f30ea, 16-bit 0x9b32 -> 0xa82f9b32.
TEST(PacketNumberTest, DecodesRfcExample) {
  EXPECT_EQ(decode_packet_number(0xa82f30ea, 0x9b32, 2), 0xa82f9b32u);
}

TEST(PacketNumberTest, LengthBoundaries) {
  // Without an ACK the count includes packet 0.
  EXPECT_EQ(packet_number_length(0, std::nullopt), 1u);
  EXPECT_EQ(packet_number_length(127, std::nullopt), 1u);
  EXPECT_EQ(packet_number_length(128, std::nullopt), 2u);
  // The encoding covers twice the unacknowledged range: up to 2^(8k-1).
  for (size_t k = 1; k <= 4; ++k) {
    const uint64_t limit = uint64_t{1} << (8 * k - 1);
    EXPECT_EQ(packet_number_length(1000 + limit, 1000), k);
    EXPECT_EQ(packet_number_length(1001 + limit, 1000), k == 4 ? 0u : k + 1);
  }
}

TEST(PacketNumberTest, LengthRejectsImpossibleInputs) {
  EXPECT_EQ(packet_number_length(5, 5), 0u) << "sending a packet already acknowledged";
  EXPECT_EQ(packet_number_length(5, 9), 0u);
  EXPECT_EQ(packet_number_length(kMaxPacketNumber + 1, std::nullopt), 0u);
  EXPECT_EQ(packet_number_length(uint64_t{1} << 32, 0), 0u);
}

TEST(PacketNumberTest, DecodeWithoutHistoryStartsAtZero) {
  EXPECT_EQ(decode_packet_number(std::nullopt, 0, 1), 0u);
  EXPECT_EQ(decode_packet_number(std::nullopt, 5, 4), 5u);
}

TEST(PacketNumberTest, DecodeRejectsBadLengthsAndOversizedValues) {
  EXPECT_EQ(decode_packet_number(0, 0, 0), std::nullopt);
  EXPECT_EQ(decode_packet_number(0, 0, 5), std::nullopt);
  EXPECT_EQ(decode_packet_number(0, 0x100, 1), std::nullopt);
}

TEST(PacketNumberTest, DecodeWrapsAcrossTheWindowEdges) {
  // Just above a window boundary.
  EXPECT_EQ(decode_packet_number(0xff, 0x00, 1), 0x100u);
  // A late packet from below the boundary.
  EXPECT_EQ(decode_packet_number(0x101, 0xff, 1), 0xffu);
  // Half-window edges: expected = largest + 1; accepted range is
  // (expected - 128, expected + 128] for one byte.
  EXPECT_EQ(decode_packet_number(999, 1000 % 256, 1), 1000u);
  EXPECT_EQ(decode_packet_number(999, (1000 + 128) % 256, 1), 1128u);
  EXPECT_EQ(decode_packet_number(999, (1000 - 127) % 256, 1), 873u);
  EXPECT_EQ(decode_packet_number(999, (1000 - 128) % 256, 1), 1128u)
      << "exactly half a window below wraps up";
}

TEST(PacketNumberTest, DecodeNeverExceedsTheLargestPacketNumber) {
  const uint64_t near_max = kMaxPacketNumber - 10;
  EXPECT_EQ(decode_packet_number(near_max, (near_max + 1) & 0xff, 1), near_max + 1);
  // A value that would land above 2^62 - 1 stays below it instead.
  const auto decoded = decode_packet_number(kMaxPacketNumber - 1, 0x00, 1);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_LE(*decoded, kMaxPacketNumber);
}

// Every packet number within the safe distance of the largest acknowledged one
// survives truncation to the chosen length and recovery by a receiver whose
// largest processed packet is anywhere from largest_acked to full_pn - 1.
TEST(PacketNumberTest, EncodeDecodeRoundTripsAcrossLengths) {
  const uint64_t bases[] = {0, 1, 255, 256, 65'535, 0xabe8b3, 0xffff'ffffull, 1ull << 40};
  for (uint64_t acked : bases) {
    for (uint64_t distance : {1ull, 2ull, 127ull, 128ull, 129ull, 32'768ull, 32'769ull,
                              (1ull << 23), (1ull << 23) + 1, (1ull << 31)}) {
      const uint64_t full = acked + distance;
      const size_t length = packet_number_length(full, acked);
      ASSERT_NE(length, 0u);
      const uint64_t truncated = full & ((uint64_t{1} << (8 * length)) - 1);
      for (uint64_t largest : {acked, full - 1, acked + distance / 2}) {
        EXPECT_EQ(decode_packet_number(largest, truncated, length), full)
            << "acked=" << acked << " full=" << full << " largest=" << largest;
      }
    }
  }
}

}  // namespace
}  // namespace dpquic::wire
