// Scenario: a full connection pool (RFC 9000 §5.2.2). With room for four
// connections, a fifth client Initial is answered statelessly with
// CONNECTION_CLOSE(CONNECTION_REFUSED); the four keep working, the pool and
// the CID table do not grow, however many attempts are refused.

#include <gtest/gtest.h>

#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kConnectionRefused = 0x02;

TEST(PoolExhaustionTest, FifthConnectionIsRefusedAndTheFourKeepWorking) {
  PairOptions options;
  options.server.max_connections = 4;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  std::vector<endpoint::ConnectionHandle> handles;
  for (int i = 0; i < 4; ++i) handles.push_back(pair.connect());
  ASSERT_TRUE(pair.run_until([&] { return client_app.established() == 4; }));
  EXPECT_EQ(pair.server->connection_count(), 4u);
  // Let NEW_CONNECTION_ID and the like settle before measuring the table.
  pair.run_until([] { return false; }, 500 * kMillisecond);
  const size_t cid_table_with_four = pair.server->cid_table_size();
  EXPECT_GT(cid_table_with_four, 0u);

  // Downloads on the four, and meanwhile a fifth connection.
  for (auto handle : handles) client_app.request(handle, 400'000);
  const auto fifth = pair.connect();
  ASSERT_TRUE(pair.run_until([&] { return client_app.closed() == 1; }));
  ASSERT_EQ(client_app.close_events().size(), 1u);
  const conn::ConnectionEvent& refused = client_app.close_events()[0];
  EXPECT_EQ(refused.close_reason, conn::CloseReason::kPeerClose);
  EXPECT_EQ(refused.error_code, kConnectionRefused);
  EXPECT_FALSE(refused.application_error);
  conn::Connection* fifth_connection = pair.client_connection(fifth);
  if (fifth_connection != nullptr) {
    EXPECT_EQ(fifth_connection->close_error_code(), kConnectionRefused);
  }
  EXPECT_EQ(pair.server->stats().connections_refused, 1u);
  EXPECT_EQ(pair.server->connection_count(), 4u);

  // More refused attempts change nothing on the server.
  for (int i = 0; i < 10; ++i) pair.connect();
  ASSERT_TRUE(pair.run_until([&] { return client_app.closed() == 11; }));
  EXPECT_EQ(pair.server->stats().connections_refused, 11u);
  EXPECT_EQ(pair.server->connection_count(), 4u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 4u);
  EXPECT_LE(pair.server->cid_table_size(), cid_table_with_four);
  for (const auto& event : client_app.close_events()) {
    EXPECT_EQ(event.error_code, kConnectionRefused);
    EXPECT_EQ(event.close_reason, conn::CloseReason::kPeerClose);
  }

  // The four downloads complete, byte for byte.
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 4; }));
  EXPECT_EQ(client_app.mismatches(), 0u);
  EXPECT_EQ(client_app.bytes_received(), 4u * 400'000);
  EXPECT_EQ(pair.server->connection_count(), 4u);
  EXPECT_LE(pair.server->cid_table_size(), cid_table_with_four);
  for (auto handle : handles) {
    conn::Connection* c = pair.client_connection(handle);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->is_established());
  }
}

}  // namespace
}  // namespace dpquic::harness
