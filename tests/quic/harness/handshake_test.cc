// Scenario: the handshake between our client and our server over the
// in-memory network, with real TLS and packet protection.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dpquic::harness
