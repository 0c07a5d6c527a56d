// The flood's packets as our server endpoint sees them: a valid Initial
// passes the endpoint's authenticity check and starts a handshake that TLS
// and the transport parameter checks accept; junk is dropped and leaves
// nothing behind.
#include "tools/flood/initial_builder.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
#include "quic/endpoint/endpoint.h"
#include "quic/wire/header.h"
#include "quic/wire/version.h"

namespace dpquic::flood {
namespace {

class InitialBuilderTest : public ::testing::Test {
 protected:
  InitialBuilderTest()
      : certificate_(crypto::CertificateChain::generate_self_signed()),
        builder_(mb_, make_client_hello_template("localhost"), 42) {
    crypto::TlsServerConfig tls;
    tls.certificate = &certificate_;
    tls_ = crypto::TlsContext::create_server(tls);
    endpoint::EndpointConfig config;
    config.role = wire::Role::kServer;
    config.retry.mode = endpoint::RetryMode::kNever;
    config.max_connections = 256;
    config.max_half_open_per_prefix = 0;  // every packet comes from one address
    endpoint_ = std::make_unique<endpoint::Endpoint>(config, mb_, *tls_);
  }

  void deliver(std::span<uint8_t> datagram, uint16_t port) {
    conn::PathAddresses path{conn::SocketAddress::ipv4(127, 0, 0, 1, 4433),
                             conn::SocketAddress::ipv4(127, 0, 0, 2, port)};
    endpoint_->handle_datagram(kSecond, path, transmit::EcnCodepoint::kNotEct, datagram);
  }

  // The live connections: all still handshaking (none closing on an error).
  size_t handshaking_connections() {
    size_t count = 0;
    for (endpoint::ConnectionHandle h = 0; h < 256; ++h) {
      const conn::Connection* c = endpoint_->connection(h);
      if (c != nullptr && c->state() == conn::ConnectionState::kHandshake) ++count;
    }
    return count;
  }

  crypto::MbManager mb_;
  crypto::CertificateChain certificate_;
  std::unique_ptr<crypto::TlsContext> tls_;
  std::unique_ptr<endpoint::Endpoint> endpoint_;
  InitialBuilder builder_;
};

TEST_F(InitialBuilderTest, ClientHelloTemplateLocatesItsFields) {
  const ClientHelloTemplate hello = make_client_hello_template("localhost");
  ASSERT_GE(hello.bytes.size(), 38u);
  EXPECT_EQ(hello.bytes[0], 1);  // HandshakeType client_hello
  const size_t length = size_t{hello.bytes[1]} << 16 | size_t{hello.bytes[2]} << 8 | hello.bytes[3];
  EXPECT_EQ(length + 4, hello.bytes.size());
  EXPECT_EQ(hello.random_offset, 6u);
  EXPECT_GT(hello.scid_offset, 38u);
  EXPECT_LE(hello.scid_offset + kScidLength, hello.bytes.size());
}

TEST_F(InitialBuilderTest, ValidInitialHasTheShapeOfAClientInitial) {
  std::array<uint8_t, kDatagramSize> packet;
  ASSERT_EQ(builder_.valid(packet), kDatagramSize);
  wire::ParsedHeader header;
  ASSERT_EQ(wire::parse_packet_header(packet, 0, header), wire::WireError::kOk);
  EXPECT_EQ(header.type, wire::PacketType::kInitial);
  EXPECT_EQ(header.version, wire::kVersion1);
  EXPECT_GE(header.dcid.size(), 8u);
  EXPECT_LE(header.dcid.size(), 20u);
  EXPECT_EQ(header.scid.size(), kScidLength);
  EXPECT_TRUE(header.token.empty());
  EXPECT_EQ(header.packet_size, kDatagramSize);
}

TEST_F(InitialBuilderTest, EveryValidInitialStartsAHandshake) {
  constexpr size_t kPackets = 100;
  std::set<std::vector<uint8_t>> dcids;
  for (size_t i = 0; i < kPackets; ++i) {
    std::array<uint8_t, kDatagramSize> packet;
    ASSERT_EQ(builder_.valid(packet), kDatagramSize);
    wire::ParsedHeader header;
    ASSERT_EQ(wire::parse_packet_header(packet, 0, header), wire::WireError::kOk);
    dcids.emplace(header.dcid.begin(), header.dcid.end());
    deliver(packet, static_cast<uint16_t>(10000 + i));
  }
  EXPECT_EQ(dcids.size(), kPackets);
  EXPECT_EQ(endpoint_->stats().connections_accepted, kPackets);
  EXPECT_EQ(endpoint_->stats().datagrams_dropped, 0u);
  EXPECT_EQ(endpoint_->connection_count(), kPackets);
  // TLS read the ClientHello and the transport parameters matched the
  // packet's SCID: no connection is closing on an error.
  EXPECT_EQ(handshaking_connections(), kPackets);
}

TEST_F(InitialBuilderTest, GarbageLooksLikeAnInitialButLeavesNoState) {
  constexpr size_t kPackets = 100;
  for (size_t i = 0; i < kPackets; ++i) {
    std::array<uint8_t, kDatagramSize> packet;
    ASSERT_EQ(builder_.garbage(packet), kDatagramSize);
    wire::ParsedHeader header;
    ASSERT_EQ(wire::parse_packet_header(packet, 0, header), wire::WireError::kOk);
    EXPECT_EQ(header.type, wire::PacketType::kInitial);
    EXPECT_EQ(header.version, wire::kVersion1);
    EXPECT_GE(header.dcid.size(), 8u);
    EXPECT_EQ(header.scid.size(), kScidLength);
    EXPECT_TRUE(header.token.empty());
    EXPECT_EQ(header.packet_size, kDatagramSize);
    deliver(packet, static_cast<uint16_t>(20000 + i));
  }
  EXPECT_EQ(endpoint_->stats().datagrams_dropped, kPackets);
  EXPECT_EQ(endpoint_->stats().connections_accepted, 0u);
  EXPECT_EQ(endpoint_->connection_count(), 0u);
}

}  // namespace
}  // namespace dpquic::flood
