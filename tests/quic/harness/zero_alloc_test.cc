// Scenario: a 100 MB download through a bottleneck link, with every heap
// allocation counted once the connection is warmed up: in steady state the
// stack (endpoint, connection, recovery, transmit, crypto) and the harness
// allocate nothing per packet.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

#include "quic/recovery/congestion_factory.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kMegabyte = 1 << 20;

void download_allocates_nothing(recovery::CongestionControlAlgorithm algorithm) {
  constexpr uint64_t kSize = 100 * kMegabyte;
  constexpr uint64_t kWarmUp = 10 * kMegabyte;
  // 500 Mbit/s, 10 ms each way, a 256 KB queue: the congestion window
  // settles around the path's capacity instead of growing for the whole
  // transfer.
  LinkConfig link;
  link.one_way_delay = 10 * kMillisecond;
  link.bandwidth_bps = 500'000'000;
  link.queue_bytes = 256 * 1024;
  // And rare random losses, so that the steady state also runs loss
  // detection, retransmission and the congestion response.
  link.loss = 0.0001;
  PairOptions options;
  options.client_to_server = link;
  options.server_to_client = link;
  options.server.connection.congestion_control = algorithm;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  const auto handle = pair.connect();
  client_app.request(handle, kSize);
  const std::function<bool()> warmed_up = [&] { return client_app.bytes_received() >= kWarmUp; };
  const std::function<bool()> done = [&] { return client_app.completed() == 1; };
  ASSERT_TRUE(pair.run_until(warmed_up));

  conn::Connection* client = pair.client_connection(handle);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  const uint64_t packets_before = client->stats().packets_sent + client->stats().packets_received +
                                  server->stats().packets_sent + server->stats().packets_received;
  const uint64_t lost_before = server->stats().packets_lost;
  size_t allocations = 0;
  bool completed = false;
  {
    testing::AllocationWindow window;
    completed = pair.run_until(done);
    allocations = window.count();
  }
  ASSERT_TRUE(completed);
  EXPECT_EQ(client_app.bytes_received(), kSize);
  EXPECT_EQ(client_app.mismatches(), 0u);

  const uint64_t packets = client->stats().packets_sent + client->stats().packets_received +
                           server->stats().packets_sent + server->stats().packets_received -
                           packets_before;
  // The steady state had losses to recover from.
  EXPECT_GT(server->stats().packets_lost, lost_before);
  std::printf(
      "%s steady state: %lu packets sent+received, %zu allocations (%.6f per packet), %lu lost\n",
      recovery::congestion_control_name(algorithm), packets, allocations,
      static_cast<double>(allocations) / static_cast<double>(packets),
      server->stats().packets_lost - lost_before);
  EXPECT_GT(packets, 100'000u);
  EXPECT_EQ(allocations, 0u);
}

TEST(ZeroAllocTest, HundredMegabytesAllocateNothingAfterWarmUp) {
  download_allocates_nothing(recovery::CongestionControlAlgorithm::kCubic);
}

// BBR adds its delivery-rate ring (quic/recovery/delivery_rate.h), sized
// by the flight during warm-up like the sent-packet ring.
TEST(ZeroAllocTest, BbrDownloadAllocatesNothingAfterWarmUp) {
  download_allocates_nothing(recovery::CongestionControlAlgorithm::kBbr);
}

}  // namespace
}  // namespace dpquic::harness
