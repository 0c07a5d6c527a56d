// Endpoint behaviour at its edges: timer heap capacity, undecryptable
// Initials, refusal read by a version-2 client; each driven through real
// connections (real TLS, real packet protection) by hand, at a fixed time
// where the scenario needs one.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "quic/transmit/chunk.h"
#include "quic/wire/header.h"
#include "quic/wire/varint.h"
#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

const SocketAddress kClient = SocketAddress::ipv4(10, 0, 0, 1, 50000);
const SocketAddress kServer = SocketAddress::ipv4(10, 0, 0, 2, 443);

// Everything each endpoint sends goes to the other, a few times over, with
// timers and events serviced as the drain order asks; `now` advances by
// `one_way_delay` at each hop.
void exchange(QuicPair& pair, Instant& now, int rounds = 1, Duration one_way_delay = 0) {
  for (int round = 0; round < rounds; ++round) {
    for (endpoint::Endpoint* from : {pair.client.get(), pair.server.get()}) {
      now += one_way_delay;
      endpoint::Endpoint& to = from == pair.client.get() ? *pair.server : *pair.client;
      const SocketAddress& source = from == pair.client.get() ? kClient : kServer;
      from->handle_timeout(now);
      for (const SentDatagram& datagram : collect_transmit(*from, now)) {
        deliver(to, now, datagram, source);
      }
      endpoint::EndpointEvent event;
      while (from->poll_event(event)) {
      }
    }
  }
}

// RFC 9000 §14.1 sized client Initial: valid long header, a DCID of
// `dcid_byte` x 8, and a payload of garbage (it cannot decrypt).
std::vector<uint8_t> garbage_initial(uint8_t dcid_byte, uint32_t version = wire::kVersion1) {
  std::vector<uint8_t> bytes(1200, 0);
  wire::ByteWriter writer(bytes);
  const std::array<uint8_t, 8> dcid{dcid_byte, 1, 2, 3, 4, 5, 6, 7};
  const std::array<uint8_t, 4> scid{9, 9, 9, dcid_byte};
  EXPECT_TRUE(
      writer.write_u8(0xc3) && writer.write_u32(version) && writer.write_u8(8) &&
      writer.write_bytes(dcid) && writer.write_u8(4) && writer.write_bytes(scid) &&
      writer.write_u8(0) /* token length */ &&
      writer.write_u16(static_cast<uint16_t>(0x4000 | (bytes.size() - writer.position() - 2))));
  for (size_t i = writer.position(); i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 131 + dcid_byte);
  }
  return bytes;
}

// Guard (no defect found): a connection whose timer keeps returning to the
// same deadline (its PTO, while what it sent stays unacknowledged) after
// brief excursions (the ACK timer of each ack-eliciting packet received)
// leaves one heap entry per return, all live at once. Compaction keeps them;
// the heap must still stay within the capacity reserved at start, since a
// connection's consecutive entries differ, so at most about half are live.
TEST(EndpointConformanceTest, TimerHeapStaysWithinItsCapacityWhenADeadlineRecurs) {
  transmit::ChunkPool pool(64, 1024);  // outlives the endpoints
  PairOptions options;
  options.server.max_connections = 1;  // heap capacity 4 * 1 + 64
  QuicPair pair(options);
  Instant now = 5 * kSecond;
  const auto handle = pair.client->connect(now, {kClient, kServer}, "localhost");
  ASSERT_TRUE(handle.has_value());
  // A 100 ms round trip: the server's PTO is then a few hundred ms.
  exchange(pair, now, 6, 50 * kMillisecond);
  conn::Connection* client = pair.client->connection(*handle);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->is_established());
  endpoint::ConnectionHandle server_handle = 0;
  ASSERT_NE(pair.server->connection(server_handle), nullptr);
  const auto client_stream =
      pair.client->open_stream(*handle, conn::StreamDirection::kUnidirectional);
  const auto server_stream =
      pair.server->open_stream(server_handle, conn::StreamDirection::kUnidirectional);
  ASSERT_TRUE(client_stream.has_value() && server_stream.has_value());
  exchange(pair, now, 2, 50 * kMillisecond);
  const uint8_t byte = 0x61;
  // The server sends data its peer never acknowledges: its ack-eliciting
  // packets are lost from now on, while the client keeps sending a byte a millisecond.
  ASSERT_EQ(pair.server->send(server_handle, *server_stream, pool.copy_from({&byte, 1}), false),
            conn::SendResult::kOk);
  size_t largest = 0;
  for (int i = 0; i < 250; ++i) {
    now += kMillisecond;
    ASSERT_EQ(pair.client->send(*handle, *client_stream, pool.copy_from({&byte, 1}), false),
              conn::SendResult::kOk);
    pair.client->handle_timeout(now);
    for (const SentDatagram& datagram : collect_transmit(*pair.client, now)) {
      deliver(*pair.server, now, datagram, kClient);
    }
    pair.server->handle_timeout(now);
    // The server's ack-eliciting packets (its data, its probes) are lost;
    // its ACKs arrive, so the client keeps a congestion window to send in.
    conn::Connection* server = pair.server->connection(server_handle);
    ASSERT_NE(server, nullptr);
    (void)collect_transmit(*pair.server, now);
    endpoint::EndpointEvent event;
    while (pair.server->poll_event(event) || pair.client->poll_event(event)) {
    }
    largest = std::max(largest, pair.server->timer_entries());
  }
  conn::Connection* server = pair.server->connection(server_handle);
  ASSERT_NE(server, nullptr);
  EXPECT_GE(server->stats().packets_received, 250u);
  EXPECT_LE(largest, 4u * options.server.max_connections + 64);
}

