// Scenario: STOP_SENDING and RESET_STREAM between our endpoints (RFC 9000
// §3.5, §4.5): the application's codes reach the peer, the stream ends on
// both sides, and the bytes the reset made unreadable return their
// connection-level credit so later streams are not starved.

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kStopCode = 0x77;
constexpr uint64_t kResetCode = 0x99;

TEST(StreamResetTest, StopSendingMakesThePeerResetWithTheSameCode) {
  PairOptions options;
  // A small connection window: without credit coming back from the reset
  // stream, the second download could not finish.
  options.client.connection.transport.initial_max_data = 256 * 1024;
  options.client.connection.transport.max_connection_window = 256 * 1024;
  transmit::ChunkPool request_pool(64, 1);  // outlives the connections
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  pair.server_node->set_application([&](Instant now) { server_app.run(now); });

  std::vector<conn::ConnectionEvent> client_events;
  uint64_t stopped_stream_bytes = 0;
  bool stop_sent = false;
  const auto handle = pair.connect();
  PerfClient second(*pair.client);  // used for the follow-up download only
  bool first_done = false;
  std::optional<uint64_t> stream;
  pair.client_node->set_application([&](Instant now) {
    if (!first_done) {
      if (!stream) {
        stream = pair.client->open_stream(handle, conn::StreamDirection::kBidirectional);
        if (stream) {
          static const std::array<uint8_t, 8> kRequest{0, 0, 0, 0, 0x40, 0, 0, 0};  // 1 GiB
          (void)pair.client->send(handle, *stream, request_pool.copy_from(kRequest), true);
        }
      }
      endpoint::EndpointEvent event;
      std::array<uint8_t, 16384> scratch;
      while (pair.client->poll_event(event)) {
        client_events.push_back(event.event);
        if (event.event.type == conn::ConnectionEventType::kStreamReadable && stream &&
            event.event.stream_id == *stream) {
          bool fin = false;
          for (size_t n; (n = pair.client->read(handle, *stream, scratch, fin)) != 0;) {
            stopped_stream_bytes += n;
          }
          if (!stop_sent && stopped_stream_bytes >= 100 * 1024) {
            ASSERT_TRUE(pair.client->connection(handle)->stop_sending(*stream, kStopCode));
            pair.client->wake(handle);
            stop_sent = true;
          }
        }
        if (event.event.type == conn::ConnectionEventType::kStreamReset) first_done = true;
      }
      (void)now;
    } else {
      second.run(now);
    }
  });
  ASSERT_TRUE(pair.run_until([&] { return first_done; }));
  // The server heard STOP_SENDING with our code and reset with it.
  bool reset_seen = false;
  for (const auto& event : client_events) {
    if (event.type == conn::ConnectionEventType::kStreamReset) {
      EXPECT_EQ(event.stream_id, *stream);
      EXPECT_EQ(event.error_code, kStopCode);  // RFC 9000 §3.5: the code of STOP_SENDING
      reset_seen = true;
    }
  }
  EXPECT_TRUE(reset_seen);
  EXPECT_LT(stopped_stream_bytes, uint64_t{1} << 30);

  // A 1 MB download afterwards completes: the reset stream's bytes came back
  // as connection credit (4x the connection window).
  second.request(handle, 1 << 20);
  ASSERT_TRUE(pair.run_until([&] { return second.completed() == 1; }));
  EXPECT_EQ(second.bytes_received(), 1u << 20);
  EXPECT_EQ(second.mismatches(), 0u);
}

TEST(StreamResetTest, ApplicationResetReachesThePeerWithItsCode) {
  transmit::ChunkPool pool(8192, 4);  // outlives the connections holding its chunks
  QuicPair pair;
  endpoint::EndpointEvent event;
  std::vector<conn::ConnectionEvent> server_events;
  pair.server_node->set_application([&](Instant) {
    while (pair.server->poll_event(event)) server_events.push_back(event.event);
  });
  const auto handle = pair.connect();
  ASSERT_TRUE(pair.run_until([&] {
    conn::Connection* c = pair.client_connection(handle);
    return c != nullptr && c->is_established();
  }));
  const auto stream = pair.client->open_stream(handle, conn::StreamDirection::kUnidirectional);
  ASSERT_TRUE(stream.has_value());
  std::vector<uint8_t> bytes(5000, 0xab);
  ASSERT_EQ(pair.client->send(handle, *stream, pool.copy_from(bytes), false),
            conn::SendResult::kOk);
  ASSERT_TRUE(pair.run_until([&] {
    for (const auto& e : server_events) {
      if (e.type == conn::ConnectionEventType::kStreamReadable) return true;
    }
    return false;
  }));
  ASSERT_TRUE(pair.client->connection(handle)->reset_stream(*stream, kResetCode));
  pair.client->wake(handle);
  ASSERT_TRUE(pair.run_until([&] {
    for (const auto& e : server_events) {
      if (e.type == conn::ConnectionEventType::kStreamReset) return true;
    }
    return false;
  }));
  for (const auto& e : server_events) {
    if (e.type == conn::ConnectionEventType::kStreamReset) {
      EXPECT_EQ(e.stream_id, *stream);
      EXPECT_EQ(e.error_code, kResetCode);
    }
  }
  // Sending on a reset stream is refused.
  EXPECT_EQ(pair.client->send(handle, *stream, pool.copy_from(bytes), false),
            conn::SendResult::kInvalidStream);
}

}  // namespace
}  // namespace dpquic::harness
