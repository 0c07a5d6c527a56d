// Scenario: the hosts of a fleet behind one load balancer. They share a host
// secret (crypto/host_keys.h) and read address tokens on the wall clock
// (EndpointConfig::token_clock_offset), though their monotonic clocks, which
// `now` comes from, are hours apart. A NEW_TOKEN token one host issued lets
// the client skip Retry at another, from another source port (RFC 9000
// §8.1.3); a stateless reset from another host ends a connection the first
// one served (§10.3).

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "crypto/host_keys.h"
#include "tests/quic/harness/direct_drive.h"
#include "tests/quic/harness/packet_census.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using wire::PacketType;

constexpr size_t kCidLength = 16;
// CLOCK_REALTIME when the client's clock reads 0, and how far each host's
// monotonic clock runs ahead of the client's.
constexpr Instant kRealtimeAtZero = 1'700'000'000 * kSecond;
constexpr Duration kFirstHostAhead = 5 * 3600 * kSecond;
constexpr Duration kSecondHostAhead = 0;

crypto::HostKeys host_keys(uint8_t seed) {
  return crypto::derive_host_keys(std::vector<uint8_t>(crypto::kMinHostSecretLength, seed));
}

// A server host of the fleet: its endpoint, and its monotonic clock.
struct Host {
  endpoint::Endpoint& endpoint;
  Duration ahead = 0;
  Instant now(Instant client_now) const { return client_now + ahead; }
};

// A server always answering Initials without a valid token with Retry, its
// keys from `keys`. `wall_clock`: token times on CLOCK_REALTIME, as the
// dataplane sets them; otherwise on the host's own monotonic clock.
endpoint::EndpointConfig host_config(endpoint::EndpointConfig config, const crypto::HostKeys& keys,
                                     Duration ahead, bool wall_clock = true) {
  config.retry.mode = endpoint::RetryMode::kAlways;
  config.stateless_reset_key = keys.stateless_reset_key;
  config.address_token_key = keys.address_token_key;
  config.token_clock_offset = wall_clock ? static_cast<int64_t>(kRealtimeAtZero - ahead) : 0;
  return config;
}

// The pair's server is the first host.
PairOptions fleet_options(const crypto::HostKeys& keys, bool wall_clock = true) {
  PairOptions options;
  options.server = host_config(options.server, keys, kFirstHostAhead, wall_clock);
  return options;
}

// Runs the client against `host` in 1 ms steps of the client's clock `t`
// until `done` or `steps` steps.
template <typename Done>
bool exchange(QuicPair& pair, Host host, Instant& t, Done done, int steps = 2000) {
  endpoint::Endpoint& client = *pair.client;
  for (int i = 0; i < steps && !done(); ++i) {
    t += kMillisecond;
    if (client.poll_timeout() <= t) client.handle_timeout(t);
    if (host.endpoint.poll_timeout() <= host.now(t)) host.endpoint.handle_timeout(host.now(t));
    for (const SentDatagram& d : collect_transmit(client, t)) {
      deliver(host.endpoint, host.now(t), d, d.path.local);
    }
    for (const SentDatagram& d : collect_transmit(host.endpoint, host.now(t))) {
      deliver(client, t, d, pair.options.server_address);
    }
  }
  return done();
}

// A client connection from `from` to the fleet's address.
endpoint::ConnectionHandle open_connection(QuicPair& pair, Instant t, const SocketAddress& from) {
  const auto handle = pair.client->connect(t, {from, pair.options.server_address}, "localhost");
  EXPECT_TRUE(handle.has_value());
  return handle.value_or(0);
}

// The client's first connection, to `host`: Retry (no token yet), the
// handshake, and a NEW_TOKEN token the client keeps for "localhost". The
// connection is then dropped on the client's side.
void first_visit(QuicPair& pair, Host host, Instant& t) {
  const auto handle = open_connection(pair, t, pair.options.client_address);
  ASSERT_TRUE(exchange(pair, host, t, [&] {
    const conn::Connection* c = pair.client->connection(handle);
    return c != nullptr && c->handshake_confirmed() && c->received_new_token();
  }));
  EXPECT_EQ(host.endpoint.stats().retries_sent, 1u);
  pair.client->reset_connections();
}

// What `host` did with the client's next connection, from another port.
struct NextVisit {
  bool initial_had_token = false;
  bool retried = false;
  bool validated_at_first_initial = false;
  bool confirmed = false;
};

