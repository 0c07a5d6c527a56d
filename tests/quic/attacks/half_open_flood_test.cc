// Attack: valid Initials from spoofed sources fill the connection pool
// (RFC 9000 §8.1, §21.6). Each one passes the authenticity check, gets a
// real handshake and holds a slot until the handshake timeout, because the
// address it names never answers. The server must keep room for honest
// clients:
// - auto Retry turns on when half-open connections hold a quarter of the
//   pool, whatever the pool's size, and when the pool is full;
// - a client that proved its address (a Retry token) takes the slot of the
//   oldest half-open connection that has not, and the application hears of
//   that one's end before anything of the new one;
// - while Retry is on, unvalidated half-open connections expire early;
// - one source prefix (/32, /64) holds at most its bound of them, beyond
//   which Initials get Retry, or CONNECTION_REFUSED without Retry.

#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <vector>

#include "tests/quic/attacks/forged_initial.h"
#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::attacks {
namespace {

constexpr uint64_t kConnectionRefused = 0x2;

conn::SocketAddress spoofed_ipv4(uint32_t n, uint16_t port = 4444) {
  return conn::SocketAddress::ipv4(198, 18, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n),
                                   port);
}

// One spoofed client: the forged Initial from `source`, handed to the server.
class Spoofer {
 public:
  explicit Spoofer(harness::QuicPair& pair) : pair_(pair) {}

  void send(Instant now, const conn::SocketAddress& source) {
    ++sequence_;
    std::array<uint8_t, 8> dcid{}, scid{};
    for (size_t i = 0; i < 4; ++i) {
      dcid[i] = static_cast<uint8_t>(sequence_ >> (8 * i));
      scid[i] = static_cast<uint8_t>(~sequence_ >> (8 * i));
    }
    dcid[7] = 0xd0;
    scid[7] = 0x5c;
    last_ = forge_client_initial(pair_.mb, *pair_.client_tls, wire::ConnectionId(dcid),
                                 wire::ConnectionId(scid),
                                 client_transport_parameters(wire::ConnectionId(scid)));
    ASSERT_EQ(last_.datagram.size(), 1200u);
    pair_.server->handle_datagram(now, conn::PathAddresses{pair_.options.server_address, source},
                                  transmit::EcnCodepoint::kNotEct, last_.datagram);
    // What the server sends back goes to the spoofed address: nobody there.
    last_replies_ = harness::collect_transmit(*pair_.server, now);
  }
  // Whether the last reply was a Retry (a long header, type 3 in v1).
  bool last_was_retry() const {
    return last_replies_.size() == 1 && (last_replies_[0].bytes[0] & 0xf0) == 0xf0;
  }
  // The CONNECTION_CLOSE code the server's Initials answered the last one
  // with, if any.
  std::optional<uint64_t> last_close_error() {
    InitialContents contents;
    for (harness::SentDatagram& d : last_replies_) {
      open_server_initials(pair_.mb, *last_.keys, 8, d.bytes, contents);
    }
    return contents.close_error;
  }

 private:
  harness::QuicPair& pair_;
  uint32_t sequence_ = 0;
  ForgedInitial last_;
  std::vector<harness::SentDatagram> last_replies_;
};

harness::PairOptions small_pool(size_t max_connections) {
  harness::PairOptions options;
  options.server.max_connections = max_connections;
  options.server.retry.mode = endpoint::RetryMode::kAuto;
  return options;
}

