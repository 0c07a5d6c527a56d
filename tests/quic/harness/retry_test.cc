// Scenario: Retry (RFC 9000 §8.1.2, §17.2.5; RFC 9001 §5.8). The server
// answers Initials without a token with Retry, always or under half-open
// pressure; the client comes back with the token, and both sides check the
// connection IDs the Retry changed (§7.3). A tampered Retry is ignored, and
// Retry tokens only validate the address they were issued to.

#include <gtest/gtest.h>

#include <vector>

#include "quic/endpoint/stateless_packets.h"
#include "tests/quic/harness/direct_drive.h"
#include "tests/quic/harness/packet_census.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using wire::PacketType;
using wire::TransportParameter;

constexpr size_t kCidLength = 16;

PairOptions always_retry() {
  PairOptions options;
  options.server.retry.mode = endpoint::RetryMode::kAlways;
  return options;
}

TEST(RetryTest, AlwaysRetryThenHandshakeChecksRetryConnectionIds) {
  QuicPair pair(always_retry());
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  std::vector<uint8_t> retry_scid, retry_token;
  uint64_t retries_seen = 0, tokened_initials = 0;
  std::vector<uint8_t> tokened_initial_dcid;
  pair.simulator->set_observer([&](bool client_to_server, Instant, const Datagram& d) {
    for_each_packet(d.bytes, kCidLength, [&](const wire::ParsedHeader& h) {
      if (!client_to_server && h.type == PacketType::kRetry) {
        ++retries_seen;
        retry_scid.assign(h.scid.begin(), h.scid.end());
        retry_token.assign(h.token.begin(), h.token.end());
      }
      if (client_to_server && h.type == PacketType::kInitial && !h.token.empty()) {
        EXPECT_EQ(std::vector<uint8_t>(h.token.begin(), h.token.end()), retry_token);
        // The first goes to the Retry's SCID; once the server's Initial
        // arrived, to the SCID the server chose for the connection.
        if (tokened_initials++ == 0) tokened_initial_dcid.assign(h.dcid.begin(), h.dcid.end());
      }
    });
  });

  const auto handle = pair.connect();
  client_app.request(handle, 100'000);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  EXPECT_EQ(client_app.mismatches(), 0u);
  EXPECT_EQ(client_app.bytes_received(), 100'000u);

  EXPECT_EQ(retries_seen, 1u);
  EXPECT_EQ(pair.server->stats().retries_sent, 1u);
  EXPECT_GE(tokened_initials, 1u);
  ASSERT_FALSE(retry_scid.empty());
  EXPECT_EQ(tokened_initial_dcid, retry_scid);

  conn::Connection* client = pair.client_connection(handle);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(client->handshake_confirmed());
  EXPECT_TRUE(server->address_validated());
  // §7.3: the server's parameters name the client's first DCID and the
  // Retry's SCID; the client checked both before completing.
  const wire::TransportParameters& params = client->peer_parameters();
  ASSERT_TRUE(params.has(TransportParameter::kRetrySourceConnectionId));
  EXPECT_EQ(params.retry_source_connection_id, wire::ConnectionId(retry_scid));
  ASSERT_TRUE(params.has(TransportParameter::kOriginalDestinationConnectionId));
  EXPECT_EQ(params.original_destination_connection_id, client->original_dcid());
  EXPECT_NE(params.original_destination_connection_id, wire::ConnectionId(retry_scid));
  // The client's own parameters carry neither (they are server-only).
  EXPECT_FALSE(server->peer_parameters().has(TransportParameter::kRetrySourceConnectionId));
}

TEST(RetryTest, AutoRetriesUnderHalfOpenPressureAndAllComplete) {
  PairOptions options;
  options.server.retry.mode = endpoint::RetryMode::kAuto;
  options.server.retry.half_open_threshold = 2;
  options.server.retry.handshake_rate_threshold = 1'000'000;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  uint64_t retries_seen = 0;
  pair.simulator->set_observer([&](bool client_to_server, Instant, const Datagram& d) {
    if (!client_to_server && contains_packet(d.bytes, kCidLength, PacketType::kRetry)) {
      ++retries_seen;
    }
  });

  std::vector<endpoint::ConnectionHandle> handles;
  for (int i = 0; i < 5; ++i) {
    handles.push_back(pair.connect());
    client_app.request(handles.back(), 20'000);
  }
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 5; }));
  EXPECT_EQ(client_app.mismatches(), 0u);
  EXPECT_EQ(client_app.bytes_received(), 5u * 20'000);
  // Two connections fit under the threshold; the other three were retried.
  EXPECT_EQ(pair.server->stats().retries_sent, 3u);
  EXPECT_EQ(retries_seen, 3u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 5u);
  EXPECT_EQ(pair.server->connection_count(), 5u);
  for (auto handle : handles) {
    conn::Connection* c = pair.client_connection(handle);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->handshake_confirmed());
  }
}

