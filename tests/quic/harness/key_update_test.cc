// Scenario: 1-RTT key updates (RFC 9001 §6) during a long download. One
// side updates its keys every few hundred packets; the other answers each
// update, and the transfer stays byte-exact across every key phase change.

#include <gtest/gtest.h>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kTransferBytes = 5 << 20;
constexpr uint64_t kUpdateInterval = 200;

struct KeyUpdateRun {
  uint64_t client_updates = 0, server_updates = 0;
  uint64_t client_initiated = 0, server_initiated = 0;
  uint64_t client_read = 0, client_write = 0, server_read = 0, server_write = 0;
  uint64_t received = 0, mismatches = 0, completed = 0;
  uint64_t client_dropped = 0, server_dropped = 0;
};

KeyUpdateRun run_download(uint64_t client_interval, uint64_t server_interval) {
  PairOptions options;
  // A 20 Mbit/s bottleneck: the download takes about two seconds, many
  // round trips, so updates are limited by the packet interval rather than
  // by the round trips each update needs (RFC 9001 §6.1).
  options.server_to_client.bandwidth_bps = 20'000'000;
  options.server_to_client.queue_bytes = 256 * 1024;
  options.client.connection.key_update_interval_packets = client_interval;
  options.server.connection.key_update_interval_packets = server_interval;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  const auto handle = pair.connect();
  client_app.request(handle, kTransferBytes);
  KeyUpdateRun run;
  EXPECT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  conn::Connection* client = pair.client_connection(handle);
  conn::Connection* server = pair.server_connection();
  EXPECT_NE(client, nullptr);
  EXPECT_NE(server, nullptr);
  if (client == nullptr || server == nullptr) return run;
  EXPECT_TRUE(client->is_established());
  EXPECT_TRUE(server->is_established());
  run.client_updates = client->stats().key_updates;
  run.server_updates = server->stats().key_updates;
  run.client_initiated = client->stats().key_updates_initiated;
  run.server_initiated = server->stats().key_updates_initiated;
  run.client_read = client->keys().key_phase().read_generation();
  run.client_write = client->keys().key_phase().write_generation();
  run.server_read = server->keys().key_phase().read_generation();
  run.server_write = server->keys().key_phase().write_generation();
  run.client_dropped = client->stats().packets_dropped;
  run.server_dropped = server->stats().packets_dropped;
  run.received = client_app.bytes_received();
  run.mismatches = client_app.mismatches();
  run.completed = client_app.completed();
  return run;
}

// Every update moves both directions of both sides one generation on: the
// generations of all four keys stay within one of each other.
void expect_generations_in_step(const KeyUpdateRun& run) {
  const uint64_t lowest =
      std::min({run.client_read, run.client_write, run.server_read, run.server_write});
  const uint64_t highest =
      std::max({run.client_read, run.client_write, run.server_read, run.server_write});
  EXPECT_LE(highest - lowest, 1u);
}

TEST(KeyUpdateTest, ClientInitiatedUpdatesAreAnsweredByTheServer) {
  const KeyUpdateRun run = run_download(kUpdateInterval, 0);
  EXPECT_EQ(run.completed, 1u);
  EXPECT_EQ(run.received, kTransferBytes);
  EXPECT_EQ(run.mismatches, 0u);
  // The client sends about one packet per two it receives: 5 MB is ~3600
  // server packets, so well over five updates of 200 packets each.
  EXPECT_GE(run.client_initiated, 5u);
  EXPECT_EQ(run.server_initiated, 0u);
  // Every update the client started was answered: the server's write keys
  // followed each time (RFC 9001 §6.2).
  EXPECT_EQ(run.client_updates, run.client_initiated);
  EXPECT_GE(run.server_updates + 1, run.client_updates);
  EXPECT_GE(run.server_updates, run.client_updates - 1);
  EXPECT_GE(run.client_write, 5u);
  EXPECT_GE(run.server_write, 5u);
  EXPECT_GE(run.server_read, 5u);
  EXPECT_GE(run.client_read, 5u);
  EXPECT_EQ(run.server_write, run.server_updates);
  EXPECT_EQ(run.client_write, run.client_updates);
  expect_generations_in_step(run);
  // No packet failed to open across the phase changes.
  EXPECT_EQ(run.client_dropped, 0u);
  EXPECT_EQ(run.server_dropped, 0u);
}

TEST(KeyUpdateTest, ServerInitiatedUpdatesAreAnsweredByTheClient) {
  const KeyUpdateRun run = run_download(0, kUpdateInterval);
  EXPECT_EQ(run.completed, 1u);
  EXPECT_EQ(run.received, kTransferBytes);
  EXPECT_EQ(run.mismatches, 0u);
  // ~3600 server packets: more than 15 updates of 200.
  EXPECT_GE(run.server_initiated, 15u);
  EXPECT_EQ(run.client_initiated, 0u);
  EXPECT_EQ(run.server_updates, run.server_initiated);
  EXPECT_GE(run.client_updates + 1, run.server_updates);
  EXPECT_GE(run.client_updates, run.server_updates - 1);
  EXPECT_GE(run.client_write, 15u);
  EXPECT_GE(run.client_read, 15u);
  EXPECT_EQ(run.server_write, run.server_updates);
  EXPECT_EQ(run.client_write, run.client_updates);
  expect_generations_in_step(run);
  EXPECT_EQ(run.client_dropped, 0u);
  EXPECT_EQ(run.server_dropped, 0u);
}

TEST(KeyUpdateTest, BothSidesUpdatingKeepTheTransferIntact) {
  const KeyUpdateRun run = run_download(kUpdateInterval, kUpdateInterval);
  EXPECT_EQ(run.completed, 1u);
  EXPECT_EQ(run.received, kTransferBytes);
  EXPECT_EQ(run.mismatches, 0u);
  EXPECT_GE(run.server_initiated, 1u);
  EXPECT_GE(run.client_write, 15u);
  EXPECT_GE(run.server_write, 15u);
  expect_generations_in_step(run);
  EXPECT_EQ(run.client_dropped, 0u);
  EXPECT_EQ(run.server_dropped, 0u);
}

// Without updates configured the keys stay in phase 0 (the AEAD limit,
// 2^22 packets here, is far away).
TEST(KeyUpdateTest, NoUpdateWithoutAnInterval) {
  const KeyUpdateRun run = run_download(0, 0);
  EXPECT_EQ(run.received, kTransferBytes);
  EXPECT_EQ(run.mismatches, 0u);
  EXPECT_EQ(run.client_updates, 0u);
  EXPECT_EQ(run.server_updates, 0u);
  EXPECT_EQ(run.client_write + run.client_read + run.server_write + run.server_read, 0u);
}

}  // namespace
}  // namespace dpquic::harness