// An honest client at the pair's client address: one 50 kB download,
// byte-exact, through whatever the server answers its Initial with.
class HonestClient {
 public:
  explicit HonestClient(harness::QuicPair& pair)
      : pair_(pair), server_app_(*pair.server), client_app_(*pair.client) {
    harness::attach(pair, server_app_, client_app_);
  }
  void download() {
    const auto handle = pair_.connect();
    client_app_.request(handle, 50'000);
    ASSERT_TRUE(pair_.run_until([&] { return client_app_.completed() == 1; }, 5 * kSecond));
    EXPECT_EQ(client_app_.bytes_received(), 50'000u);
    EXPECT_EQ(client_app_.mismatches(), 0u);
  }

 private:
  harness::QuicPair& pair_;
  harness::PerfServer server_app_;
  harness::PerfClient client_app_;
};

TEST(HalfOpenFloodTest, RetryTurnsOnAtAQuarterOfThePoolAndHonestClientsGetIn) {
  harness::QuicPair pair(small_pool(16));
  HonestClient honest(pair);
  Spoofer spoofer(pair);
  for (uint32_t i = 0; i < 100; ++i) spoofer.send(pair.simulator->now(), spoofed_ipv4(i));
  // A quarter of 16: four handshakes, then Retry for everything else.
  EXPECT_EQ(pair.server->connection_count(), 4u);
  EXPECT_EQ(pair.server->unvalidated_count(), 4u);
  EXPECT_EQ(pair.server->stats().retries_sent, 96u);
  EXPECT_EQ(pair.server->stats().connections_refused, 0u);

  honest.download();
  EXPECT_EQ(pair.server->stats().retries_sent, 97u);  // the honest client's, too
}

TEST(HalfOpenFloodTest, AProvenClientEvictsTheOldestUnvalidatedWhenThePoolIsFull) {
  harness::PairOptions options = small_pool(8);
  options.server.retry.half_open_threshold = 1000;  // only a full pool turns Retry on
  harness::QuicPair pair(options);
  HonestClient honest(pair);
  Spoofer spoofer(pair);
  for (uint32_t i = 0; i < 8; ++i) spoofer.send(pair.simulator->now(), spoofed_ipv4(i));
  ASSERT_EQ(pair.server->connection_count(), 8u);
  spoofer.send(pair.simulator->now(), spoofed_ipv4(8));
  EXPECT_TRUE(spoofer.last_was_retry())
      << "a full pool answers Initials without a token with Retry";
  EXPECT_EQ(pair.server->stats().connections_refused, 0u);

  // The honest client goes through the Retry; its token proves its address.
  honest.download();
  EXPECT_EQ(pair.server->stats().half_open_evicted, 1u);
  EXPECT_EQ(pair.server->stats().connections_refused, 0u);
  EXPECT_EQ(pair.server->connection_count(), 8u);
  EXPECT_EQ(pair.server->unvalidated_count(), 7u);
}

TEST(HalfOpenFloodTest, EvictedConnectionsCloseBeforeTheirSlotIsReused) {
  // Driven by hand, so the server's events are read only after the proven
  // client's Initial took the evicted slot.
  harness::PairOptions options = small_pool(2);
  options.server.retry.half_open_threshold = 1000;
  harness::QuicPair pair(options);
  Spoofer spoofer(pair);
  Instant now = pair.simulator->now();
  spoofer.send(now, spoofed_ipv4(1));
  // The first spoofed connection holds the oldest slot: note which one.
  std::optional<endpoint::ConnectionHandle> oldest;
  for (endpoint::ConnectionHandle h = 0; h < 2; ++h) {
    if (pair.server->connection(h) != nullptr) oldest = h;
  }
  ASSERT_TRUE(oldest.has_value());
  spoofer.send(now, spoofed_ipv4(2));
  endpoint::EndpointEvent event;
  while (pair.server->poll_event(event)) {
  }
  ASSERT_EQ(pair.server->connection_count(), 2u);

  // A client with a Retry token for its address: connect, take the Retry
  // (the pool is full), and come back with the token.
  (void)pair.connect();
  for (int round = 0; round < 4 && pair.server->stats().half_open_evicted == 0; ++round) {
    now += kMillisecond;
    for (const harness::SentDatagram& d : harness::collect_transmit(*pair.client, now)) {
      harness::deliver(*pair.server, now, d, pair.options.client_address);
    }
    for (const harness::SentDatagram& d : harness::collect_transmit(*pair.server, now)) {
      harness::deliver(*pair.client, now, d, pair.options.server_address);
    }
    while (pair.client->poll_event(event)) {
    }
  }
  ASSERT_EQ(pair.server->stats().half_open_evicted, 1u);
  ASSERT_TRUE(pair.server->poll_event(event));
  EXPECT_EQ(event.event.type, conn::ConnectionEventType::kClosed);
  EXPECT_EQ(event.event.close_reason, conn::CloseReason::kHandshakeTimeout);
  const endpoint::ConnectionHandle evicted = event.connection;
  EXPECT_EQ(evicted, *oldest);
  // The new connection lives in the evicted one's slot; its events follow.
  ASSERT_NE(pair.server->connection(evicted), nullptr);
  EXPECT_TRUE(pair.server->connection(evicted)->address_validated());
  while (pair.server->poll_event(event)) {
    EXPECT_FALSE(event.connection == evicted &&
                 event.event.type == conn::ConnectionEventType::kClosed);
  }
}

TEST(HalfOpenFloodTest, UnvalidatedHalfOpenExpireEarlyWhileRetryIsOn) {
  harness::QuicPair pair(small_pool(16));  // Retry at 4 half-open
  Spoofer spoofer(pair);
  const Instant start = pair.simulator->now();
  for (uint32_t i = 0; i < 4; ++i) spoofer.send(start, spoofed_ipv4(i));
  ASSERT_EQ(pair.server->half_open_count(), 4u);
  // Within the crowded timeout (2 s), the flood keeps getting Retry.
  spoofer.send(start + 1900 * kMillisecond, spoofed_ipv4(10));
  EXPECT_TRUE(spoofer.last_was_retry());
  EXPECT_EQ(pair.server->stats().half_open_expired, 0u);
  // After it, the four are dropped long before their 10 s handshake
  // timeout. Retry stays on for its hold (10 s after the pressure was last
  // seen, at 1.9 s), so the flood's next Initials still get no handshake.
  spoofer.send(start + 2100 * kMillisecond, spoofed_ipv4(11));
  EXPECT_EQ(pair.server->stats().half_open_expired, 4u);
  EXPECT_TRUE(spoofer.last_was_retry());
  EXPECT_EQ(pair.server->unvalidated_count(), 0u);
  spoofer.send(start + 11800 * kMillisecond, spoofed_ipv4(12));
  EXPECT_TRUE(spoofer.last_was_retry());
  // Then an Initial is taken without Retry again.
  spoofer.send(start + 12 * kSecond, spoofed_ipv4(13));
  EXPECT_FALSE(spoofer.last_was_retry());
  EXPECT_EQ(pair.server->unvalidated_count(), 1u);
  endpoint::EndpointEvent event;
  while (pair.server->poll_event(event)) {
  }
  EXPECT_EQ(pair.server->connection_count(), 1u);
}

TEST(HalfOpenFloodTest, OnePrefixHoldsAtMostItsBound) {
  harness::PairOptions options = small_pool(64);
  options.server.max_half_open_per_prefix = 3;
  options.server.retry.half_open_threshold = 1000;
  harness::QuicPair pair(options);
  Spoofer spoofer(pair);
  const Instant now = pair.simulator->now();
  // Ten ports of one IPv4 address: three handshakes, seven Retries.
  for (uint16_t port = 1000; port < 1010; ++port) {
    spoofer.send(now, conn::SocketAddress::ipv4(203, 0, 113, 7, port));
  }
  EXPECT_EQ(pair.server->connection_count(), 3u);
  EXPECT_EQ(pair.server->stats().retries_sent, 7u);
  EXPECT_EQ(pair.server->stats().half_open_prefix_limited, 7u);
  // The next address is another prefix.
  spoofer.send(now, conn::SocketAddress::ipv4(203, 0, 113, 8, 1000));
  EXPECT_EQ(pair.server->connection_count(), 4u);
  // IPv6: addresses of one /64 count together, another /64 apart.
  std::array<uint8_t, 16> ip = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1};
  for (uint8_t host = 1; host <= 5; ++host) {
    ip[15] = host;
    spoofer.send(now, conn::SocketAddress::ipv6(ip, 443));
  }
  EXPECT_EQ(pair.server->connection_count(), 7u);
  ip[7] = 2;
  spoofer.send(now, conn::SocketAddress::ipv6(ip, 443));
  EXPECT_EQ(pair.server->connection_count(), 8u);
}

TEST(HalfOpenFloodTest, WithoutRetryAPrefixAtItsBoundIsRefused) {
  harness::PairOptions options = small_pool(64);
  options.server.max_half_open_per_prefix = 2;
  options.server.retry.mode = endpoint::RetryMode::kNever;
  harness::QuicPair pair(options);
  Spoofer spoofer(pair);
  const Instant now = pair.simulator->now();
  for (uint16_t port = 1000; port < 1004; ++port) {
    spoofer.send(now, conn::SocketAddress::ipv4(203, 0, 113, 9, port));
  }
  EXPECT_EQ(spoofer.last_close_error(), kConnectionRefused);
  EXPECT_EQ(pair.server->connection_count(), 2u);
  EXPECT_EQ(pair.server->stats().retries_sent, 0u);
  EXPECT_EQ(pair.server->stats().connections_refused, 2u);
}

}  // namespace
}  // namespace dpquic::attacks
