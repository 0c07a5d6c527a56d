// Scenario: thousands of small request/response streams on one connection
// whose peer allows only a few at a time (MAX_STREAMS replenishment, RFC 9000
// §4.6), and fair scheduling between concurrent streams.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using conn::StreamDirection;

TEST(ManyStreamsTest, TwoThousandStreamsThroughALimitOfOneHundred) {
  constexpr uint64_t kLimit = 100;
  constexpr uint64_t kRequests = 2000;
  PairOptions options;
  options.server.connection.transport.initial_max_streams_bidi = kLimit;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  const auto handle = pair.connect();
  uint64_t expected_bytes = 0;
  for (uint64_t i = 0; i < kRequests; ++i) {
    const uint64_t size = 1024 + (i * 797) % 3073;  // 1 KiB .. 4 KiB
    expected_bytes += size;
    client_app.request(handle, size);
  }

  uint64_t max_client_open = 0;
  uint64_t max_client_opened_minus_completed = 0;
  uint64_t max_server_live = 0;
  bool limit_respected = true;
  ASSERT_TRUE(pair.run_until([&] {
    const conn::Connection* client = pair.client_connection(handle);
    const conn::Connection* server = pair.server_connection();
    if (client != nullptr) {
      const conn::StreamLimits& limits = client->stream_limits();
      const uint64_t opened = limits.local_opened_count(StreamDirection::kBidirectional);
      max_client_open = std::max<uint64_t>(max_client_open, client->open_stream_count());
      max_client_opened_minus_completed =
          std::max(max_client_opened_minus_completed, opened - client_app.completed());
      if (opened > limits.peer_max_streams(StreamDirection::kBidirectional)) {
        limit_respected = false;
      }
      // Checked against the server's own record too: the client never
      // opened a stream the server had not allowed.
      if (server != nullptr && opened > server->stream_limits().advertised_max_streams(
                                            StreamDirection::kBidirectional)) {
        limit_respected = false;
      }
    }
    if (server != nullptr) {
      max_server_live =
          std::max(max_server_live,
                   server->stream_limits().peer_live_count(StreamDirection::kBidirectional));
    }
    return client_app.completed() == kRequests;
  }));

  EXPECT_EQ(client_app.bytes_received(), expected_bytes);
  EXPECT_EQ(client_app.mismatches(), 0u);
  EXPECT_EQ(server_app.responses_completed(), kRequests);
  std::printf("max live at server %lu, client open %lu, client in progress %lu\n", max_server_live,
              max_client_open, max_client_opened_minus_completed);
  EXPECT_TRUE(limit_respected);
  EXPECT_LE(max_server_live, kLimit);
  EXPECT_LE(max_client_opened_minus_completed, kLimit);
  EXPECT_LE(max_client_open, kLimit);
  // All 2000 were opened, so the server raised the limit by MAX_STREAMS at
  // least (2000 - 100) / 50 times (it sends one per half window freed).
  const conn::Connection* client = pair.client_connection(handle);
  const conn::Connection* server = pair.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(client->stream_limits().local_opened_count(StreamDirection::kBidirectional), kRequests);
  EXPECT_GE(client->stream_limits().peer_max_streams(StreamDirection::kBidirectional), kRequests);
  EXPECT_GE(server->stream_limits().advertised_max_streams(StreamDirection::kBidirectional),
            kRequests);
  EXPECT_EQ(server->stream_limits().peer_opened_count(StreamDirection::kBidirectional), kRequests);
  EXPECT_TRUE(client->is_established());
  EXPECT_EQ(client->close_reason(), conn::CloseReason::kNone);
}

TEST(ManyStreamsTest, ConcurrentStreamsProgressTogether) {
  constexpr uint64_t kStreams = 8;
  constexpr uint64_t kSize = 512 * 1024;
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  const auto handle = pair.connect();
  for (uint64_t i = 0; i < kStreams; ++i) client_app.request(handle, kSize);

  // The client's bidirectional streams are 0, 4, 8, ...
  std::vector<uint64_t> at_first_completion;
  ASSERT_TRUE(pair.run_until([&] {
    if (at_first_completion.empty() && client_app.completed() >= 1) {
      for (uint64_t i = 0; i < kStreams; ++i) {
        at_first_completion.push_back(client_app.received_on(handle, 4 * i));
      }
    }
    return client_app.completed() == kStreams;
  }));
  EXPECT_EQ(client_app.bytes_received(), kStreams * kSize);
  EXPECT_EQ(client_app.mismatches(), 0u);
  ASSERT_EQ(at_first_completion.size(), kStreams);
  // Round-robin: when the first stream finishes, every other one has most of
  // its data too (a scheduler that sends streams one after another would
  // leave the last ones at 0).
  for (uint64_t i = 0; i < kStreams; ++i) {
    std::printf("stream %lu: %lu bytes at the first completion\n", 4 * i, at_first_completion[i]);
    EXPECT_GE(at_first_completion[i], kSize * 3 / 4) << "stream " << 4 * i;
  }
}

}  // namespace
}  // namespace dpquic::harness