// Hands datagrams back and forth without the simulator until `done` or
// `rounds` round trips (1 ms of virtual time each).
template <typename Done>
bool ping_pong(QuicPair& pair, Instant& now, Done done, int rounds = 200) {
  for (int i = 0; i < rounds && !done(); ++i) {
    now += kMillisecond;
    for (endpoint::Endpoint* e : {pair.client.get(), pair.server.get()}) {
      if (e->poll_timeout() <= now) e->handle_timeout(now);
    }
    for (const SentDatagram& d : collect_transmit(*pair.client, now)) {
      deliver(*pair.server, now, d, pair.options.client_address);
    }
    for (const SentDatagram& d : collect_transmit(*pair.server, now)) {
      deliver(*pair.client, now, d, pair.options.server_address);
    }
  }
  return done();
}

TEST(RetryTest, TamperedRetryIsIgnored) {
  QuicPair pair(always_retry());
  Instant now = pair.simulator->now();
  const auto handle = pair.connect();
  conn::Connection* client = pair.client_connection(handle);
  ASSERT_NE(client, nullptr);

  auto initials = collect_transmit(*pair.client, now);
  ASSERT_EQ(initials.size(), 1u);
  deliver(*pair.server, now, initials[0], pair.options.client_address);
  auto retries = collect_transmit(*pair.server, now);
  ASSERT_EQ(retries.size(), 1u);
  ASSERT_TRUE(contains_packet(retries[0].bytes, kCidLength, PacketType::kRetry));
  EXPECT_EQ(pair.server->connection_count(), 0u);  // Retry keeps no state

  // Every single-bit change anywhere in the Retry (type bits, version, CIDs,
  // token, integrity tag) leaves the client as it was.
  const std::vector<uint8_t> genuine = retries[0].bytes;
  for (size_t i = 0; i < genuine.size(); ++i) {
    SentDatagram tampered = retries[0];
    tampered.bytes[i] ^= 0x01;
    deliver(*pair.client, now, tampered, pair.options.server_address);
    EXPECT_TRUE(collect_transmit(*pair.client, now).empty()) << "byte " << i;
    EXPECT_EQ(client->state(), conn::ConnectionState::kHandshake);
  }
  // The genuine Retry is still accepted (a client takes only one): the next
  // Initial goes to the Retry's SCID with its token.
  deliver(*pair.client, now, retries[0], pair.options.server_address);
  auto second = collect_transmit(*pair.client, now);
  ASSERT_FALSE(second.empty());
  wire::ParsedHeader retry_header, initial_header;
  ASSERT_EQ(wire::parse_packet_header(genuine, kCidLength, retry_header), wire::WireError::kOk);
  ASSERT_EQ(wire::parse_packet_header(second[0].bytes, kCidLength, initial_header),
            wire::WireError::kOk);
  EXPECT_EQ(initial_header.type, PacketType::kInitial);
  EXPECT_EQ(initial_header.destination_connection_id(), retry_header.source_connection_id());
  EXPECT_TRUE(std::equal(initial_header.token.begin(), initial_header.token.end(),
                         retry_header.token.begin(), retry_header.token.end()));
  for (const SentDatagram& d : second) deliver(*pair.server, now, d, pair.options.client_address);
  ASSERT_TRUE(ping_pong(pair, now, [&] { return client->handshake_confirmed(); }));
  EXPECT_EQ(pair.server->stats().retries_sent, 1u);
}

