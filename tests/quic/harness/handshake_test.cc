// Scenario: the handshake between our client and our server over the
// in-memory network, with real TLS and packet protection.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

TEST(HandshakeTest, CompletesAndConfirmsOnBothSides) {
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  const auto handle = pair.connect();
  ASSERT_TRUE(pair.run_until([&] {
    conn::Connection* c = pair.client_connection(handle);
    return c != nullptr && c->handshake_confirmed();
  }));
  conn::Connection* client = pair.client_connection(handle);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(client->is_established());
  EXPECT_TRUE(server->is_established());
  EXPECT_TRUE(server->handshake_confirmed());
  EXPECT_EQ(client_app.established(), 1u);
  EXPECT_EQ(server_app.established(), 1u);
  // Initial and Handshake keys are gone on both sides once confirmed.
  for (conn::Connection* c : {client, server}) {
    EXPECT_FALSE(c->keys().has_keys(crypto::EncryptionLevel::kInitial, crypto::Direction::kWrite));
    EXPECT_FALSE(
        c->keys().has_keys(crypto::EncryptionLevel::kHandshake, crypto::Direction::kWrite));
    EXPECT_TRUE(
        c->keys().has_keys(crypto::EncryptionLevel::kApplication, crypto::Direction::kWrite));
  }
  EXPECT_EQ(client->tls()->alpn(), "perf");
}

TEST(HandshakeTest, TransfersOneMegabyteByteExact) {
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  const auto handle = pair.connect();
  client_app.request(handle, 1 << 20);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  EXPECT_EQ(client_app.bytes_received(), 1u << 20);
  EXPECT_EQ(client_app.mismatches(), 0u);
}

TEST(HandshakeTest, HandshakeOnlyStateIsFreedAtConfirmation) {
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  // The server's first datagram (its Initial and Handshake packets), to be
  // replayed once the handshake is confirmed.
  std::vector<uint8_t> server_first;
  conn::PathAddresses to_client;
  pair.simulator->set_observer([&](bool client_to_server, Instant, const Datagram& d) {
    if (client_to_server || !server_first.empty()) return;
    server_first.assign(d.bytes.begin(), d.bytes.end());
    to_client = {d.path.remote, d.path.local};
  });

  const auto handle = pair.connect();
  conn::Connection* client = pair.client_connection(handle);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->holds_handshake_state());
  ASSERT_TRUE(pair.run_until([&] {
    conn::Connection* server = pair.server_connection();
    return client->handshake_confirmed() && server != nullptr && server->handshake_confirmed();
  }));
  EXPECT_FALSE(client->holds_handshake_state());
  EXPECT_FALSE(pair.server_connection()->holds_handshake_state());

  // Long-header packets after confirmation are dropped: their keys and the
  // connection IDs they were checked against are gone.
  ASSERT_FALSE(server_first.empty());
  const uint64_t dropped = client->stats().packets_dropped;
  const uint64_t received = client->stats().packets_received;
  pair.client->handle_datagram(pair.simulator->now(), to_client, transmit::EcnCodepoint::kNotEct,
                               server_first);
  EXPECT_GT(client->stats().packets_dropped, dropped);
  EXPECT_EQ(client->stats().packets_received, received);
  EXPECT_TRUE(client->is_established());

  client_app.request(handle, 1 << 16);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  EXPECT_EQ(client_app.bytes_received(), 1u << 16);
  EXPECT_EQ(client_app.mismatches(), 0u);
}

}  // namespace
}  // namespace dpquic::harness
