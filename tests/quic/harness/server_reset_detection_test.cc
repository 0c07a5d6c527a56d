// A server detects a stateless reset from its client (RFC 9000 §10.3.1): the
// client lost its state (a restarted endpoint with the same reset key), the
// server's next packets to it draw resets, and the server, finding no CID
// for them, checks the one connection on that remote address and closes it.
// When connections share the address, the entry passes to another one once
// its holder is gone.

#include <gtest/gtest.h>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

// A client and a server endpoint with the perf applications, plus the chunk
// pool the server sends its own stream data from.
class ServerResetDetectionTest : public ::testing::Test {
 protected:
  ServerResetDetectionTest() { attach(pair, server_app, client_app); }

  // Asks for `bytes` on `handle` and runs until the client completed
  // another download.
  void download(endpoint::ConnectionHandle handle, uint64_t bytes) {
    const size_t done = client_app.completed() + 1;
    client_app.request(handle, bytes);
    ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == done; }));
  }
  // The client connection moves to `address`, then downloads on it (the
  // server now addresses it with a CID from its NEW_CONNECTION_ID frames,
  // whose reset token it knows; the client's first CID has none, §10.3).
  void move_and_download(endpoint::ConnectionHandle handle, const SocketAddress& address,
                         uint64_t bytes) {
    ASSERT_TRUE(pair.client_connection(handle)->migrate(pair.simulator->now(), address));
    pair.client->wake(handle);
    download(handle, bytes);
  }
  // The server handle of `connection`.
  endpoint::ConnectionHandle server_handle(const conn::Connection* connection) {
    for (endpoint::ConnectionHandle h = 0; h < pair.options.server.max_connections; ++h) {
      if (pair.server->connection(h) == connection) return h;
    }
    return pair.options.server.max_connections;
  }
  // The client's state is gone and the server sends on a new stream: its
  // packets draw stateless resets, which must close `server`.
  void expect_reset_after_client_restart(conn::Connection* server) {
    pair.restart_client();
    const auto stream = server->open_stream(conn::StreamDirection::kUnidirectional);
    ASSERT_TRUE(stream.has_value());
    std::vector<uint8_t> bytes(500, 1);
    ASSERT_EQ(server->send(*stream, pool.copy_from(bytes), false), conn::SendResult::kOk);
    pair.server->wake(server_handle(server));
    ASSERT_TRUE(pair.run_until([&] { return server->state() == conn::ConnectionState::kDraining; },
                               10 * kSecond));
    EXPECT_EQ(server->close_reason(), conn::CloseReason::kStatelessReset);
    EXPECT_GT(pair.client->stats().stateless_resets_sent, 0u);
  }

  transmit::ChunkPool pool{1024, 4};  // outlives the connections holding its chunks
  QuicPair pair;
  PerfServer server_app{*pair.server};
  PerfClient client_app{*pair.client};
};

TEST_F(ServerResetDetectionTest, ServerClosesOnItsClientsStatelessReset) {
  const auto handle = pair.connect();
  download(handle, 256 * 1024);
  const SocketAddress second = SocketAddress::ipv4(10, 0, 1, 7, 40000);
  move_and_download(handle, second, 256 * 1024);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->active_path().remote, second);

  expect_reset_after_client_restart(server);
}

TEST_F(ServerResetDetectionTest, TheAddressEntryPassesOnWhenItsHolderIsGone) {
  const auto first = pair.connect();
  download(first, 64 * 1024);
  const auto second = pair.connect();
  download(second, 64 * 1024);

  // Both move to one address: the first takes the server's entry for it,
  // the second is refused.
  const SocketAddress moved = SocketAddress::ipv4(10, 0, 1, 7, 40000);
  move_and_download(first, moved, 64 * 1024);
  move_and_download(second, moved, 64 * 1024);
  conn::Connection* servers[2] = {};
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
  expect_reset_after_client_restart(remaining);
}

}  // namespace
}  // namespace dpquic::harness
