#include "quic/wire/coalesced.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "quic/wire/header.h"

namespace dpquic::wire {
namespace {

using Bytes = std::vector<uint8_t>;

const Bytes kDcid = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
const Bytes kOtherDcid = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
const Bytes kScid = {0xf0, 0x67, 0xa5, 0x50};
constexpr size_t kLocalCidLength = 8;

void append_long(Bytes& datagram, PacketType type, const Bytes& dcid, uint64_t pn, size_t payload) {
  std::array<uint8_t, 256> buffer{};
  ByteWriter writer(buffer);
  LongHeaderFields fields;
  fields.type = type;
  fields.dcid = dcid;
  fields.scid = kScid;
  fields.packet_number = pn;
  EncodedHeader encoded;
  ASSERT_TRUE(encode_long_header(writer, fields, encoded));
  ASSERT_TRUE(writer.fill(0xee, payload));
  ASSERT_TRUE(patch_long_header_length(buffer, encoded, payload));
  datagram.insert(datagram.end(), writer.written().begin(), writer.written().end());
}

void append_short(Bytes& datagram, const Bytes& dcid, uint64_t pn, size_t payload) {
  std::array<uint8_t, 256> buffer{};
  ByteWriter writer(buffer);
  ShortHeaderFields fields;
  fields.dcid = dcid;
  fields.packet_number = pn;
  EncodedHeader encoded;
  ASSERT_TRUE(encode_short_header(writer, fields, encoded));
  ASSERT_TRUE(writer.fill(0xdd, payload));
  datagram.insert(datagram.end(), writer.written().begin(), writer.written().end());
}

// One long header packet: 1 + 4 + 1 + 8 + 1 + 4 + [token length] + 2 + 1.
constexpr size_t kInitialOverhead = 23;
constexpr size_t kHandshakeOverhead = 22;

struct Seen {
  PacketType type;
  size_t offset;
  size_t size;
};

std::vector<Seen> split(const Bytes& datagram, DatagramSplitter& splitter) {
  std::vector<Seen> seen;
  CoalescedPacket packet;
  while (splitter.next(packet)) {
    EXPECT_EQ(packet.bytes.data(), datagram.data() + packet.offset);
    EXPECT_EQ(packet.bytes.size(), packet.header.packet_size);
    seen.push_back({packet.header.type, packet.offset, packet.bytes.size()});
  }
  return seen;
}

TEST(CoalescedTest, InitialHandshakeAndOneRttInOneDatagram) {
  Bytes datagram;
  append_long(datagram, PacketType::kInitial, kDcid, 0, 50);
  append_long(datagram, PacketType::kHandshake, kDcid, 0, 40);
  append_short(datagram, kDcid, 0, 30);
  DatagramSplitter splitter(datagram, kLocalCidLength);
  const auto seen = split(datagram, splitter);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].type, PacketType::kInitial);
  EXPECT_EQ(seen[0].offset, 0u);
  EXPECT_EQ(seen[0].size, kInitialOverhead + 50);
  EXPECT_EQ(seen[1].type, PacketType::kHandshake);
  EXPECT_EQ(seen[1].offset, kInitialOverhead + 50);
  EXPECT_EQ(seen[1].size, kHandshakeOverhead + 40);
  EXPECT_EQ(seen[2].type, PacketType::kOneRtt);
  EXPECT_EQ(seen[2].offset, kInitialOverhead + 50 + kHandshakeOverhead + 40);
  EXPECT_EQ(seen[2].size, 1 + 8 + 1 + 30u);
  EXPECT_EQ(splitter.error(), WireError::kOk);
  EXPECT_EQ(splitter.skipped(), 0u);
  EXPECT_EQ(splitter.remaining(), 0u);
  EXPECT_TRUE(std::ranges::equal(splitter.datagram_dcid(), kDcid));
}

