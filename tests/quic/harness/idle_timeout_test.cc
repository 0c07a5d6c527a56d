// Scenario: the idle timeout (RFC 9000 §10.1). After the handshake the path
// goes silent in both directions; each side closes silently with
// kIdleTimeout once max(idle timeout, 3 PTO) passed since it last heard from
// (or first sent to) its peer, and the server frees the connection.

#include <gtest/gtest.h>

#include <vector>

#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

struct CloseRecord {
  Instant at;
  conn::ConnectionEvent event;
};

// Polls an endpoint's events (which lets it free closed connections) and
// records the close events.
void record_closes(endpoint::Endpoint& endpoint, Instant now, std::vector<CloseRecord>& closes) {
  endpoint::EndpointEvent event;
  while (endpoint.poll_event(event)) {
    if (event.event.type == conn::ConnectionEventType::kClosed)
      closes.push_back({now, event.event});
  }
}

struct Expectation {
  Duration effective;  // max(negotiated idle timeout, 3 PTO)
  Instant client_last_heard, server_last_heard;
};

class IdleTimeoutTest : public ::testing::Test {
 protected:
  // Handshake with the given idle timeouts, `settle` of quiet, then both
  // links lose everything; runs until both sides closed.
  void run(uint64_t client_idle_ms, uint64_t server_idle_ms, Duration settle) {
    PairOptions options;
    options.client.connection.transport.max_idle_timeout_ms = client_idle_ms;
    options.server.connection.transport.max_idle_timeout_ms = server_idle_ms;
    pair_ = std::make_unique<QuicPair>(options);
    QuicPair& pair = *pair_;
    pair.server_node->set_application(
        [&](Instant now) { record_closes(*pair.server, now, server_closes_); });
    pair.client_node->set_application(
        [&](Instant now) { record_closes(*pair.client, now, client_closes_); });
    const Duration delay = options.client_to_server.one_way_delay;
    pair.simulator->set_observer([&](bool client_to_server, Instant now, const Datagram&) {
      if (blackholed_) {
        ++sent_while_blackholed_;
        return;
      }
      (client_to_server ? server_last_heard_ : client_last_heard_) = now + delay;
    });

    handle_ = pair.connect();
    ASSERT_TRUE(pair.run_until([&] {
      conn::Connection* c = pair.client_connection(handle_);
      return c != nullptr && c->handshake_confirmed();
    }));
    // Let the last ACKs settle, then cut both directions.
    if (settle != 0) pair.run_until([] { return false; }, settle);
    ASSERT_NE(pair.client_connection(handle_), nullptr);
    ASSERT_NE(pair.server_connection(), nullptr);
    LinkConfig blackhole;
    blackhole.loss = 1;
    pair.simulator->reconfigure_link(true, blackhole);
    pair.simulator->reconfigure_link(false, blackhole);
    blackholed_ = true;
    blackholed_at_ = pair.simulator->now();
    client_pto_ = pair.client_connection(handle_)->recovery().pto_duration(
        wire::PacketNumberSpace::kApplication);
    server_pto_ =
        pair.server_connection()->recovery().pto_duration(wire::PacketNumberSpace::kApplication);
    ASSERT_TRUE(pair.run_until(
        [&] { return client_closes_.size() == 1 && pair.server->connection_count() == 0; },
        120 * kSecond));
  }

  void expect_closed_at(const std::vector<CloseRecord>& closes, Instant last_heard,
                        Duration expected, const char* side) {
    ASSERT_EQ(closes.size(), 1u) << side;
    EXPECT_EQ(closes[0].event.close_reason, conn::CloseReason::kIdleTimeout) << side;
    EXPECT_EQ(closes[0].event.error_code, 0u) << side;
    // The timer restarts on receipt, and on the first ack-eliciting packet
    // sent after it (an ACK of ours is not): within a few ms of the last
    // receipt here.
    EXPECT_GE(closes[0].at, last_heard + expected) << side;
    EXPECT_LE(closes[0].at, last_heard + expected + 30 * kMillisecond) << side;
  }

  std::unique_ptr<QuicPair> pair_;
  endpoint::ConnectionHandle handle_ = 0;
  std::vector<CloseRecord> client_closes_, server_closes_;
  bool blackholed_ = false;
  Instant blackholed_at_ = 0;
  uint64_t sent_while_blackholed_ = 0;
  Instant client_last_heard_ = 0, server_last_heard_ = 0;
  Duration client_pto_ = 0, server_pto_ = 0;
};

