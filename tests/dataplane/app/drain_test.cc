// The graceful stop, end to end over the in-memory network: an HTTP/3
// server sends GOAWAY, finishes the request it took, rejects the ones it
// did not, and then closes with H3_NO_ERROR; new connections are refused; a
// perf server finishes its streams, refuses new ones and closes with code 0.

#include <gtest/gtest.h>
#include <nghttp3/nghttp3.h>

#include <cstdint>
#include <optional>

#include "tests/dataplane/app/h3_test_pair.h"
#include "tests/dataplane/app/perf_test_pair.h"

namespace dpquic::dataplane::testing {
namespace {

constexpr uint64_t kConnectionRefused = 0x2;

// What a client connection ended with, read while it drains.
struct CloseSeen {
  std::optional<uint64_t> code;
  bool application = false;
  void look(const conn::Connection* connection) {
    if (code || connection == nullptr || connection->state() == conn::ConnectionState::kHandshake ||
        connection->state() == conn::ConnectionState::kEstablished) {
      return;
    }
    code = connection->close_error_code();
    application = connection->close_reason() == conn::CloseReason::kPeerClose;
  }
};

// The endpoint refuses, then the application drains: as ShardCore does.
template <typename App>
void begin_drain(harness::QuicPair& pair, App& app) {
  pair.server->set_accepting(false);
  app.drain(pair.simulator->now());
}

TEST(H3DrainTest, RequestTakenFinishesLaterOnesAreRejectedThenTheConnectionCloses) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const uint64_t taken = h3.get(handle, "/5000000", recorder);
  ASSERT_TRUE(h3.pair.run_until([&] { return recorder[taken].received >= 500'000; }));

  begin_drain(h3.pair, h3.server);
  ASSERT_TRUE(h3.pair.run_until([&] { return h3.client.stats().goaways_received >= 1; }));
  const uint64_t late = h3.get(handle, "/1000", recorder);
  CloseSeen close;
  ASSERT_TRUE(h3.pair.run_until([&] {
    close.look(h3.pair.client_connection(handle));
    return close.code.has_value();
  }));

  EXPECT_EQ(recorder[taken].outcome.result, H3Result::kOk);
  EXPECT_EQ(recorder[taken].received, 5'000'000u);
  EXPECT_TRUE(recorder[taken].synthetic_matches);
  EXPECT_EQ(recorder[late].outcome.result, H3Result::kRefused);
  EXPECT_EQ(recorder[late].outcome.error_code, NGHTTP3_H3_REQUEST_REJECTED);
  // GOAWAY announcing the stop, then the final one.
  EXPECT_EQ(h3.client.stats().goaways_received, 2u);
  EXPECT_EQ(*close.code, NGHTTP3_H3_NO_ERROR);
  EXPECT_TRUE(close.application);
  EXPECT_EQ(h3.server.stats().connection_errors, 0u);
  EXPECT_EQ(h3.server.stats().requests, 1u);
}

TEST(H3DrainTest, AnIdleConnectionClosesAfterTheIdleGrace) {
  H3Pair h3;
  const auto handle = h3.connect();
  const Instant start = h3.pair.simulator->now();
  begin_drain(h3.pair, h3.server);
  CloseSeen close;
  ASSERT_TRUE(h3.pair.run_until([&] {
    close.look(h3.pair.client_connection(handle));
    return close.code.has_value();
  }));
  EXPECT_EQ(*close.code, NGHTTP3_H3_NO_ERROR);
  // Two GOAWAYs a couple of round trips apart, then kDrainIdleGrace.
  EXPECT_GE(h3.pair.simulator->now() - start, kDrainIdleGrace);
  EXPECT_LT(h3.pair.simulator->now() - start, kDrainIdleGrace + 500 * kMillisecond);
}

TEST(H3DrainTest, NewConnectionsAreRefusedWhileDraining) {
  H3Pair h3;
  h3.connect();
  begin_drain(h3.pair, h3.server);
  std::optional<uint64_t> refused;
  h3.pair.client_node->set_application([&](Instant now) {
    endpoint::EndpointEvent event;
    while (h3.pair.client->poll_event(event)) {
      if (event.event.type == conn::ConnectionEventType::kClosed && event.connection != 0) {
        refused = event.event.error_code;
      }
      h3.client.on_event(now, event);
    }
    h3.client.pump(now);
  });
  const auto second = h3.pair.connect();
  ASSERT_NE(second, 0u);
  ASSERT_TRUE(h3.pair.run_until([&] { return refused.has_value(); }));
  EXPECT_EQ(*refused, kConnectionRefused);
  EXPECT_GE(h3.pair.server->stats().connections_refused, 1u);
}

TEST(PerfDrainTest, StreamsFinishNewOnesAreRefusedThenCodeZero) {
  PerfPair perf;
  const auto handle = perf.connect();
  RecordingHandler handler;
  const uint64_t taken = perf.client->request(handle, 4'000'000, 0, &handler);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.streams.count(taken) != 0; }));
  ASSERT_TRUE(perf.pair->run_until([&] { return perf.server->bytes_sent() > 0; }));

  begin_drain(*perf.pair, *perf.server);
  const uint64_t late = perf.client->request(handle, 1000, 0, &handler);
  CloseSeen close;
  ASSERT_TRUE(perf.pair->run_until([&] {
    close.look(perf.pair->client_connection(handle));
    return close.code.has_value();
  }));
  ASSERT_EQ(handler.outcomes.count(taken), 1u);
  EXPECT_EQ(handler.outcomes[taken].result, PerfResult::kOk);
  EXPECT_EQ(handler.outcomes[taken].bytes_received, 4'000'000u);
  ASSERT_EQ(handler.outcomes.count(late), 1u);
  EXPECT_EQ(handler.outcomes[late].result, PerfResult::kReset);
  EXPECT_EQ(*close.code, 0u);
  EXPECT_TRUE(close.application);
}

}  // namespace
}  // namespace dpquic::dataplane::testing
