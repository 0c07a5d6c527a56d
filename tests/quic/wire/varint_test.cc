#include "quic/wire/varint.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace dpquic::wire {
namespace {

struct Example {
  std::vector<uint8_t> bytes;
  uint64_t value;
};

// RFC 9000 Appendix A.1.
const std::vector<Example>& rfc_examples() {
  static const std::vector<Example> examples = {
      {{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 151'288'809'941'952'652ull},
      {{0x9d, 0x7f, 0x3e, 0x7d}, 494'878'333},
      {{0x7b, 0xbd}, 15'293},
      {{0x25}, 37},
      {{0x40, 0x25}, 37},
  };
  return examples;
}

TEST(VarintTest, DecodesRfcExamples) {
  for (const auto& example : rfc_examples()) {
    uint64_t value = 0;
    EXPECT_EQ(varint_decode(example.bytes, value), example.bytes.size());
    EXPECT_EQ(value, example.value);
  }
}

TEST(VarintTest, EncodesRfcExamplesInTheirOwnLength) {
  for (const auto& example : rfc_examples()) {
    std::array<uint8_t, 8> out{};
    ASSERT_TRUE(varint_encode_fixed(out, example.value, example.bytes.size()));
    EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + example.bytes.size()), example.bytes);
  }
  // The minimal encoding of 37 is the single byte.
  std::array<uint8_t, 8> out{};
  ASSERT_EQ(varint_encode(out, 37), 1u);
  EXPECT_EQ(out[0], 0x25);
}

struct Boundary {
  uint64_t value;
  size_t length;
};

constexpr Boundary kBoundaries[] = {
    {0, 1},
    {63, 1},
    {64, 2},
    {16'383, 2},
    {16'384, 4},
    {(uint64_t{1} << 30) - 1, 4},
    {uint64_t{1} << 30, 8},
    {kVarintMax, 8},
};

TEST(VarintTest, LengthAndRoundTripAtEveryBoundary) {
  for (const auto& boundary : kBoundaries) {
    SCOPED_TRACE(boundary.value);
    EXPECT_EQ(varint_length(boundary.value), boundary.length);
    std::array<uint8_t, 8> out{};
    ASSERT_EQ(varint_encode(out, boundary.value), boundary.length);
    EXPECT_EQ(varint_length_from_first_byte(out[0]), boundary.length);
    uint64_t decoded = ~uint64_t{0};
    ASSERT_EQ(varint_decode(std::span<const uint8_t>(out.data(), boundary.length), decoded),
              boundary.length);
    EXPECT_EQ(decoded, boundary.value);
  }
}

TEST(VarintTest, RejectsValuesFromTwoToTheSixtyTwo) {
  std::array<uint8_t, 8> out{};
  for (uint64_t value : {kVarintMax + 1, uint64_t{1} << 63, ~uint64_t{0}}) {
    EXPECT_EQ(varint_length(value), 0u);
    EXPECT_EQ(varint_encode(out, value), 0u);
    EXPECT_FALSE(varint_encode_fixed(out, value, 8));
    std::array<uint8_t, 8> buffer{};
    ByteWriter writer(buffer);
    EXPECT_FALSE(writer.write_varint(value));
    EXPECT_EQ(writer.position(), 0u);
  }
}

TEST(VarintTest, FixedLengthRejectsBadLengthsAndTooSmallLengths) {
  std::array<uint8_t, 8> out{};
  for (size_t length : {0u, 3u, 5u, 6u, 7u, 9u}) EXPECT_FALSE(varint_encode_fixed(out, 1, length));
  EXPECT_FALSE(varint_encode_fixed(out, 64, 1));
  EXPECT_FALSE(varint_encode_fixed(out, 16'384, 2));
  EXPECT_FALSE(varint_encode_fixed(out, uint64_t{1} << 30, 4));
  // Every value encodes non-minimally in any larger length and decodes back.
  for (const auto& boundary : kBoundaries) {
    for (size_t length : {1u, 2u, 4u, 8u}) {
      if (length < boundary.length) continue;
      ASSERT_TRUE(varint_encode_fixed(out, boundary.value, length));
      uint64_t decoded = 0;
      ASSERT_EQ(varint_decode(out, decoded), length);
      EXPECT_EQ(decoded, boundary.value);
    }
  }
}

TEST(VarintTest, DecodeOfEveryTruncationFails) {
  for (const auto& boundary : kBoundaries) {
    std::array<uint8_t, 8> out{};
    ASSERT_EQ(varint_encode(out, boundary.value), boundary.length);
    for (size_t cut = 0; cut < boundary.length; ++cut) {
      uint64_t decoded = 12345;
      EXPECT_EQ(varint_decode(std::span<const uint8_t>(out.data(), cut), decoded), 0u);
      EXPECT_EQ(decoded, 12345u) << "a failed decode must not write its output";
      ByteReader reader(std::span<const uint8_t>(out.data(), cut));
      EXPECT_FALSE(reader.read_varint(decoded));
      EXPECT_EQ(reader.position(), 0u);
    }
  }
}

TEST(VarintTest, EncodeIntoEveryTooShortBufferFails) {
  for (const auto& boundary : kBoundaries) {
    for (size_t room = 0; room < boundary.length; ++room) {
      std::array<uint8_t, 8> out{};
      out.fill(0xee);
      EXPECT_EQ(varint_encode(std::span<uint8_t>(out.data(), room), boundary.value), 0u);
      for (uint8_t byte : out) EXPECT_EQ(byte, 0xee) << "nothing written on failure";
    }
  }
}

TEST(VarintTest, AllOneByteAndTwoByteValuesRoundTrip) {
  for (uint64_t value = 0; value < (uint64_t{1} << 14); ++value) {
    std::array<uint8_t, 8> out{};
    const size_t length = varint_encode(out, value);
    ASSERT_EQ(length, value < 64 ? 1u : 2u);
    uint64_t decoded = 0;
    ASSERT_EQ(varint_decode(out, decoded), length);
    ASSERT_EQ(decoded, value);
  }
}

TEST(ByteReaderTest, ReadsBigEndianIntegersAndStopsAtTheEnd) {
  const std::array<uint8_t, 15> bytes = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                         0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
  ByteReader reader(bytes);
  uint8_t u8 = 0;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  ASSERT_TRUE(reader.read_u8(u8));
  ASSERT_TRUE(reader.read_u16(u16));
  ASSERT_TRUE(reader.read_u32(u32));
  ASSERT_TRUE(reader.read_u64(u64));
  EXPECT_EQ(u8, 0x01);
  EXPECT_EQ(u16, 0x0203);
  EXPECT_EQ(u32, 0x04050607u);
  EXPECT_EQ(u64, 0x08090a0b0c0d0e0full);
  EXPECT_TRUE(reader.empty());
  EXPECT_FALSE(reader.read_u8(u8));
  EXPECT_FALSE(reader.skip(1));
  std::span<const uint8_t> view;
  EXPECT_FALSE(reader.read_bytes(1, view));
  EXPECT_TRUE(reader.read_bytes(0, view));
  EXPECT_EQ(reader.position(), bytes.size());
}

TEST(ByteReaderTest, FailedReadsConsumeNothing) {
  const std::array<uint8_t, 3> bytes = {0xaa, 0xbb, 0xcc};
  ByteReader reader(bytes);
  uint32_t u32 = 0;
  uint64_t value = 0;
  std::span<const uint8_t> view;
  EXPECT_FALSE(reader.read_u32(u32));
  EXPECT_FALSE(reader.read_uint(0, value));
  EXPECT_FALSE(reader.read_uint(9, value));
  EXPECT_FALSE(reader.read_bytes(4, view));
  EXPECT_FALSE(reader.skip(4));
  EXPECT_EQ(reader.position(), 0u);
  ASSERT_TRUE(reader.read_uint(3, value));
  EXPECT_EQ(value, 0xaabbccu);
}

TEST(ByteReaderTest, ViewsPointIntoTheInput) {
  const std::array<uint8_t, 4> bytes = {1, 2, 3, 4};
  ByteReader reader(bytes);
  ASSERT_TRUE(reader.skip(1));
  std::span<const uint8_t> view;
  ASSERT_TRUE(reader.read_bytes(2, view));
  EXPECT_EQ(view.data(), bytes.data() + 1);
  EXPECT_EQ(view.size(), 2u);
  EXPECT_EQ(reader.rest().size(), 1u);
  EXPECT_EQ(reader.rest()[0], 4);
}

TEST(ByteWriterTest, WritesBigEndianAndRefusesOverflow) {
  std::array<uint8_t, 8> buffer{};
  ByteWriter writer(buffer);
  ASSERT_TRUE(writer.write_u16(0x1234));
  ASSERT_TRUE(writer.write_uint(0xaabbccdd, 3));  // keeps the low three bytes
  ASSERT_TRUE(writer.write_varint(300));
  EXPECT_FALSE(writer.write_u16(1));
  ASSERT_TRUE(writer.write_u8(0x7f));
  EXPECT_EQ(writer.remaining(), 0u);
  EXPECT_FALSE(writer.write_u8(0));
  EXPECT_FALSE(writer.fill(0, 1));
  EXPECT_FALSE(writer.advance(1));
  const std::array<uint8_t, 8> expected = {0x12, 0x34, 0xbb, 0xcc, 0xdd, 0x41, 0x2c, 0x7f};
  EXPECT_EQ(buffer, expected);
  EXPECT_EQ(writer.written().size(), 8u);
}

TEST(ByteWriterTest, BytesFillAndAdvance) {
  std::array<uint8_t, 6> buffer{};
  ByteWriter writer(buffer);
  const std::array<uint8_t, 2> payload = {9, 8};
  ASSERT_TRUE(writer.write_bytes(payload));
  ASSERT_TRUE(writer.fill(0, 2));
  writer.tail()[0] = 5;
  ASSERT_TRUE(writer.advance(1));
  EXPECT_FALSE(writer.write_bytes(payload));
  EXPECT_EQ(writer.position(), 5u);
  ASSERT_TRUE(writer.write_varint_fixed(1, 1));
  const std::array<uint8_t, 6> expected = {9, 8, 0, 0, 5, 1};
  EXPECT_EQ(buffer, expected);
}

}  // namespace
}  // namespace dpquic::wire
