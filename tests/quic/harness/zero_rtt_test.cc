// Scenario: 0-RTT (RFC 9001 §4.6, RFC 9000 §7.4.1). A second connection
// sends its request in 0-RTT packets; the server accepts the early data and
// answers; the download is byte-exact. When the server rejects early data,
// the client resends the request in 1-RTT packets and the download still
// completes.

#include <gtest/gtest.h>

#include <memory>

#include "tests/quic/harness/packet_census.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using wire::PacketType;

constexpr size_t kCidLength = 16;
constexpr uint64_t kDownload = 300'000;

// A pair whose client holds a ticket (and a NEW_TOKEN token) from a first,
// closed connection.
class ZeroRttTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = std::make_unique<QuicPair>();
    server_app_ = std::make_unique<PerfServer>(*pair_->server);
    client_app_ = std::make_unique<PerfClient>(*pair_->client);
    pair_->server_node->set_application([this](Instant now) { server_app_->run(now); });
    pair_->client_node->set_application([this](Instant now) { client_app_->run(now); });
    pair_->simulator->set_observer([this](bool client_to_server, Instant, const Datagram& d) {
      (client_to_server ? c2s_ : s2c_).count(d.bytes, kCidLength);
    });

    const auto first = pair_->connect();
    client_app_->request(first, 1000);
    ASSERT_TRUE(pair_->run_until([&] {
      return client_app_->completed() == 1 && pair_->client_tls->cached_session_count() == 1 &&
             pair_->client_connection(first)->received_new_token();
    }));
    EXPECT_FALSE(pair_->client_connection(first)->used_zero_rtt());
    pair_->client->close(pair_->simulator->now(), first, 0, "done");
    ASSERT_TRUE(pair_->run_until([&] {
      return pair_->server->connection_count() == 0 && pair_->client->connection_count() == 0;
    }));
    // No 0-RTT in the first connection.
    EXPECT_EQ(c2s_.of(PacketType::kZeroRtt), 0u);
    c2s_ = PacketCensus{};
    s2c_ = PacketCensus{};
  }

  // Replaces the server by one whose TLS context has early data disabled
  // (same certificate and ticket keys): tickets resume, 0-RTT is refused.
  void restart_server_without_early_data() {
    crypto::TlsServerConfig config = pair_->options.server_tls;
    config.early_data_enabled = false;
    old_server_tls_ = std::move(pair_->server_tls);
    pair_->server_tls = crypto::TlsContext::create_server(config);
    pair_->restart_server();
    server_app_ = std::make_unique<PerfServer>(*pair_->server);
    pair_->server_node->set_application([this](Instant now) { server_app_->run(now); });
  }

  std::unique_ptr<crypto::TlsContext> old_server_tls_;
  std::unique_ptr<QuicPair> pair_;
  std::unique_ptr<PerfServer> server_app_;
  std::unique_ptr<PerfClient> client_app_;
  PacketCensus c2s_, s2c_;
};

TEST_F(ZeroRttTest, RequestInZeroRttIsAcceptedAndAnswered) {
  QuicPair& pair = *pair_;
  const auto handle = pair.connect();
  conn::Connection* client = pair.client_connection(handle);
  ASSERT_NE(client, nullptr);
  // The request is written at once, before any server packet arrived.
  client_app_->request(handle, kDownload);
  EXPECT_TRUE(client->tls()->early_data_offered());
  ASSERT_TRUE(pair.run_until([&] { return client_app_->completed() == 2; }));
  EXPECT_EQ(client_app_->mismatches(), 0u);
  EXPECT_EQ(client_app_->bytes_received(), 1000 + kDownload);

  // 0-RTT packets went on the wire, client to server only.
  EXPECT_GE(c2s_.of(PacketType::kZeroRtt), 1u);
  EXPECT_EQ(s2c_.of(PacketType::kZeroRtt), 0u);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(client->tls()->session_resumed());
  EXPECT_TRUE(server->tls()->session_resumed());
  EXPECT_TRUE(server->tls()->early_data_accepted());
  EXPECT_TRUE(client->used_zero_rtt());
  EXPECT_TRUE(server->used_zero_rtt());
  EXPECT_FALSE(client->tls()->early_data_rejected());
  // 0-RTT keys are gone once the handshake is confirmed.
  EXPECT_FALSE(
      client->keys().has_keys(crypto::EncryptionLevel::kEarlyData, crypto::Direction::kWrite));
}

TEST_F(ZeroRttTest, RejectedEarlyDataIsResentInOneRtt) {
  restart_server_without_early_data();
  QuicPair& pair = *pair_;
  const auto handle = pair.connect();
  conn::Connection* client = pair.client_connection(handle);
  ASSERT_NE(client, nullptr);
  client_app_->request(handle, kDownload);
  EXPECT_TRUE(client->tls()->early_data_offered());
  ASSERT_TRUE(pair.run_until([&] { return client_app_->completed() == 2; }));
  EXPECT_EQ(client_app_->mismatches(), 0u);
  EXPECT_EQ(client_app_->bytes_received(), 1000 + kDownload);

  // The client did try 0-RTT; the server resumed the session but refused
  // the early data, so the request went again in 1-RTT.
  EXPECT_GE(c2s_.of(PacketType::kZeroRtt), 1u);
  conn::Connection* server = pair.server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(client->tls()->early_data_rejected());
  // The client reset its streams and the application asked again
  // (RFC 9001 §4.6.2).
  EXPECT_EQ(client_app_->zero_rtt_rejections(), 1u);
  EXPECT_FALSE(server->tls()->early_data_accepted());
  EXPECT_FALSE(client->used_zero_rtt());
  EXPECT_FALSE(server->used_zero_rtt());
  EXPECT_EQ(server->stats().stream_bytes_received, 8u);  // the request, once
}

}  // namespace
}  // namespace dpquic::harness