// A first datagram that does not decrypt must leave nothing behind (RFC
// 9000 §5.2.2, RFC 9001 §5.3): no connection, no CID, and it
// must not count as a handshake in the rate that turns Retry on under kAuto,
// or a flood of garbage would make every real client pay a Retry round trip.
TEST(EndpointConformanceTest, UndecryptableInitialsLeaveNoStateAndDoNotTriggerRetry) {
  PairOptions options;
  options.server.retry.mode = endpoint::RetryMode::kAuto;
  options.server.retry.handshake_rate_threshold = 10;
  QuicPair pair(options);
  Instant now = 5 * kSecond;
  std::vector<std::vector<uint8_t>> flood;
  for (int i = 0; i < 101; ++i) flood.push_back(garbage_initial(static_cast<uint8_t>(i)));
  pair.server->handle_datagram(now, {kServer, kClient}, transmit::EcnCodepoint::kNotEct, flood[0]);
  size_t allocations = 0;
  {
    testing::AllocationWindow window;
    for (size_t i = 1; i < flood.size(); ++i) {
      pair.server->handle_datagram(now, {kServer, kClient}, transmit::EcnCodepoint::kNotEct,
                                   flood[i]);
    }
    allocations = window.count();
  }
  // Checking them allocates nothing at all: the Initial keys that open each
  // one are derived into the endpoint's own storage, and no Connection, CID
  // or key storage is made for a datagram that does not authenticate.
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(pair.server->connection_count(), 0u);
  EXPECT_EQ(pair.server->half_open_count(), 0u);
  EXPECT_EQ(pair.server->cid_table_size(), 0u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 0u);
  EXPECT_EQ(pair.server->stats().datagrams_dropped, flood.size());
  EXPECT_TRUE(collect_transmit(*pair.server, now).empty());

  // A real client right after the flood is accepted without a Retry.
  const auto handle = pair.client->connect(now, {kClient, kServer}, "localhost");
  ASSERT_TRUE(handle.has_value());
  exchange(pair, now, 6);
  ASSERT_NE(pair.client->connection(*handle), nullptr);
  EXPECT_TRUE(pair.client->connection(*handle)->is_established());
  EXPECT_EQ(pair.server->stats().retries_sent, 0u);
  EXPECT_EQ(pair.server->stats().connections_accepted, 1u);
}

// RFC 9000 §5.2.2 with a full pool, in QUIC version 2 (RFC 9369): the
// stateless CONNECTION_CLOSE is an Initial of the client's version, under
// that version's Initial keys and packet type bits, and the client closes on
// it with CONNECTION_REFUSED.
TEST(EndpointConformanceTest, RefusalWhenThePoolIsFullIsReadByAVersion2Client) {
  PairOptions options;
  options.server.max_connections = 1;
  QuicPair pair(options);
  Instant now = 5 * kSecond;
  const auto first = pair.client->connect(now, {kClient, kServer}, "localhost", wire::kVersion2);
  ASSERT_TRUE(first.has_value());
  exchange(pair, now, 6);
  ASSERT_TRUE(pair.client->connection(*first)->is_established());
  EXPECT_EQ(pair.client->connection(*first)->version(), wire::kVersion2);

  const auto second = pair.client->connect(now, {kClient, kServer}, "localhost", wire::kVersion2);
  ASSERT_TRUE(second.has_value());
  conn::Connection* refused = pair.client->connection(*second);
  ASSERT_NE(refused, nullptr);
  std::vector<SentDatagram> initial = collect_transmit(*pair.client, now);
  ASSERT_EQ(initial.size(), 1u);
  deliver(*pair.server, now, initial[0], kClient);
  EXPECT_EQ(pair.server->stats().connections_refused, 1u);
  std::vector<SentDatagram> answer = collect_transmit(*pair.server, now);
  ASSERT_EQ(answer.size(), 1u);
  // Version 2 Initial: long header, type bits 0b01 (RFC 9369 §3.2).
  EXPECT_EQ(answer[0].bytes[0] & 0xf0, 0xd0);
  deliver(*pair.client, now, answer[0], kServer);
  EXPECT_EQ(refused->close_reason(), conn::CloseReason::kPeerClose);
  EXPECT_EQ(refused->close_error_code(), 0x02u);  // CONNECTION_REFUSED
  EXPECT_TRUE(pair.client->connection(*first)->is_established());
}

}  // namespace
}  // namespace dpquic::harness