TEST(RetryTest, RetryTokenFromAnotherAddressIsRefusedWithInvalidToken) {
  QuicPair pair(always_retry());
  Instant now = pair.simulator->now();
  const auto handle = pair.connect();
  conn::Connection* client = pair.client_connection(handle);
  for (const SentDatagram& d : collect_transmit(*pair.client, now)) {
    deliver(*pair.server, now, d, pair.options.client_address);
  }
  for (const SentDatagram& d : collect_transmit(*pair.server, now)) {
    deliver(*pair.client, now, d, pair.options.server_address);
  }
  ASSERT_EQ(pair.server->stats().retries_sent, 1u);
  auto tokened = collect_transmit(*pair.client, now);
  ASSERT_FALSE(tokened.empty());

  // The tokened Initial arrives from another address (an attacker replaying
  // it, or a spoofed source): the token does not validate that address, and
  // a second Retry is not allowed, so the server refuses with INVALID_TOKEN.
  const SocketAddress other = SocketAddress::ipv4(10, 0, 0, 9, 50000);
  for (const SentDatagram& d : tokened) deliver(*pair.server, now, d, other);
  EXPECT_EQ(pair.server->stats().invalid_tokens, 1u);
  EXPECT_EQ(pair.server->stats().retries_sent, 1u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 0u);
  EXPECT_EQ(pair.server->connection_count(), 0u);
  auto refusal = collect_transmit(*pair.server, now);
  ASSERT_EQ(refusal.size(), 1u);
  EXPECT_EQ(refusal[0].path.remote, other);
  // Shown to the client, it is a CONNECTION_CLOSE with INVALID_TOKEN (0x0b).
  SentDatagram redirected = refusal[0];
  redirected.path.remote = pair.options.client_address;
  deliver(*pair.client, now, redirected, pair.options.server_address);
  EXPECT_EQ(client->close_reason(), conn::CloseReason::kPeerClose);
  EXPECT_EQ(client->close_error_code(), 0x0bu);

  // From the address it was issued to, the same token validates it.
  QuicPair second(always_retry());
  Instant t = second.simulator->now();
  second.connect();
  for (const SentDatagram& d : collect_transmit(*second.client, t)) {
    deliver(*second.server, t, d, second.options.client_address);
  }
  for (const SentDatagram& d : collect_transmit(*second.server, t)) {
    deliver(*second.client, t, d, second.options.server_address);
  }
  for (const SentDatagram& d : collect_transmit(*second.client, t)) {
    deliver(*second.server, t, d, second.options.client_address);
  }
  EXPECT_EQ(second.server->stats().invalid_tokens, 0u);
  EXPECT_EQ(second.server->stats().connections_accepted, 1u);
  ASSERT_NE(second.server_connection(), nullptr);
  EXPECT_TRUE(second.server_connection()->address_validated());
}

TEST(RetryTest, AddressTokensOnlyValidateTheirOwnAddress) {
  crypto::MbManager mb;
  const std::vector<uint8_t> key(16, 0x24);
  crypto::AddressTokens tokens(mb, key);
  const SocketAddress a = SocketAddress::ipv4(10, 0, 0, 1, 50000);
  const SocketAddress b = SocketAddress::ipv4(10, 0, 0, 1, 50001);
  const SocketAddress c = SocketAddress::ipv4(10, 0, 0, 2, 50000);
  const uint64_t now_us = 5'000'000;
  const wire::ConnectionId odcid(std::vector<uint8_t>(8, 0x33));

  for (auto type : {crypto::AddressTokenType::kRetry, crypto::AddressTokenType::kNewToken}) {
    // What each type binds: a Retry token IP and port, a NEW_TOKEN token the
    // IP only (the Retry's connection continues on its socket; a NEW_TOKEN
    // token comes back on a later connection's, RFC 9000 §8.1.3).
    const bool retry = type == crypto::AddressTokenType::kRetry;
    uint8_t encoded[SocketAddress::kEncodedMax];
    const size_t encoded_length = retry ? a.encode(encoded) : a.encode_ip(encoded);
    std::array<uint8_t, crypto::kMaxAddressTokenLength> token;
    const size_t length = tokens.issue(type, {encoded, encoded_length}, odcid, now_us, token);
    ASSERT_NE(length, 0u);
    crypto::ValidatedToken out;
    EXPECT_EQ(endpoint::check_initial_token(tokens, {token.data(), length}, a, now_us + 1, out),
              endpoint::InitialTokenAction::kValidated);
    EXPECT_EQ(out.type, type);
    // Another port of the same host: a Retry token closes the attempt (the
    // client takes no second Retry); a NEW_TOKEN token validates it.
    EXPECT_EQ(endpoint::check_initial_token(tokens, {token.data(), length}, b, now_us + 1, out),
              retry ? endpoint::InitialTokenAction::kCloseInvalidToken
                    : endpoint::InitialTokenAction::kValidated);
    // Another host: the NEW_TOKEN token is treated as absent (§8.1.3).
    EXPECT_EQ(endpoint::check_initial_token(tokens, {token.data(), length}, c, now_us + 1, out),
              retry ? endpoint::InitialTokenAction::kCloseInvalidToken
                    : endpoint::InitialTokenAction::kUnvalidated);
  }
}

}  // namespace
}  // namespace dpquic::harness
