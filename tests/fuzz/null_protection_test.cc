// The fuzzing-only null packet protection: a full handshake between our
// endpoints with real TLS, every packet plaintext with a zero tag, and the
// same connection IDs on every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "quic/transmit/chunk.h"
#include "quic/wire/header.h"
#include "tests/fuzz/fuzz_pair.h"
#include "tests/fuzz/null_packet_protection.h"

namespace dpquic::fuzz {
namespace {

bool contains(const std::vector<uint8_t>& haystack, std::string_view needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

struct Captured {
  std::vector<std::vector<uint8_t>> to_server, to_client;
};

void capture(FuzzPair& pair, Captured& captured) {
  pair.observer = [&captured](bool to_server, std::span<const uint8_t> bytes) {
    (to_server ? captured.to_server : captured.to_client).emplace_back(bytes.begin(), bytes.end());
  };
}

TEST(NullProtectionTest, HandshakeCompletesWithPlaintextPackets) {
  FuzzPair pair;
  Captured captured;
  capture(pair, captured);
  ASSERT_TRUE(pair.handshake());
  ASSERT_NE(pair.server_connection(), nullptr);
  EXPECT_TRUE(pair.client_connection()->is_established());

  // The client's first datagram: an Initial whose header is unmasked
  // (reserved bits zero, packet number 0) and whose ClientHello is readable.
  ASSERT_FALSE(captured.to_server.empty());
  const std::vector<uint8_t>& first = captured.to_server.front();
  wire::ParsedHeader header;
  ASSERT_EQ(wire::parse_packet_header(first, 16, header), wire::WireError::kOk);
  EXPECT_EQ(header.type, wire::PacketType::kInitial);
  EXPECT_EQ(header.first_byte & 0x0c, 0);
  const size_t pn_length = (header.first_byte & 0x03) + 1u;
  for (size_t i = 0; i < pn_length; ++i) EXPECT_EQ(first[header.packet_number_offset + i], 0);
  EXPECT_EQ(first[header.packet_number_offset + pn_length], 0x06);  // CRYPTO
  EXPECT_TRUE(contains(first, "localhost"));                        // server_name in the clear
  const size_t end = header.packet_size;
  EXPECT_TRUE(std::equal(kNullTag.begin(), kNullTag.end(), first.begin() + (end - 16)));

  // The server's certificate travels in clear Handshake packets.
  bool certificate_seen = false;
  for (const auto& datagram : captured.to_client)
    certificate_seen |= contains(datagram, "localhost");
  EXPECT_TRUE(certificate_seen);
}

TEST(NullProtectionTest, StreamDataIsPlaintextAndArrives) {
  transmit::ChunkPool pool(4096, 8);
  FuzzPair pair;
  ASSERT_TRUE(pair.handshake());
  Captured captured;
  capture(pair, captured);
  const std::string message = "null packet protection payload";
  const std::optional<uint64_t> stream =
      pair.client().open_stream(pair.client_handle(), conn::StreamDirection::kBidirectional);
  ASSERT_TRUE(stream.has_value());
  const auto bytes =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(message.data()), message.size());
  pair.client().send(pair.client_handle(), *stream, pool.copy_from(bytes), true);
  pair.settle();
  bool seen = false;
  for (const auto& datagram : captured.to_server) {
    if (!contains(datagram, message)) continue;
    seen = true;
    // A 1-RTT packet: short header, then the frames, then the zero tag.
    EXPECT_EQ(datagram[0] & 0xc0, 0x40);
    EXPECT_TRUE(std::equal(kNullTag.begin(), kNullTag.end(), datagram.end() - 16));
  }
  EXPECT_TRUE(seen);
}

TEST(NullProtectionTest, ConnectionIdsRepeatAcrossRuns) {
  std::vector<uint8_t> first_run, second_run;
  for (std::vector<uint8_t>* out : {&first_run, &second_run}) {
    FuzzPair pair;
    Captured captured;
    capture(pair, captured);
    ASSERT_TRUE(pair.handshake());
    // The client's Initial DCID and SCID, and the server's SCID.
    wire::ParsedHeader client, server;
    ASSERT_EQ(wire::parse_packet_header(captured.to_server.front(), 16, client),
              wire::WireError::kOk);
    ASSERT_EQ(wire::parse_packet_header(captured.to_client.front(), 16, server),
              wire::WireError::kOk);
    out->insert(out->end(), client.dcid.begin(), client.dcid.end());
    out->insert(out->end(), client.scid.begin(), client.scid.end());
    out->insert(out->end(), server.scid.begin(), server.scid.end());
  }
  EXPECT_EQ(first_run, second_run);
  EXPECT_GE(first_run.size(), 8u + 16u + 16u);
}

TEST(NullProtectionTest, InitialWithAnotherTagDoesNotOpen) {
  std::vector<uint8_t> initial;
  {
    FuzzPair pair;
    Captured captured;
    capture(pair, captured);
    ASSERT_TRUE(pair.handshake());
    initial = captured.to_server.front();
  }
  wire::ParsedHeader header;
  ASSERT_EQ(wire::parse_packet_header(initial, 16, header), wire::WireError::kOk);
  const conn::PathAddresses path{kServerAddress, kClientAddress};
  for (const bool tampered : {true, false}) {
    std::unique_ptr<endpoint::Endpoint> server = make_server();
    std::vector<uint8_t> datagram = initial;
    if (tampered) datagram[header.packet_size - 1] ^= 0x01;
    server->handle_datagram(kSecond, path, transmit::EcnCodepoint::kNotEct, datagram);
    EXPECT_EQ(server->connection_count(), tampered ? 0u : 1u);
  }
}

// What a fuzz input looks like: a 1-RTT packet written by hand (short
// header, packet number in the clear, a STREAM frame, the zero tag) reaches
// the server's stream.
TEST(NullProtectionTest, HandWrittenPacketReachesTheStreams) {
  transmit::ChunkPool pool(4096, 8);
  FuzzPair pair;
  ASSERT_TRUE(pair.handshake());
  Captured captured;
  capture(pair, captured);
  const uint64_t stream =
      *pair.client().open_stream(pair.client_handle(), conn::StreamDirection::kBidirectional);
  const uint8_t one[] = {'x'};
  pair.client().send(pair.client_handle(), stream, pool.copy_from(one), false);
  pair.settle();
  ASSERT_FALSE(captured.to_server.empty());
  const std::vector<uint8_t>& sent = captured.to_server.front();
  ASSERT_EQ(sent[0] & 0xc0, 0x40);
  const uint64_t before = pair.server_connection()->stats().stream_bytes_received;

  std::vector<uint8_t> packet(sent.begin(), sent.begin() + 17);  // first byte, 16-byte DCID
  packet[0] = 0x41;                                              // 2-byte packet number
  const uint8_t rest[] = {0x04, 0x00,                            // packet number 1024
                          0x0b, 0x04, 0x05, 'h',  'e',  'l',  'l',  'o',  // STREAM 4, FIN
                          0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  packet.insert(packet.end(), std::begin(rest), std::end(rest));
  packet.insert(packet.end(), kNullTag.begin(), kNullTag.end());
  pair.server().handle_datagram(pair.now(), conn::PathAddresses{kServerAddress, kClientAddress},
                                transmit::EcnCodepoint::kNotEct, packet);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->close_error_code(), 0u);
  EXPECT_EQ(server->stats().stream_bytes_received, before + 5);

  // Delivered to the real client, the server's ACK of packet 1024 (which
  // the client never sent) is a PROTOCOL_VIOLATION (RFC 9000 §13.1): the
  // established targets therefore cut the link, the input is the peer.
  pair.disconnect();
  pair.settle();
  ASSERT_NE(pair.server_connection(), nullptr);
  ASSERT_NE(pair.client_connection(), nullptr);
  EXPECT_TRUE(pair.server_connection()->is_established());
}

}  // namespace
}  // namespace dpquic::fuzz
