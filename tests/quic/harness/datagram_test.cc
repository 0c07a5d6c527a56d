// Scenarios: DATAGRAM frames (RFC 9221) between our client and server.
//  - Negotiated on both sides: datagrams cross in both directions intact,
//    with a kDatagram event each.
//  - The peer's max_datagram_frame_size bounds the whole frame (type, length
//    and data, §3): one byte more is refused by send_datagram.
//  - Not offered by the peer: send_datagram refuses everything.
//  - A receive queue that is full drops datagrams (they are unreliable,
//    §5) and counts them.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

std::vector<uint8_t> payload(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

class DatagramTest : public ::testing::Test {
 protected:
  void start(uint64_t client_max, uint64_t server_max, size_t server_queue = 64) {
    PairOptions options;
    options.client.connection.transport.max_datagram_frame_size = client_max;
    options.server.connection.transport.max_datagram_frame_size = server_max;
    options.server.connection.datagram_receive_queue = server_queue;
    pair_ = std::make_unique<QuicPair>(options);
    // Applications that only count events: datagrams stay queued until the
    // test reads them.
    pair_->server_node->set_application([this](Instant) { drain(*pair_->server, server_events_); });
    pair_->client_node->set_application([this](Instant) { drain(*pair_->client, client_events_); });
    handle_ = pair_->connect();
    ASSERT_TRUE(pair_->run_until([&] {
      conn::Connection* c = client();
      return c != nullptr && c->handshake_confirmed();
    }));
    ASSERT_NE(server(), nullptr);
  }
  static void drain(endpoint::Endpoint& endpoint, uint64_t& datagram_events) {
    endpoint::EndpointEvent event;
    while (endpoint.poll_event(event)) {
      if (event.event.type == conn::ConnectionEventType::kDatagram) ++datagram_events;
    }
  }
  // Lets the network run long enough for everything sent to arrive.
  void settle() {
    pair_->client->wake(handle_);
    for (endpoint::ConnectionHandle h = 0; h < pair_->options.server.max_connections; ++h) {
      if (pair_->server->connection(h) != nullptr) pair_->server->wake(h);
    }
    pair_->run_until([] { return false; }, 200 * kMillisecond);
  }
  std::vector<std::vector<uint8_t>> read_all(conn::Connection& connection) {
    std::vector<std::vector<uint8_t>> out;
    std::array<uint8_t, 2048> buffer;
    for (size_t n; (n = connection.read_datagram(buffer)) != 0;) {
      out.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    }
    return out;
  }
  conn::Connection* client() { return pair_->client_connection(handle_); }
  conn::Connection* server() { return pair_->server_connection(); }

  std::unique_ptr<QuicPair> pair_;
  endpoint::ConnectionHandle handle_ = 0;
  uint64_t server_events_ = 0, client_events_ = 0;
};

TEST_F(DatagramTest, DeliveredBothWaysWhenNegotiated) {
  ASSERT_NO_FATAL_FAILURE(start(1200, 1200));
  EXPECT_TRUE(client()->peer_parameters().has(wire::TransportParameter::kMaxDatagramFrameSize));
  EXPECT_EQ(client()->peer_parameters().max_datagram_frame_size, 1200u);
  EXPECT_EQ(server()->peer_parameters().max_datagram_frame_size, 1200u);
  const std::vector<size_t> sizes = {1, 10, 100, 500, 1000};
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(client()->send_datagram(payload(sizes[i], static_cast<uint8_t>(i))));
    ASSERT_TRUE(server()->send_datagram(payload(sizes[i], static_cast<uint8_t>(100 + i))));
  }
  settle();
  const auto at_server = read_all(*server());
  const auto at_client = read_all(*client());
  ASSERT_EQ(at_server.size(), sizes.size());
  ASSERT_EQ(at_client.size(), sizes.size());
  // No loss on this path, and datagrams go out in the order queued.
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(at_server[i], payload(sizes[i], static_cast<uint8_t>(i)));
    EXPECT_EQ(at_client[i], payload(sizes[i], static_cast<uint8_t>(100 + i)));
  }
  EXPECT_EQ(server_events_, sizes.size());
  EXPECT_EQ(client_events_, sizes.size());
  EXPECT_EQ(server()->stats().datagrams_dropped, 0u);
  EXPECT_EQ(server()->state(), conn::ConnectionState::kEstablished);
  EXPECT_EQ(client()->state(), conn::ConnectionState::kEstablished);
}

