// Scenario: a 1 GB download in virtual time through a 1 Gbit/s bottleneck,
// verified byte for byte: the stack sustains about a million packets each
// way without stalling, slowing down or growing its state.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

TEST(BigTransferTest, OneGigabyteByteExact) {
  constexpr uint64_t kSize = uint64_t{1} << 30;
  LinkConfig link;
  link.one_way_delay = 10 * kMillisecond;
  link.bandwidth_bps = 1'000'000'000;
  link.queue_bytes = 512 * 1024;
  PairOptions options;
  options.client_to_server = link;
  options.server_to_client = link;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  const auto wall_start = std::chrono::steady_clock::now();
  const auto handle = pair.connect();
  const Instant start = pair.simulator->now();
  client_app.request(handle, kSize);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }, 120 * kSecond));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double virtual_seconds = static_cast<double>(pair.simulator->now() - start) / kSecond;

  EXPECT_EQ(client_app.bytes_received(), kSize);
  EXPECT_EQ(client_app.mismatches(), 0u);
  const conn::Connection* client = pair.client_connection(handle);
  const conn::Connection* server = pair.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(client->is_established());
  EXPECT_GE(server->stats().stream_bytes_sent, kSize);
  const uint64_t packets = client->stats().packets_sent + client->stats().packets_received +
                           server->stats().packets_sent + server->stats().packets_received;
  // 1 GB in 1200-odd byte packets at 1 Gbit/s: the link is the limit, so the
  // transfer takes a little over 8.6 s of virtual time.
  EXPECT_LT(virtual_seconds, 15.0);
  std::printf(
      "1 GB: %.2f s wall, %.2f s virtual (%.0f Mbit/s), %lu packets sent+received (%.0f per wall "
      "second), %lu lost\n",
      wall, virtual_seconds, static_cast<double>(kSize) * 8 / virtual_seconds / 1e6, packets,
      static_cast<double>(packets) / wall, server->stats().packets_lost);
}

}  // namespace
}  // namespace dpquic::harness