NextVisit next_visit(QuicPair& pair, Host host, Instant& t) {
  NextVisit visit;
  const SocketAddress from = SocketAddress::ipv4(10, 0, 0, 1, 50001);
  EXPECT_NE(from.port, pair.options.client_address.port);
  const auto handle = open_connection(pair, t, from);
  const std::vector<SentDatagram> initials = collect_transmit(*pair.client, t);
  if (initials.empty()) return visit;
  for_each_packet(initials[0].bytes, kCidLength, [&](const wire::ParsedHeader& h) {
    if (h.type == PacketType::kInitial) visit.initial_had_token = !h.token.empty();
  });
  for (const SentDatagram& d : initials) deliver(host.endpoint, host.now(t), d, d.path.local);
  const std::vector<SentDatagram> replies = collect_transmit(host.endpoint, host.now(t));
  for (const SentDatagram& d : replies) {
    visit.retried |= contains_packet(d.bytes, kCidLength, PacketType::kRetry);
    deliver(*pair.client, t, d, pair.options.server_address);
  }
  visit.validated_at_first_initial =
      host.endpoint.connection_count() == 1 && host.endpoint.unvalidated_count() == 0;
  visit.confirmed = exchange(pair, host, t, [&] {
    const conn::Connection* c = pair.client->connection(handle);
    return c != nullptr && c->handshake_confirmed();
  });
  return visit;
}

TEST(FleetTest, NewTokenFromOneHostSkipsRetryAtAnother) {
  const crypto::HostKeys keys = host_keys(0x51);
  QuicPair pair(fleet_options(keys));
  endpoint::Endpoint second(host_config(pair.options.server, keys, kSecondHostAhead), pair.mb,
                            *pair.server_tls);
  Instant t = kSecond;
  first_visit(pair, {*pair.server, kFirstHostAhead}, t);

  const NextVisit visit = next_visit(pair, {second, kSecondHostAhead}, t);
  EXPECT_TRUE(visit.initial_had_token);
  EXPECT_FALSE(visit.retried);
  EXPECT_TRUE(visit.validated_at_first_initial);
  EXPECT_TRUE(visit.confirmed);
  EXPECT_EQ(second.stats().retries_sent, 0u);
  EXPECT_EQ(second.stats().invalid_tokens, 0u);
  EXPECT_EQ(second.stats().connections_accepted, 1u);
}

// The same hosts on their monotonic clocks: the second, 5 h behind the
// first, reads the token as issued in the future and retries.
TEST(FleetTest, WithoutTheWallClockTheTokenLooksFromTheFuture) {
  const crypto::HostKeys keys = host_keys(0x51);
  QuicPair pair(fleet_options(keys, false));
  endpoint::Endpoint second(host_config(pair.options.server, keys, kSecondHostAhead, false),
                            pair.mb, *pair.server_tls);
  Instant t = kSecond;
  first_visit(pair, {*pair.server, kFirstHostAhead}, t);

  const NextVisit visit = next_visit(pair, {second, kSecondHostAhead}, t);
  EXPECT_TRUE(visit.initial_had_token);
  EXPECT_TRUE(visit.retried);
  EXPECT_FALSE(visit.validated_at_first_initial);
  EXPECT_TRUE(visit.confirmed);  // through the Retry
  EXPECT_EQ(second.stats().retries_sent, 1u);
  EXPECT_EQ(second.stats().invalid_tokens, 1u);
}

TEST(FleetTest, HostWithAnotherSecretRetries) {
  QuicPair pair(fleet_options(host_keys(0x51)));
  endpoint::Endpoint stranger(host_config(pair.options.server, host_keys(0x52), kSecondHostAhead),
                              pair.mb, *pair.server_tls);
  Instant t = kSecond;
  first_visit(pair, {*pair.server, kFirstHostAhead}, t);

  const NextVisit visit = next_visit(pair, {stranger, kSecondHostAhead}, t);
  EXPECT_TRUE(visit.initial_had_token);
  EXPECT_TRUE(visit.retried);
  EXPECT_FALSE(visit.validated_at_first_initial);
  EXPECT_TRUE(visit.confirmed);
  EXPECT_EQ(stranger.stats().retries_sent, 1u);
  EXPECT_EQ(stranger.stats().invalid_tokens, 1u);
}

// A host that rotated to a new secret still accepts tokens issued under the
// old one, kept as a previous key.
TEST(FleetTest, HostThatRotatedAcceptsTokensUnderThePreviousKey) {
  const crypto::HostKeys old_keys = host_keys(0x51);
  QuicPair pair(fleet_options(old_keys));
  endpoint::EndpointConfig rotated =
      host_config(pair.options.server, host_keys(0x53), kSecondHostAhead);
  rotated.previous_address_token_keys = {old_keys.address_token_key};
  endpoint::Endpoint second(rotated, pair.mb, *pair.server_tls);
  Instant t = kSecond;
  first_visit(pair, {*pair.server, kFirstHostAhead}, t);

  const NextVisit visit = next_visit(pair, {second, kSecondHostAhead}, t);
  EXPECT_TRUE(visit.initial_had_token);
  EXPECT_FALSE(visit.retried);
  EXPECT_TRUE(visit.validated_at_first_initial);
  EXPECT_TRUE(visit.confirmed);
  EXPECT_EQ(second.stats().invalid_tokens, 0u);
}