TEST_F(DatagramTest, PeerLimitCoversTheWholeFrame) {
  // The server accepts frames of at most 100 bytes: type (1) + length (2,
  // a varint above 63) + 97 bytes of data.
  ASSERT_NO_FATAL_FAILURE(start(1200, 100));
  EXPECT_FALSE(client()->send_datagram(payload(98, 1)));
  EXPECT_FALSE(client()->send_datagram(payload(1000, 1)));
  ASSERT_TRUE(client()->send_datagram(payload(97, 2)));
  // The other way the limit is the client's 1200 bytes, and a frame must
  // also fit one packet of the smallest datagram size.
  EXPECT_TRUE(server()->send_datagram(payload(1000, 3)));
  EXPECT_FALSE(server()->send_datagram(payload(1200, 3)));
  settle();
  const auto at_server = read_all(*server());
  ASSERT_EQ(at_server.size(), 1u);
  EXPECT_EQ(at_server[0], payload(97, 2));
  const auto at_client = read_all(*client());
  ASSERT_EQ(at_client.size(), 1u);
  EXPECT_EQ(at_client[0], payload(1000, 3));
  // The 100-byte frame at the limit was accepted: no PROTOCOL_VIOLATION.
  EXPECT_EQ(server()->state(), conn::ConnectionState::kEstablished);
  EXPECT_EQ(client()->state(), conn::ConnectionState::kEstablished);
}

TEST_F(DatagramTest, RefusedWhenThePeerDidNotOfferThem) {
  ASSERT_NO_FATAL_FAILURE(start(1200, 0));
  // RFC 9221 §3: without the peer's parameter, DATAGRAM frames must not be
  // sent.
  EXPECT_FALSE(client()->peer_parameters().has(wire::TransportParameter::kMaxDatagramFrameSize));
  EXPECT_FALSE(client()->send_datagram(payload(10, 1)));
  EXPECT_FALSE(client()->send_datagram(payload(1, 1)));
  // The server did not offer them, and does not queue any of its own
  // either (it has no room for them).
  EXPECT_TRUE(server()->peer_parameters().has(wire::TransportParameter::kMaxDatagramFrameSize));
  EXPECT_FALSE(server()->send_datagram(payload(10, 1)));
  settle();
  EXPECT_EQ(server_events_, 0u);
  EXPECT_EQ(client_events_, 0u);
  EXPECT_EQ(server()->state(), conn::ConnectionState::kEstablished);
}

TEST_F(DatagramTest, FullReceiveQueueDropsAndCounts) {
  ASSERT_NO_FATAL_FAILURE(start(1200, 1200, /*server_queue=*/4));
  size_t queued = 0;
  while (client()->send_datagram(payload(50, static_cast<uint8_t>(queued)))) ++queued;
  ASSERT_GE(queued, 8u);  // the send queue's size bounds this loop
  settle();
  const auto at_server = read_all(*server());
  ASSERT_EQ(at_server.size(), 4u);
  for (size_t i = 0; i < at_server.size(); ++i) {
    EXPECT_EQ(at_server[i], payload(50, static_cast<uint8_t>(i)));
  }
  EXPECT_EQ(server()->stats().datagrams_dropped, queued - 4);
  EXPECT_EQ(server_events_, 4u);
  EXPECT_EQ(server()->state(), conn::ConnectionState::kEstablished);
}

}  // namespace
}  // namespace dpquic::harness
