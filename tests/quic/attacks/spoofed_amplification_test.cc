// Attack: amplification through a spoofed source address (RFC 9000 §8.1).
// An attacker sends a client Initial with the victim's address as source;
// the server's answer (a certificate flight of several kB) would go to the
// victim. Until the address is validated, a server MUST NOT send more than
// three times the bytes it received from it, and that counts its
// retransmissions and PTO probes too: an address that never answers gets at
// most 3x what came from it, whatever timers fire, and the connection
// attempt is then dropped, leaving nothing behind.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "tests/quic/attacks/forged_initial.h"
#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::attacks {
namespace {

constexpr size_t kChainLength = 9;  // a flight far above 3 x 1200 bytes

harness::PairOptions long_chain_options() {
  harness::PairOptions options;
  options.certificate_chain_length = kChainLength;
  return options;
}

TEST(SpoofedAmplificationTest, OneSpoofedInitialGetsAtMostThreeTimesItsSize) {
  harness::QuicPair pair(long_chain_options());
  const conn::SocketAddress victim = conn::SocketAddress::ipv4(192, 0, 2, 66, 4444);
  const std::array<uint8_t, 8> dcid = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::array<uint8_t, 8> scid = {9, 9, 9, 9, 9, 9, 9, 9};
  ForgedInitial initial = forge_client_initial(
      pair.mb, *pair.client_tls, wire::ConnectionId(dcid), wire::ConnectionId(scid),
      client_transport_parameters(wire::ConnectionId(scid)));
  ASSERT_EQ(initial.datagram.size(), 1200u);
  Instant now = harness::kSimulationStart;
  const size_t received = initial.datagram.size();
  pair.server->handle_datagram(now, conn::PathAddresses{pair.options.server_address, victim},
                               transmit::EcnCodepoint::kNotEct, initial.datagram);
  ASSERT_EQ(pair.server->connection_count(), 1u);

  // The server's timers run for a minute; nothing ever comes back.
  size_t sent = 0, datagrams = 0;
  InitialContents contents;
  const Instant end = now + 60 * kSecond;
  for (int rounds = 0; rounds < 100000; ++rounds) {
    for (harness::SentDatagram& d : harness::collect_transmit(*pair.server, now)) {
      EXPECT_EQ(d.path.remote, victim);
      sent += d.bytes.size();
      ++datagrams;
      open_server_initials(pair.mb, *initial.keys, scid.size(), d.bytes, contents);
    }
    endpoint::EndpointEvent event;
    while (pair.server->poll_event(event)) {
    }
    const Instant next = pair.server->poll_timeout();
    if (next > end) break;
    now = std::max(now, next);
    pair.server->handle_timeout(now);
  }
  EXPECT_GT(datagrams, 0u);
  EXPECT_TRUE(contents.crypto);  // the ServerHello did go out
  EXPECT_LE(sent, 3 * received) << "amplification: " << sent << " bytes for " << received;
  // The limit was what held it back: the flight is larger than the budget,
  // which the server used.
  EXPECT_GT(sent, 2 * received);
  // The attempt is abandoned; its state is gone.
  EXPECT_EQ(pair.server->connection_count(), 0u);
  EXPECT_EQ(pair.server->half_open_count(), 0u);
}

TEST(SpoofedAmplificationTest, RetriesFromAnAddressThatNeverReceivesStayWithinThreeTimes) {
  // The real client's Initials (and its PTO retransmissions) reach the
  // server, but nothing the server sends reaches the client: the client's
  // address never proves it can receive.
  harness::PairOptions options = long_chain_options();
  options.server_to_client.loss = 1.0;
  const Duration delay = options.client_to_server.one_way_delay;
  harness::QuicPair pair(options);
  struct Event {
    Instant at;
    bool from_client;
    size_t bytes;
  };
  std::vector<Event> events;
  pair.simulator->set_observer([&](bool client_to_server, Instant now, const harness::Datagram& d) {
    // Client datagrams arrive `delay` later (no impairment that way).
    events.push_back({client_to_server ? now + delay : now, client_to_server, d.bytes.size()});
  });
  // The server's application reads its events (the endpoint frees a
  // finished connection as they drain).
  pair.server_node->set_application([&](Instant) {
    endpoint::EndpointEvent event;
    while (pair.server->poll_event(event)) {
    }
  });
  (void)pair.connect();
  (void)pair.run_until([] { return false; }, 60 * kSecond);

  // At every server datagram: total sent <= 3 x total received by then.
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.at < b.at; });
  uint64_t received = 0, sent = 0, server_datagrams = 0;
  for (const Event& e : events) {
    if (e.from_client) {
      received += e.bytes;
    } else {
      sent += e.bytes;
      ++server_datagrams;
      EXPECT_LE(sent, 3 * received)
          << "at " << (e.at - harness::kSimulationStart) / kMillisecond << " ms";
    }
  }
  EXPECT_GT(server_datagrams, 1u);  // it did retransmit within its budget
  // Its whole flight and retransmissions, paced by what arrived.
  EXPECT_GT(sent, received);
  EXPECT_GT(pair.simulator->client_to_server_stats().delivered, 1u);
  // Both sides gave up; the server kept nothing.
  EXPECT_EQ(pair.server->connection_count(), 0u);
  EXPECT_EQ(pair.server->half_open_count(), 0u);
}

}  // namespace
}  // namespace dpquic::attacks
