// A server detects a stateless reset from its client (RFC 9000 §10.3.1): the
// client lost its state (a restarted endpoint with the same reset key), the
// server's next packets to it draw resets, and the server, finding no CID
// for them, checks the one connection on that remote address and closes it.
// When connections share the address, the entry passes to another one once
// its holder is gone.

#include <gtest/gtest.h>

#include "tests/quic/harness/perf_app.h"
#include "tests/quic/harness/quic_pair.h"

namespace dpquic::harness {
namespace {

// The server handle of the connection `connection` is.
endpoint::ConnectionHandle server_handle(QuicPair& pair, const conn::Connection* connection) {
  for (endpoint::ConnectionHandle h = 0; h < pair.options.server.max_connections; ++h) {
    if (pair.server->connection(h) == connection) return h;
  }
  return pair.options.server.max_connections;
}

// The client's state is gone and the server sends on a new stream: its
// packets draw stateless resets, which must close `server`.
void expect_reset_after_client_restart(QuicPair& pair, transmit::ChunkPool& pool,
                                       conn::Connection* server) {
  pair.restart_client();
  const auto stream = server->open_stream(conn::StreamDirection::kUnidirectional);
  ASSERT_TRUE(stream.has_value());
  std::vector<uint8_t> bytes(500, 1);
  ASSERT_EQ(server->send(*stream, pool.copy_from(bytes), false), conn::SendResult::kOk);
  pair.server->wake(server_handle(pair, server));
  ASSERT_TRUE(pair.run_until([&] { return server->state() == conn::ConnectionState::kDraining; },
                             10 * kSecond));
  EXPECT_EQ(server->close_reason(), conn::CloseReason::kStatelessReset);
  EXPECT_GT(pair.client->stats().stateless_resets_sent, 0u);
}

TEST(ServerResetDetectionTest, ServerClosesOnItsClientsStatelessReset) {
  transmit::ChunkPool pool(1024, 4);  // outlives the connections holding its chunks
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  const auto handle = pair.connect();
  client_app.request(handle, 256 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));

  // The client moves, so the server addresses it with a CID from the
  // client's NEW_CONNECTION_ID frames, whose reset token it knows (the
  // client's first CID has none, §10.3).
  const SocketAddress second = SocketAddress::ipv4(10, 0, 1, 7, 40000);
  ASSERT_TRUE(pair.client_connection(handle)->migrate(pair.simulator->now(), second));
  pair.client->wake(handle);
  client_app.request(handle, 256 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 2; }));
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->active_path().remote, second);

  expect_reset_after_client_restart(pair, pool, server);
}

TEST(ServerResetDetectionTest, TheAddressEntryPassesOnWhenItsHolderIsGone) {
  transmit::ChunkPool pool(1024, 4);
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  const auto first = pair.connect();
  client_app.request(first, 64 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  const auto second = pair.connect();
  client_app.request(second, 64 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 2; }));

  // Both move to one address (onto CIDs with reset tokens, as above): the
  // first takes the server's entry for it, the second is refused.
  const SocketAddress moved = SocketAddress::ipv4(10, 0, 1, 7, 40000);
  conn::Connection* servers[2] = {};
  size_t done = 2;
  for (const auto handle : {first, second}) {
    ASSERT_TRUE(pair.client_connection(handle)->migrate(pair.simulator->now(), moved));
    pair.client->wake(handle);
    client_app.request(handle, 64 * 1024);
    ++done;
    ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == done; }));
  }
  for (endpoint::ConnectionHandle h = 0, found = 0; h < pair.options.server.max_connections; ++h) {
    if (conn::Connection* c = pair.server->connection(h)) servers[found++] = c;
  }
  ASSERT_NE(servers[1], nullptr);
  ASSERT_EQ(servers[0]->active_path().remote, moved);
  ASSERT_EQ(servers[1]->active_path().remote, moved);

  // The first closes and the server frees it: its entry goes.
  pair.client_connection(first)->close(pair.simulator->now(), 0, true, "done");
  pair.client->wake(first);
  ASSERT_TRUE(pair.run_until([&] { return pair.server->connection_count() == 1; }, 10 * kSecond));
  conn::Connection* remaining = pair.server_connection();
  ASSERT_NE(remaining, nullptr);

  // The remaining connection's resets can only be matched through the
  // address entry.
  expect_reset_after_client_restart(pair, pool, remaining);
}

}  // namespace
}  // namespace dpquic::harness
