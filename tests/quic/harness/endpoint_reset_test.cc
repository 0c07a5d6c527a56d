// Endpoint::reset_connections: every connection goes at once, with its CIDs,
// timers and queued work, and the endpoint keeps serving new connections.

#include <gtest/gtest.h>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

TEST(EndpointResetTest, DropsEveryConnectionAndServesNewOnes) {
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  for (int i = 0; i < 3; ++i) client_app.request(pair.connect(), 64 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 3; }));
  ASSERT_EQ(pair.server->connection_count(), 3u);
  ASSERT_GT(pair.server->cid_table_size(), 0u);

  pair.server->reset_connections();
  EXPECT_EQ(pair.server->connection_count(), 0u);
  EXPECT_EQ(pair.server->half_open_count(), 0u);
  EXPECT_EQ(pair.server->cid_table_size(), 0u);
  EXPECT_EQ(pair.server->poll_timeout(), kNever);
  endpoint::EndpointEvent event;
  EXPECT_FALSE(pair.server->poll_event(event));

  // New connections are served as before.
  client_app.request(pair.connect(), 64 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 4; }));
  EXPECT_EQ(client_app.mismatches(), 0u);
}

}  // namespace
}  // namespace dpquic::harness
