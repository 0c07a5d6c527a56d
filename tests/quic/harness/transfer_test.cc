// Scenario: downloads of 1, 3 and 5 MB over a 10 ms one-way link, checked
// byte for byte, and the receive windows auto-tuning so a large transfer is
// not held back by flow control.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kMegabyte = 1 << 20;

struct TransferResult {
  bool completed = false;
  uint64_t bytes = 0;
  uint64_t mismatches = 0;
  Duration elapsed = 0;  // from the request to the last byte
  uint64_t max_stream_window = 0;
  uint64_t max_connection_window = 0;
  uint64_t initial_stream_window = 0;
  uint64_t initial_connection_window = 0;
  uint64_t client_packets_dropped = 0;
};

TransferResult download(uint64_t size) {
  PairOptions options;
  options.client_to_server.one_way_delay = 10 * kMillisecond;
  options.server_to_client.one_way_delay = 10 * kMillisecond;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  TransferResult result;
  const auto handle = pair.connect();
  const Instant start = pair.simulator->now();
  client_app.request(handle, size);
  // The first bidirectional stream a client opens is stream 0.
  constexpr uint64_t kStream = 0;
  result.completed = pair.run_until([&] {
    if (const conn::Connection* c = pair.client_connection(handle)) {
      result.max_connection_window =
          std::max(result.max_connection_window, c->receive_window().window());
      if (const conn::ReceiveWindow* w = c->stream_receive_window(kStream)) {
        result.max_stream_window = std::max(result.max_stream_window, w->window());
      }
    }
    return client_app.completed() == 1;
  });
  result.elapsed = pair.simulator->now() - start;
  result.bytes = client_app.bytes_received();
  result.mismatches = client_app.mismatches();
  result.initial_stream_window = options.client.connection.transport.initial_max_stream_data;
  result.initial_connection_window = options.client.connection.transport.initial_max_data;
  if (const conn::Connection* c = pair.client_connection(handle)) {
    result.client_packets_dropped = c->stats().packets_dropped;
  }
  return result;
}

TEST(TransferTest, OneMegabyteByteExact) {
  const TransferResult r = download(1 * kMegabyte);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.bytes, 1 * kMegabyte);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.client_packets_dropped, 0u);
}

TEST(TransferTest, ThreeMegabytesByteExact) {
  const TransferResult r = download(3 * kMegabyte);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.bytes, 3 * kMegabyte);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.client_packets_dropped, 0u);
}

TEST(TransferTest, FiveMegabytesByteExactAndNotFlowControlBound) {
  const TransferResult r = download(5 * kMegabyte);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.bytes, 5 * kMegabyte);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.client_packets_dropped, 0u);
  // The windows grew past what the transport parameters advertised: the
  // receiver noticed it was the bottleneck and auto-tuned.
  EXPECT_GT(r.max_stream_window, r.initial_stream_window);
  EXPECT_GT(r.max_connection_window, r.initial_connection_window);
  // Slow start from 10 packets needs about 9 round trips for 5 MB, plus the
  // handshake and the request: about 12 RTTs of 20 ms. Held at the initial
  // 256 KiB stream window it would take 20 RTTs (400 ms).
  EXPECT_LT(r.elapsed, 300 * kMillisecond);
  std::printf("5 MB: %.1f ms virtual, stream window %lu -> %lu, connection window %lu -> %lu\n",
              static_cast<double>(r.elapsed) / kMillisecond, r.initial_stream_window,
              r.max_stream_window, r.initial_connection_window, r.max_connection_window);
}

}  // namespace
}  // namespace dpquic::harness