TEST_F(IdleTimeoutTest, BothSidesCloseAfterTheNegotiatedIdleTimeout) {
  // The smaller of the two advertised values applies to both.
  run(5'000, 8'000, 300 * kMillisecond);
  expect_closed_at(client_closes_, client_last_heard_, 5 * kSecond, "client");
  expect_closed_at(server_closes_, server_last_heard_, 5 * kSecond, "server");
  EXPECT_EQ(pair_->server->connection_count(), 0u);
  EXPECT_EQ(pair_->client->connection_count(), 0u);
  EXPECT_EQ(pair_->server->cid_table_size(), 0u);
  // Closed silently: nothing was sent once the path went quiet (no data was
  // outstanding, so no probes either).
  EXPECT_EQ(sent_while_blackholed_, 0u);
}

TEST_F(IdleTimeoutTest, ShortIdleTimeoutIsStretchedToThreeProbeTimeouts) {
  run(20, 20, 0);
  ASSERT_GT(3 * client_pto_, 20 * kMillisecond);
  ASSERT_GT(3 * server_pto_, 20 * kMillisecond);
  expect_closed_at(client_closes_, client_last_heard_, 3 * client_pto_, "client");
  expect_closed_at(server_closes_, server_last_heard_, 3 * server_pto_, "server");
  EXPECT_EQ(pair_->server->connection_count(), 0u);
}

// Keep-alive (RFC 9000 §10.1.2): a client with keep_alive_interval sends a
// PING whenever it sent nothing ack-eliciting for that long, so a quiet
// connection outlives both idle timeouts; the server's ACKs keep the client's
// timer fresh too.
// A confirmed connection with idle timeouts of 3 s (client) and 2 s
// (server), the closes of both sides recorded, and a count of the client's
// datagrams.
struct QuietPair {
  explicit QuietPair(Duration keep_alive_interval) : pair(options_for(keep_alive_interval)) {
    pair.server_node->set_application(
        [&](Instant now) { record_closes(*pair.server, now, server_closes); });
    pair.client_node->set_application(
        [&](Instant now) { record_closes(*pair.client, now, client_closes); });
    pair.simulator->set_observer([&](bool client_to_server, Instant, const Datagram&) {
      if (client_to_server) ++client_datagrams;
    });
    handle = pair.connect();
    confirmed = pair.run_until([&] {
      conn::Connection* c = pair.client_connection(handle);
      return c != nullptr && c->handshake_confirmed();
    });
  }
  static PairOptions options_for(Duration keep_alive_interval) {
    PairOptions options;
    options.client.connection.transport.max_idle_timeout_ms = 3'000;
    options.server.connection.transport.max_idle_timeout_ms = 2'000;
    options.client.connection.keep_alive_interval = keep_alive_interval;
    return options;
  }

  QuicPair pair;
  std::vector<CloseRecord> client_closes, server_closes;
  uint64_t client_datagrams = 0;
  endpoint::ConnectionHandle handle = 0;
  bool confirmed = false;
};

TEST(KeepAliveTest, QuietConnectionWithKeepAliveOutlivesTheIdleTimeout) {
  QuietPair quiet(700 * kMillisecond);
  ASSERT_TRUE(quiet.confirmed);
  QuicPair& pair = quiet.pair;
  const uint64_t before = quiet.client_datagrams;
  // Ten times the negotiated idle timeout of silence from the application.
  pair.run_until([] { return false; }, 20 * kSecond);
  EXPECT_TRUE(quiet.client_closes.empty());
  EXPECT_TRUE(quiet.server_closes.empty());
  ASSERT_NE(pair.client_connection(quiet.handle), nullptr);
  EXPECT_TRUE(pair.client_connection(quiet.handle)->is_established());
  EXPECT_EQ(pair.server->connection_count(), 1u);
  // One PING per interval (plus the odd ACK): about 20 s / 0.7 s of them.
  EXPECT_GE(quiet.client_datagrams - before, 25u);
  EXPECT_LE(quiet.client_datagrams - before, 45u);
}

TEST(KeepAliveTest, WithoutKeepAliveTheSameQuietConnectionTimesOut) {
  QuietPair quiet(0);
  ASSERT_TRUE(quiet.confirmed);
  quiet.pair.run_until([] { return false; }, 20 * kSecond);
  ASSERT_EQ(quiet.client_closes.size(), 1u);
  EXPECT_EQ(quiet.client_closes[0].event.close_reason, conn::CloseReason::kIdleTimeout);
  ASSERT_EQ(quiet.server_closes.size(), 1u);
  EXPECT_EQ(quiet.server_closes[0].event.close_reason, conn::CloseReason::kIdleTimeout);
}

}  // namespace
}  // namespace dpquic::harness
