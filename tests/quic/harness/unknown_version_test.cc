// The endpoint's Version Negotiation rules (RFC 9000 §6, §5.2.2) for a
// version no one here speaks: a reply listing our versions to a long header
// in a datagram of at least 1200 bytes, and none to a smaller datagram or to
// a Version Negotiation packet.

#include <gtest/gtest.h>

#include <vector>

#include "quic/wire/version_negotiation.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint32_t kUnknownVersion = 0x1a2a3a4a;

std::vector<uint8_t> long_header_datagram(uint32_t version, size_t size) {
  std::vector<uint8_t> datagram(size, 0);
  size_t i = 0;
  datagram[i++] = 0xc0;
  for (int shift = 24; shift >= 0; shift -= 8)
    datagram[i++] = static_cast<uint8_t>(version >> shift);
  datagram[i++] = 8;  // DCID
  for (uint8_t b = 1; b <= 8; ++b) datagram[i++] = b;
  datagram[i++] = 4;  // SCID
  for (uint8_t b = 0xa1; b <= 0xa4; ++b) datagram[i++] = b;
  return datagram;
}

struct Reply {
  bool sent = false;
  std::vector<uint8_t> bytes;
};

Reply answer(QuicPair& pair, std::vector<uint8_t> datagram) {
  const PathAddresses path{pair.options.server_address, pair.options.client_address};
  pair.server->handle_datagram(kSimulationStart, path, transmit::EcnCodepoint::kNotEct, datagram);
  std::vector<uint8_t> buffer(1500);
  std::array<uint8_t*, 1> slices{buffer.data()};
  transmit::BurstBuffers buffers;
  buffers.datagrams = slices;
  buffers.capacity = buffer.size();
  buffers.segment_size = buffer.size();
  transmit::BurstDescriptor out;
  PathAddresses to;
  Reply reply;
  reply.sent = pair.server->poll_transmit(kSimulationStart, buffers, out, to);
  if (reply.sent) {
    EXPECT_EQ(to.remote, pair.options.client_address);
    reply.bytes.assign(buffer.begin(), buffer.begin() + out.lengths[0]);
  }
  return reply;
}

TEST(UnknownVersionTest, LongHeaderOfAnUnknownVersionGetsOurVersions) {
  QuicPair pair;
  const Reply reply = answer(pair, long_header_datagram(kUnknownVersion, 1200));
  ASSERT_TRUE(reply.sent);
  wire::VersionNegotiationPacket parsed;
  ASSERT_EQ(wire::parse_version_negotiation(reply.bytes, parsed), wire::WireError::kOk);
  // The connection IDs come back swapped.
  EXPECT_EQ(std::vector<uint8_t>(parsed.dcid.begin(), parsed.dcid.end()),
            (std::vector<uint8_t>{0xa1, 0xa2, 0xa3, 0xa4}));
  EXPECT_EQ(std::vector<uint8_t>(parsed.scid.begin(), parsed.scid.end()),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(parsed.versions.contains(wire::kVersion1));
  EXPECT_TRUE(parsed.versions.contains(wire::kVersion2));
  EXPECT_FALSE(parsed.versions.contains(kUnknownVersion));
  EXPECT_EQ(pair.server->stats().version_negotiations_sent, 1u);
  EXPECT_EQ(pair.server->connection_count(), 0u);
}

TEST(UnknownVersionTest, SmallDatagramsAndVersionNegotiationPacketsGetNoReply) {
  QuicPair pair;
  EXPECT_FALSE(answer(pair, long_header_datagram(kUnknownVersion, 1199)).sent);
  EXPECT_FALSE(answer(pair, long_header_datagram(wire::kVersionNegotiationVersion, 1200)).sent);
  EXPECT_EQ(pair.server->stats().version_negotiations_sent, 0u);
  EXPECT_EQ(pair.server->connection_count(), 0u);
}

}  // namespace
}  // namespace dpquic::harness
