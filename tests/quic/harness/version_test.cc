// Scenarios: QUIC versions.
//  - A client that starts in version 2 (RFC 9369): every long header on the
//    wire carries 0x6b3343cf, and the handshake and a download work.
//  - Compatible version negotiation (RFC 9368) from version 1 to version 2:
//    the client starts in v1 offering v2; a server preferring v2 answers in
//    v2, the client follows, and both end up in v2.
//  - An unknown version: the server answers with Version Negotiation and
//    the client gives up (RFC 9000 §6.2).
//  - Incompatible negotiation (RFC 9368 §2.1, §4): after Version
//    Negotiation a new attempt in a listed version succeeds, and one the
//    server's Available Versions contradict is closed as a downgrade.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kTransferBytes = 1 << 20;
// Spelled out as the RFCs give them, independently of quic/wire/version.h.
constexpr uint32_t kV1 = 0x00000001;         // RFC 9000
constexpr uint32_t kV2 = 0x6b3343cf;         // RFC 9369 §3.1
constexpr uint32_t kVnVersion = 0x00000000;  // RFC 9000 §17.2.1

uint32_t long_header_version(std::span<const uint8_t> bytes) {
  return static_cast<uint32_t>(bytes[1]) << 24 | static_cast<uint32_t>(bytes[2]) << 16 |
         static_cast<uint32_t>(bytes[3]) << 8 | bytes[4];
}

// The version of each long header (first packet of each datagram) seen on
// the wire, per direction and in order.
struct VersionLog {
  std::vector<uint32_t> client_to_server;
  std::vector<uint32_t> server_to_client;
  // Long-header packet type bits of the first packet, per direction.
  std::vector<uint8_t> client_types, server_types;
  void attach(Simulator& simulator) {
    simulator.set_observer([this](bool c2s, Instant, const Datagram& d) {
      if (d.bytes.size() < 5 || (d.bytes[0] & 0x80) == 0) return;
      (c2s ? client_to_server : server_to_client).push_back(long_header_version(d.bytes));
      (c2s ? client_types : server_types).push_back(static_cast<uint8_t>((d.bytes[0] >> 4) & 3));
    });
  }
};

struct Apps {
  explicit Apps(QuicPair& pair) : server(*pair.server), client(*pair.client) {
    pair.server_node->set_application([this](Instant now) { server.run(now); });
    pair.client_node->set_application([this](Instant now) { client.run(now); });
  }
  PerfServer server;
  PerfClient client;
};

TEST(VersionTest, ClientStartingInVersion2) {
  QuicPair pair;
  Apps apps(pair);
  VersionLog log;
  log.attach(*pair.simulator);
  const auto handle = pair.connect(kV2);
  apps.client.request(handle, kTransferBytes);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.completed() == 1; }));
  EXPECT_EQ(apps.client.bytes_received(), kTransferBytes);
  EXPECT_EQ(apps.client.mismatches(), 0u);
  conn::Connection* client = pair.client_connection(handle);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(client->version(), kV2);
  EXPECT_EQ(server->version(), kV2);
  EXPECT_TRUE(client->handshake_confirmed());
  ASSERT_FALSE(log.client_to_server.empty());
  ASSERT_FALSE(log.server_to_client.empty());
  for (uint32_t v : log.client_to_server) EXPECT_EQ(v, kV2);
  for (uint32_t v : log.server_to_client) EXPECT_EQ(v, kV2);
  // RFC 9369 §3.2: an Initial is type 0b01 in v2 (0b00 in v1).
  EXPECT_EQ(log.client_types.front(), 0b01);
  EXPECT_EQ(log.server_types.front(), 0b01);
  // Both sides confirmed the version in their transport parameters.
  EXPECT_EQ(client->peer_parameters().version_information.chosen_version, kV2);
  EXPECT_EQ(server->peer_parameters().version_information.chosen_version, kV2);
}

TEST(VersionTest, ClientStartingInVersion1StaysThereWithAV1OnlyServer) {
  PairOptions options;
  options.server.connection.versions = {kV1};
  QuicPair pair(options);
  Apps apps(pair);
  VersionLog log;
  log.attach(*pair.simulator);
  const auto handle = pair.connect(kV1);
  apps.client.request(handle, kTransferBytes);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.completed() == 1; }));
  EXPECT_EQ(apps.client.mismatches(), 0u);
  EXPECT_EQ(pair.client_connection(handle)->version(), kV1);
  EXPECT_EQ(pair.server_connection()->version(), kV1);
  for (uint32_t v : log.client_to_server) EXPECT_EQ(v, kV1);
  for (uint32_t v : log.server_to_client) EXPECT_EQ(v, kV1);
}

