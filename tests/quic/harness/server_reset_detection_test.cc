// A server detects a stateless reset from its client (RFC 9000 §10.3.1): the
// client lost its state (a restarted endpoint with the same reset key), the
// server's next packets to it draw resets, and the server, finding no CID
// for them, checks the one connection on that remote address and closes it.

#include <gtest/gtest.h>

#include "tests/quic/harness/perf_app.h"
#include "tests/quic/harness/quic_pair.h"

namespace dpquic::harness {
namespace {

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

  // The client's state is gone; the server sends on a new stream.
  pair.restart_client();
  const auto stream = server->open_stream(conn::StreamDirection::kUnidirectional);
  ASSERT_TRUE(stream.has_value());
  std::vector<uint8_t> bytes(500, 1);
  ASSERT_EQ(server->send(*stream, pool.copy_from(bytes), false), conn::SendResult::kOk);
  for (endpoint::ConnectionHandle h = 0; h < pair.options.server.max_connections; ++h) {
    if (pair.server->connection(h) == server) pair.server->wake(h);
  }
  ASSERT_TRUE(pair.run_until([&] { return server->state() == conn::ConnectionState::kDraining; },
                             10 * kSecond));
  EXPECT_EQ(server->close_reason(), conn::CloseReason::kStatelessReset);
  EXPECT_GT(pair.client->stats().stateless_resets_sent, 0u);
}

}  // namespace
}  // namespace dpquic::harness
