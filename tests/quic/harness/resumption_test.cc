// Scenario: a second connection from the same client endpoint resumes the
// first one's TLS session (a PSK from its NewSessionTicket) and presents the
// NEW_TOKEN token the server issued (RFC 9000 §8.1.3), which validates the
// client's address: no Retry even though the server retries every Initial
// without a valid token.

#include <gtest/gtest.h>

#include <vector>

#include "tests/quic/harness/packet_census.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using wire::PacketType;

constexpr size_t kCidLength = 16;

struct FirstInitial {
  std::vector<uint8_t> dcid;
  std::vector<uint8_t> token;
  bool seen = false;
};

TEST(ResumptionTest, SecondConnectionResumesAndSkipsRetryWithNewToken) {
  PairOptions options;
  options.server.retry.mode = endpoint::RetryMode::kAlways;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  // The first Initial of each connection attempt (by client SCID), and the
  // Retries.
  bool second_started = false;
  FirstInitial second_initial;
  uint64_t retries_seen = 0;
  pair.simulator->set_observer([&](bool client_to_server, Instant, const Datagram& d) {
    for_each_packet(d.bytes, kCidLength, [&](const wire::ParsedHeader& h) {
      if (!client_to_server && h.type == PacketType::kRetry) ++retries_seen;
      if (client_to_server && second_started && !second_initial.seen &&
          h.type == PacketType::kInitial) {
        second_initial.seen = true;
        second_initial.dcid.assign(h.dcid.begin(), h.dcid.end());
        second_initial.token.assign(h.token.begin(), h.token.end());
      }
    });
  });

  // First connection: Retry, full handshake, a ticket and a NEW_TOKEN.
  const auto first = pair.connect();
  client_app.request(first, 10'000);
  ASSERT_TRUE(pair.run_until([&] {
    conn::Connection* c = pair.client_connection(first);
    return client_app.completed() == 1 && c->received_new_token() &&
           pair.client_tls->cached_session_count() == 1;
  }));
  EXPECT_EQ(retries_seen, 1u);
  EXPECT_FALSE(pair.client_connection(first)->tls()->session_resumed());
  // Close it and let the server free it, so the server's only connection is
  // the second one.
  // The close reaches the server, which drains: both free it within the
  // closing/draining period (3 PTO), long before the idle timeout.
  const Instant closed_at = pair.simulator->now();
  pair.client->close(closed_at, first, 0, "done");
  ASSERT_TRUE(pair.run_until([&] {
    return pair.server->connection_count() == 0 && pair.client->connection_count() == 0;
  }));
  EXPECT_LT(pair.simulator->now() - closed_at, kSecond);

  second_started = true;
  const auto second = pair.connect();
  conn::Connection* client = pair.client_connection(second);
  ASSERT_NE(client, nullptr);
  client_app.request(second, 50'000);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 2; }));
  EXPECT_EQ(client_app.mismatches(), 0u);
  EXPECT_EQ(client_app.bytes_received(), 60'000u);

  // The token went out in the very first Initial, to the client's own
  // random DCID, and validated the address: no second Retry.
  ASSERT_TRUE(second_initial.seen);
  EXPECT_FALSE(second_initial.token.empty());
  EXPECT_EQ(wire::ConnectionId(second_initial.dcid), client->original_dcid());
  EXPECT_EQ(retries_seen, 1u);
  EXPECT_EQ(pair.server->stats().retries_sent, 1u);
  EXPECT_EQ(pair.server->stats().invalid_tokens, 0u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 2u);

  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->address_validated());
  EXPECT_TRUE(client->tls()->session_resumed());
  EXPECT_TRUE(server->tls()->session_resumed());
  // No Retry: the server's parameters carry no retry_source_connection_id,
  // and original_destination_connection_id is the client's first DCID.
  EXPECT_FALSE(client->peer_parameters().has(wire::TransportParameter::kRetrySourceConnectionId));
  EXPECT_EQ(client->peer_parameters().original_destination_connection_id, client->original_dcid());
}

}  // namespace
}  // namespace dpquic::harness