TEST(VersionTest, CompatibleNegotiationFromVersion1ToVersion2) {
  PairOptions options;
  options.server.connection.versions = {kV2, kV1};
  options.client.connection.versions = {kV1, kV2};
  QuicPair pair(options);
  Apps apps(pair);
  VersionLog log;
  log.attach(*pair.simulator);
  const auto handle = pair.connect(kV1);
  apps.client.request(handle, kTransferBytes);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.completed() == 1; }));
  EXPECT_EQ(apps.client.bytes_received(), kTransferBytes);
  EXPECT_EQ(apps.client.mismatches(), 0u);
  conn::Connection* client = pair.client_connection(handle);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(client->handshake_confirmed());
  EXPECT_EQ(client->version(), kV2);
  EXPECT_EQ(server->version(), kV2);
  // The client's first flight is v1 (an Initial, type 0b00); every server
  // long header is v2, its first an Initial (type 0b01); once the client
  // saw it, every client long header is v2 too.
  ASSERT_FALSE(log.client_to_server.empty());
  ASSERT_FALSE(log.server_to_client.empty());
  EXPECT_EQ(log.client_to_server.front(), kV1);
  EXPECT_EQ(log.client_types.front(), 0b00);
  for (uint32_t v : log.server_to_client) EXPECT_EQ(v, kV2);
  EXPECT_EQ(log.server_types.front(), 0b01);
  size_t first_v2 = 0;
  while (first_v2 < log.client_to_server.size() && log.client_to_server[first_v2] != kV2) {
    ++first_v2;
  }
  ASSERT_LT(first_v2, log.client_to_server.size());
  for (size_t i = first_v2; i < log.client_to_server.size(); ++i) {
    EXPECT_EQ(log.client_to_server[i], kV2);
  }
  // The version information (RFC 9368 §3): the client's chosen version is
  // the one it started with, the server's the negotiated one, and each
  // lists what it supports.
  const auto& from_client = server->peer_parameters().version_information;
  EXPECT_EQ(from_client.chosen_version, kV1);
  ASSERT_EQ(from_client.available_version_count, 2u);
  EXPECT_EQ(from_client.available_versions[0], kV1);
  EXPECT_EQ(from_client.available_versions[1], kV2);
  const auto& from_server = client->peer_parameters().version_information;
  EXPECT_EQ(from_server.chosen_version, kV2);
  ASSERT_EQ(from_server.available_version_count, 2u);
  EXPECT_EQ(from_server.available_versions[0], kV2);
}

// The server's first v2 flight is lost, so the client keeps sending v1
// Initials (its PTO retransmissions) to a server already in v2, which must
// still accept them until the client switches (RFC 9368 §4).
TEST(VersionTest, ServerAcceptsVersion1InitialsUntilTheClientSwitches) {
  PairOptions options;
  options.server.connection.versions = {kV2, kV1};
  options.client.connection.versions = {kV1, kV2};
  options.server_to_client.drop_indices = {0, 1, 2};
  QuicPair pair(options);
  Apps apps(pair);
  VersionLog log;
  log.attach(*pair.simulator);
  const auto handle = pair.connect(kV1);
  apps.client.request(handle, kTransferBytes);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.completed() == 1; }));
  EXPECT_EQ(apps.client.mismatches(), 0u);
  EXPECT_EQ(pair.client_connection(handle)->version(), kV2);
  EXPECT_EQ(pair.server_connection()->version(), kV2);
  // More than one v1 datagram reached the server.
  size_t v1 = 0;
  for (uint32_t v : log.client_to_server) v1 += v == kV1 ? 1 : 0;
  EXPECT_GE(v1, 2u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 1u);
}

// The client's version is one this server does not offer (our client can
// only start in a version it can build Initial packets for: v2 here, with a
// server configured for v1 alone).
TEST(VersionTest, UnknownVersionGetsVersionNegotiation) {
  PairOptions options;
  options.server.connection.versions = {kV1};
  options.client.connection.versions = {kV2};
  QuicPair pair(options);
  Apps apps(pair);
  std::vector<uint32_t> server_versions;
  std::vector<uint32_t> offered;  // versions listed in the VN packet
  pair.simulator->set_observer([&](bool c2s, Instant, const Datagram& d) {
    if (c2s || d.bytes.size() < 7) return;
    server_versions.push_back(long_header_version(d.bytes));
    // RFC 8999 §6: DCID, SCID, then the supported versions.
    size_t at = 5;
    at += 1 + d.bytes[at];
    if (at >= d.bytes.size()) return;
    at += 1 + d.bytes[at];
    for (; at + 4 <= d.bytes.size(); at += 4)
      offered.push_back(long_header_version(d.bytes.subspan(at - 1)));
  });
  const auto handle = pair.connect(kV2);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.closed() == 1; }, 5 * kSecond));
  // One Version Negotiation packet (version 0), and no connection.
  ASSERT_EQ(server_versions.size(), 1u);
  EXPECT_EQ(server_versions[0], kVnVersion);
  // It offers v1 and one reserved (greasing) version, 0x?a?a?a?a.
  ASSERT_EQ(offered.size(), 2u);
  EXPECT_EQ(std::count(offered.begin(), offered.end(), kV1), 1);
  EXPECT_EQ(std::count_if(offered.begin(), offered.end(),
                          [](uint32_t v) { return (v & 0x0f0f0f0f) == 0x0a0a0a0a; }),
            1);
  EXPECT_EQ(pair.server->stats().version_negotiations_sent, 1u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 0u);
  ASSERT_EQ(apps.client.close_events().size(), 1u);
  EXPECT_EQ(apps.client.close_events()[0].close_reason, conn::CloseReason::kVersionNegotiation);
  conn::Connection* client = pair.client_connection(handle);
  if (client != nullptr) {
    EXPECT_EQ(client->close_reason(), conn::CloseReason::kVersionNegotiation);
  }
}