TEST(CoalescedTest, LaterPacketWithDifferentDcidIsSkipped) {
  Bytes datagram;
  append_long(datagram, PacketType::kInitial, kDcid, 0, 50);
  append_long(datagram, PacketType::kHandshake, kOtherDcid, 0, 40);
  append_short(datagram, kDcid, 0, 30);
  DatagramSplitter splitter(datagram, kLocalCidLength);
  const auto seen = split(datagram, splitter);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].type, PacketType::kInitial);
  EXPECT_EQ(seen[1].type, PacketType::kOneRtt);
  EXPECT_EQ(seen[1].offset, kInitialOverhead + 50 + kHandshakeOverhead + 40);
  EXPECT_EQ(splitter.skipped(), 1u);
  EXPECT_EQ(splitter.error(), WireError::kOk);

  // A short header with another DCID is skipped the same way.
  Bytes tail_other;
  append_long(tail_other, PacketType::kHandshake, kDcid, 0, 10);
  append_short(tail_other, kOtherDcid, 0, 10);
  DatagramSplitter other(tail_other, kLocalCidLength);
  EXPECT_EQ(split(tail_other, other).size(), 1u);
  EXPECT_EQ(other.skipped(), 1u);
}

TEST(CoalescedTest, MalformedLaterPacketKeepsEarlierOnes) {
  Bytes datagram;
  append_long(datagram, PacketType::kInitial, kDcid, 0, 50);
  append_long(datagram, PacketType::kHandshake, kDcid, 0, 40);
  // Truncate the Handshake packet: its Length now runs past the datagram.
  datagram.pop_back();
  DatagramSplitter splitter(datagram, kLocalCidLength);
  const auto seen = split(datagram, splitter);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].type, PacketType::kInitial);
  EXPECT_EQ(seen[0].size, kInitialOverhead + 50);
  EXPECT_EQ(splitter.error(), WireError::kDrop);
  EXPECT_EQ(splitter.remaining(), 0u);
  CoalescedPacket packet;
  EXPECT_FALSE(splitter.next(packet));  // stays stopped

  // Zero bytes after a packet (padding outside any packet) are not a packet.
  Bytes padded;
  append_long(padded, PacketType::kInitial, kDcid, 0, 50);
  padded.resize(padded.size() + 20, 0);
  DatagramSplitter padded_splitter(padded, kLocalCidLength);
  EXPECT_EQ(split(padded, padded_splitter).size(), 1u);
  EXPECT_EQ(padded_splitter.error(), WireError::kDrop);
}

TEST(CoalescedTest, MalformedFirstPacketYieldsNothing) {
  Bytes datagram;
  append_long(datagram, PacketType::kInitial, kDcid, 0, 50);
  datagram[0] &= ~kFixedBit;
  DatagramSplitter splitter(datagram, kLocalCidLength);
  EXPECT_TRUE(split(datagram, splitter).empty());
  EXPECT_EQ(splitter.error(), WireError::kDrop);

  const Bytes empty;
  DatagramSplitter none(empty, kLocalCidLength);
  EXPECT_TRUE(split(empty, none).empty());
  EXPECT_EQ(none.error(), WireError::kOk);
}

TEST(CoalescedTest, ShortHeaderConsumesTheRestOfTheDatagram) {
  Bytes datagram;
  append_short(datagram, kDcid, 0, 10);
  append_long(datagram, PacketType::kHandshake, kDcid, 0, 10);  // looks like payload
  DatagramSplitter splitter(datagram, kLocalCidLength);
  const auto seen = split(datagram, splitter);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].type, PacketType::kOneRtt);
  EXPECT_EQ(seen[0].size, datagram.size());
}

TEST(CoalescedTest, TruncationAtEveryOffsetNeverOverreads) {
  Bytes datagram;
  append_long(datagram, PacketType::kInitial, kDcid, 0, 50);
  append_long(datagram, PacketType::kHandshake, kDcid, 0, 40);
  append_short(datagram, kDcid, 0, 30);
  const size_t first_end = kInitialOverhead + 50;
  const size_t second_end = first_end + kHandshakeOverhead + 40;
  for (size_t n = 0; n <= datagram.size(); ++n) {
    // Copy so that AddressSanitizer sees any read past the prefix.
    const Bytes prefix(datagram.begin(), datagram.begin() + n);
    DatagramSplitter splitter(prefix, kLocalCidLength);
    const auto seen = split(prefix, splitter);
    size_t expected = 0;
    if (n >= first_end) ++expected;
    if (n >= second_end) ++expected;
    if (n >= second_end + 1 + 8) ++expected;  // a short header needs its DCID
    EXPECT_EQ(seen.size(), expected) << n;
    const bool clean = n == 0 || n == first_end || n == second_end || n >= second_end + 9;
    EXPECT_EQ(splitter.error(), clean ? WireError::kOk : WireError::kDrop) << n;
  }
}

}  // namespace
}  // namespace dpquic::wire