// A host re-reading its keys (the dataplane's reload) with the fleet's old
// address-token key kept as a previous one accepts tokens issued under it;
// keys of the wrong size change nothing.
TEST(FleetTest, HostThatReplacedItsKeysAcceptsTokensUnderThePreviousKey) {
  const crypto::HostKeys old_keys = host_keys(0x51);
  QuicPair pair(fleet_options(old_keys));
  endpoint::Endpoint second(host_config(pair.options.server, host_keys(0x55), kSecondHostAhead),
                            pair.mb, *pair.server_tls);
  const wire::ConnectionId cid(std::vector<uint8_t>(kCidLength, 0x77));
  const crypto::StatelessResetToken reset_before = second.core().reset_tokens->token_for(cid);
  const crypto::HostKeys new_keys = host_keys(0x53);
  const std::vector<std::vector<uint8_t>> previous = {old_keys.address_token_key};
  EXPECT_FALSE(
      second.replace_keys(new_keys.stateless_reset_key, std::vector<uint8_t>(15, 1), previous));
  EXPECT_FALSE(
      second.replace_keys(std::vector<uint8_t>(31, 1), new_keys.address_token_key, previous));
  EXPECT_EQ(second.core().reset_tokens->token_for(cid), reset_before);
  ASSERT_TRUE(
      second.replace_keys(new_keys.stateless_reset_key, new_keys.address_token_key, previous));
  EXPECT_EQ(second.core().reset_tokens->token_for(cid),
            crypto::StatelessResetTokens(new_keys.stateless_reset_key).token_for(cid));
  Instant t = kSecond;
  first_visit(pair, {*pair.server, kFirstHostAhead}, t);

  const NextVisit visit = next_visit(pair, {second, kSecondHostAhead}, t);
  EXPECT_TRUE(visit.initial_had_token);
  EXPECT_FALSE(visit.retried);
  EXPECT_TRUE(visit.validated_at_first_initial);
  EXPECT_TRUE(visit.confirmed);
  EXPECT_EQ(second.stats().invalid_tokens, 0u);
}

// A connection established with the first host; its packets then reach a
// second host (the first went away, or the load balancer moved the flow).
// With the same secret the second host's stateless reset carries the token
// the client knows for that CID, and the client closes; with another secret
// the reset is not recognised.
TEST(FleetTest, StatelessResetFromAnotherHostEndsTheConnection) {
  for (const bool same_secret : {true, false}) {
    const crypto::HostKeys keys = host_keys(0x51);
    PairOptions options = fleet_options(keys);
    options.client.connection.keep_alive_interval = 100 * kMillisecond;
    QuicPair pair(options);
    endpoint::Endpoint second(
        host_config(pair.options.server, host_keys(same_secret ? 0x51 : 0x54), kSecondHostAhead),
        pair.mb, *pair.server_tls);
    Instant t = kSecond;
    const auto handle = open_connection(pair, t, pair.options.client_address);
    conn::Connection* client = pair.client->connection(handle);
    ASSERT_TRUE(exchange(pair, {*pair.server, kFirstHostAhead}, t,
                         [&] { return client->handshake_confirmed(); }));

    // Past the keep-alive interval the client sends a PING, which reaches
    // the second host: it knows no connection and answers with a reset.
    t += 150 * kMillisecond;
    pair.client->handle_timeout(t);
    const std::vector<SentDatagram> pings = collect_transmit(*pair.client, t);
    ASSERT_FALSE(pings.empty());
    wire::ParsedHeader header;
    ASSERT_EQ(wire::parse_packet_header(pings[0].bytes, kCidLength, header), wire::WireError::kOk);
    ASSERT_FALSE(header.long_header);
    const wire::ConnectionId cid = header.destination_connection_id();
    EXPECT_EQ(second.core().reset_tokens->token_for(cid) ==
                  pair.server->core().reset_tokens->token_for(cid),
              same_secret);
    for (const SentDatagram& d : pings) deliver(second, t + kSecondHostAhead, d, d.path.local);
    const std::vector<SentDatagram> resets = collect_transmit(second, t + kSecondHostAhead);
    EXPECT_EQ(resets.size(), pings.size());
    EXPECT_EQ(second.stats().stateless_resets_sent, pings.size());
    for (const SentDatagram& d : resets) deliver(*pair.client, t, d, pair.options.server_address);
    if (same_secret) {
      EXPECT_EQ(client->close_reason(), conn::CloseReason::kStatelessReset);
    } else {
      EXPECT_EQ(client->state(), conn::ConnectionState::kEstablished);
    }
  }
}

}  // namespace
}  // namespace dpquic::harness