// Incompatible version negotiation (RFC 9368 §2.1): a client speaking v2 and
// v1 starts in v2 against a v1-only server; the Version Negotiation packet
// names v1, which the closed connection reports, and a new attempt in v1
// that says it follows the negotiation completes a download. The server's
// Available Versions (v1) confirm the choice (§4).
TEST(VersionTest, IncompatibleNegotiationStartsAgainInAListedVersion) {
  PairOptions options;
  options.server.connection.versions = {kV1};
  options.client.connection.versions = {kV2, kV1};
  QuicPair pair(options);
  conn::CloseReason first_close = conn::CloseReason::kNone;
  uint32_t next_version = 0;
  bool closed = false;
  pair.client_node->set_application([&](Instant) {
    endpoint::EndpointEvent event;
    while (pair.client->poll_event(event)) {
      if (event.event.type != conn::ConnectionEventType::kClosed) continue;
      // The connection lives until its last event was polled.
      const conn::Connection* c = pair.client->connection(event.connection);
      ASSERT_NE(c, nullptr);
      first_close = c->close_reason();
      next_version = c->version_after_negotiation();
      closed = true;
    }
  });
  pair.connect(kV2);
  ASSERT_TRUE(pair.run_until([&] { return closed; }, 5 * kSecond));
  EXPECT_EQ(first_close, conn::CloseReason::kVersionNegotiation);
  EXPECT_EQ(next_version, kV1);

  Apps apps(pair);
  VersionLog log;
  log.attach(*pair.simulator);
  const PathAddresses path{pair.options.client_address, pair.options.server_address};
  const auto handle = pair.client->connect(pair.simulator->now(), path, "localhost", kV1, kV2);
  ASSERT_TRUE(handle.has_value());
  apps.client.request(*handle, kTransferBytes);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.completed() == 1; }));
  EXPECT_EQ(apps.client.bytes_received(), kTransferBytes);
  EXPECT_EQ(apps.client.mismatches(), 0u);
  conn::Connection* client = pair.client_connection(*handle);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->version(), kV1);
  EXPECT_EQ(client->version_negotiated_from(), kV2);
  EXPECT_TRUE(client->handshake_confirmed());
  for (uint32_t v : log.client_to_server) EXPECT_EQ(v, kV1);
  for (uint32_t v : log.server_to_client) EXPECT_EQ(v, kV1);
  EXPECT_EQ(pair.server->stats().version_negotiations_sent, 1u);
}

// Downgrade prevention (RFC 9368 §4): an attempt in v1 made because of a
// (here: forged) Version Negotiation packet that hid v2 meets a server whose
// Available Versions list v2, which this client prefers: the client closes
// with VERSION_NEGOTIATION_ERROR instead of completing the handshake.
TEST(VersionTest, ServerVersionsThatContradictTheNegotiationAreADowngrade) {
  PairOptions options;
  options.server.connection.versions = {kV1, kV2};
  options.client.connection.versions = {kV2, kV1};
  QuicPair pair(options);
  Apps apps(pair);
  const PathAddresses path{pair.options.client_address, pair.options.server_address};
  const auto handle = pair.client->connect(pair.simulator->now(), path, "localhost", kV1, kV2);
  ASSERT_TRUE(handle.has_value());
  apps.client.request(*handle, kTransferBytes);
  ASSERT_TRUE(pair.run_until([&] { return apps.client.closed() == 1; }, 5 * kSecond));
  EXPECT_EQ(apps.client.completed(), 0u);
  ASSERT_EQ(apps.client.close_events().size(), 1u);
  EXPECT_EQ(apps.client.close_events()[0].error_code,
            static_cast<uint64_t>(wire::TransportErrorCode::kVersionNegotiationError));
}

}  // namespace
}  // namespace dpquic::harness
