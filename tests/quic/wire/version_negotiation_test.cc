#include "quic/wire/version_negotiation.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

#include "quic/wire/header.h"
#include "quic/wire/version.h"

namespace dpquic::wire {
namespace {

using Bytes = std::vector<uint8_t>;

bool same(std::span<const uint8_t> a, const Bytes& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

const Bytes kClientDcid = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
const Bytes kClientScid = {0xaa, 0xbb, 0xcc, 0xdd};
const uint32_t kSupported[] = {kVersion2, kVersion1};

TEST(VersionNegotiationTest, BuildEchoesConnectionIdsAndAddsOneGreasedVersion) {
  std::array<uint8_t, 128> buffer{};
  ByteWriter writer(buffer);
  const size_t size = build_version_negotiation(writer, kClientDcid, kClientScid, kSupported, 42);
  // 1 + 4 + (1 + 4) + (1 + 8) + 3 versions * 4.
  ASSERT_EQ(size, 31u);
  EXPECT_EQ(writer.position(), 31u);
  EXPECT_EQ(buffer[0] & 0xc0, 0xc0);  // long header, and 0x40 for demultiplexing
  EXPECT_EQ(buffer[1] | buffer[2] | buffer[3] | buffer[4], 0);
  // The client's SCID is our DCID and vice versa.
  EXPECT_EQ(buffer[5], 4);
  EXPECT_TRUE(same(std::span(buffer).subspan(6, 4), kClientScid));
  EXPECT_EQ(buffer[10], 8);
  EXPECT_TRUE(same(std::span(buffer).subspan(11, 8), kClientDcid));

  VersionNegotiationPacket packet;
  ASSERT_EQ(parse_version_negotiation(writer.written(), packet), WireError::kOk);
  EXPECT_TRUE(same(packet.dcid, kClientScid));
  EXPECT_TRUE(same(packet.scid, kClientDcid));
  ASSERT_EQ(packet.versions.size(), 3u);
  EXPECT_TRUE(packet.versions.contains(kVersion1));
  EXPECT_TRUE(packet.versions.contains(kVersion2));
  // Exactly one reserved version, and the supported ones keep their order.
  std::vector<uint32_t> listed;
  int reserved = 0;
  for (size_t i = 0; i < packet.versions.size(); ++i) {
    if (is_reserved_version(packet.versions[i])) {
      ++reserved;
      EXPECT_EQ(packet.versions[i], greased_version(42));
    } else {
      listed.push_back(packet.versions[i]);
    }
  }
  EXPECT_EQ(reserved, 1);
  EXPECT_EQ(listed, (std::vector<uint32_t>{kVersion2, kVersion1}));

  // The header parser recognises it too.
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(writer.written(), 0, header), WireError::kOk);
  EXPECT_EQ(header.type, PacketType::kVersionNegotiation);
  EXPECT_EQ(header.packet_size, 31u);
}

TEST(VersionNegotiationTest, GreaseVariesWithEntropyAndKeepsTheReservedForm) {
  std::set<uint32_t> versions;
  std::set<size_t> positions;
  std::set<uint8_t> first_bytes;
  for (uint64_t entropy = 0; entropy < 256; ++entropy) {
    const uint32_t grease = greased_version(entropy);
    EXPECT_EQ(grease & 0x0f0f0f0fu, 0x0a0a0a0au);
    EXPECT_TRUE(is_reserved_version(grease));
    EXPECT_FALSE(is_supported_version(grease));
    versions.insert(grease);

    std::array<uint8_t, 64> buffer{};
    ByteWriter writer(buffer);
    ASSERT_NE(build_version_negotiation(writer, {}, {}, kSupported, entropy), 0u);
    VersionNegotiationPacket packet;
    ASSERT_EQ(parse_version_negotiation(writer.written(), packet), WireError::kOk);
    for (size_t i = 0; i < packet.versions.size(); ++i) {
      if (packet.versions[i] == grease) positions.insert(i);
    }
    first_bytes.insert(buffer[0]);
  }
  EXPECT_GT(versions.size(), 200u);
  EXPECT_EQ(positions.size(), 3u);
  EXPECT_GT(first_bytes.size(), 32u);
}

TEST(VersionNegotiationTest, LongInvariantConnectionIdsAccepted) {
  const Bytes dcid(255, 0x11);
  const Bytes scid(200, 0x22);
  std::array<uint8_t, 600> buffer{};
  ByteWriter writer(buffer);
  ASSERT_NE(build_version_negotiation(writer, dcid, scid, kSupported, 7), 0u);
  VersionNegotiationPacket packet;
  ASSERT_EQ(parse_version_negotiation(writer.written(), packet), WireError::kOk);
  EXPECT_TRUE(same(packet.dcid, scid));
  EXPECT_TRUE(same(packet.scid, dcid));

  const Bytes too_long(256, 0x33);
  ByteWriter again(buffer);
  EXPECT_EQ(build_version_negotiation(again, too_long, scid, kSupported, 7), 0u);
  EXPECT_EQ(again.position(), 0u);
}

TEST(VersionNegotiationTest, BuildRejectsBadInputWithoutWriting) {
  std::array<uint8_t, 64> buffer{};
  ByteWriter writer(buffer);
  EXPECT_EQ(build_version_negotiation(writer, kClientDcid, kClientScid, {}, 1), 0u);
  const uint32_t with_zero[] = {kVersion1, 0};
  EXPECT_EQ(build_version_negotiation(writer, kClientDcid, kClientScid, with_zero, 1), 0u);
  ByteWriter short_writer{std::span<uint8_t>(buffer).first(30)};  // needs 31
  EXPECT_EQ(build_version_negotiation(short_writer, kClientDcid, kClientScid, kSupported, 1), 0u);
  EXPECT_EQ(writer.position(), 0u);
  EXPECT_EQ(short_writer.position(), 0u);
}

TEST(VersionNegotiationTest, ParseRejectsInvalidPackets) {
  VersionNegotiationPacket packet;
  const Bytes valid = {0x80, 0, 0, 0, 0, 1, 0xaa, 0, 0, 0, 0, 1};
  ASSERT_EQ(parse_version_negotiation(valid, packet), WireError::kOk);
  EXPECT_EQ(packet.versions.size(), 1u);
  EXPECT_EQ(packet.versions[0], kVersion1);
  EXPECT_EQ(packet.dcid.size(), 1u);
  EXPECT_TRUE(packet.scid.empty());

  // Empty version list.
  EXPECT_EQ(parse_version_negotiation(Bytes(valid.begin(), valid.begin() + 8), packet),
            WireError::kDrop);
  // Every truncation, including lists that are not a multiple of 4.
  for (size_t n = 0; n < valid.size(); ++n) {
    packet.versions = VersionList(valid);
    EXPECT_EQ(parse_version_negotiation(Bytes(valid.begin(), valid.begin() + n), packet),
              WireError::kDrop)
        << n;
    EXPECT_TRUE(packet.versions.empty());
  }
  Bytes extra = valid;
  extra.push_back(0x01);
  EXPECT_EQ(parse_version_negotiation(extra, packet), WireError::kDrop);
  // Not version 0, or a short header.
  Bytes v1 = valid;
  v1[4] = 1;
  EXPECT_EQ(parse_version_negotiation(v1, packet), WireError::kDrop);
  Bytes short_form = valid;
  short_form[0] = 0x40;
  EXPECT_EQ(parse_version_negotiation(short_form, packet), WireError::kDrop);
  // Unused bits are ignored.
  Bytes unused = valid;
  unused[0] = 0xff;
  EXPECT_EQ(parse_version_negotiation(unused, packet), WireError::kOk);
}

}  // namespace
}  // namespace dpquic::wire
