// Scenario: stateless reset (RFC 9000 §10.3). A server that lost its
// connections (restarted with the same static key) answers the client's
// 1-RTT packets with stateless resets, smaller than what triggered them; the
// client recognises the token from the handshake and closes with
// kStatelessReset. Two endpoints that know nothing of each other never
// exchange resets endlessly: each is smaller than its trigger, and triggers
// of 21 bytes or less get no answer.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "quic/endpoint/stateless_packets.h"
#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

TEST(StatelessResetTest, RestartedServerResetsAndClientCloses) {
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  const auto handle = pair.connect();
  client_app.request(handle, 20'000);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  conn::Connection* client = pair.client_connection(handle);
  ASSERT_TRUE(client->handshake_confirmed());
  pair.run_until([] { return false; }, 200 * kMillisecond);  // acknowledgments settle

  // The server restarts: same keys, no connections.
  pair.restart_server();
  PerfServer restarted_app(*pair.server);
  pair.server_node->set_application([&](Instant now) { restarted_app.run(now); });
  std::vector<size_t> triggers, resets;
  pair.simulator->set_observer([&](bool client_to_server, Instant, const Datagram& d) {
    (client_to_server ? triggers : resets).push_back(d.bytes.size());
  });

  // New data from the client reaches a server that does not know it.
  client_app.request(handle, 20'000);
  ASSERT_TRUE(pair.run_until([&] { return client_app.closed() == 1; }));
  ASSERT_EQ(client_app.close_events().size(), 1u);
  EXPECT_EQ(client_app.close_events()[0].close_reason, conn::CloseReason::kStatelessReset);
  EXPECT_EQ(client->close_reason(), conn::CloseReason::kStatelessReset);
  EXPECT_EQ(client_app.completed(), 1u);  // the second download never finished

  ASSERT_FALSE(triggers.empty());
  ASSERT_FALSE(resets.empty());
  EXPECT_GT(pair.server->stats().stateless_resets_sent, 0u);
  EXPECT_EQ(pair.server->stats().stateless_resets_sent, resets.size());
  EXPECT_EQ(pair.server->stats().connections_accepted, 0u);
  // The first reset answers the first trigger, and is smaller.
  EXPECT_LT(resets[0], triggers[0]);
  EXPECT_GE(resets[0], endpoint::kMinStatelessResetLength);
  const size_t largest_trigger = *std::max_element(triggers.begin(), triggers.end());
  for (size_t reset : resets) EXPECT_LT(reset, largest_trigger);

  // The client drains (sending nothing) and frees the connection; later
  // resets in flight are not answered with resets of its own.
  const size_t triggers_at_close = triggers.size();
  ASSERT_TRUE(pair.run_until([&] { return pair.client->connection_count() == 0; }, 5 * kSecond));
  pair.run_until([] { return false; }, kSecond);
  EXPECT_EQ(triggers.size(), triggers_at_close);
  EXPECT_EQ(pair.client->stats().stateless_resets_sent, 0u);
}

// Two endpoints without connections bounce a short-header datagram: each
// answers the other's reset with a smaller one until the trigger is too
// small to answer (RFC 9000 §10.3.3).
TEST(StatelessResetTest, ResetsBetweenStrangersShrinkAndStop) {
  QuicPair pair;
  Instant now = pair.simulator->now();
  SentDatagram datagram;
  datagram.path = {pair.options.client_address, pair.options.server_address};
  datagram.bytes.assign(1200, 0x5a);
  datagram.bytes[0] = 0x43;  // short header, fixed bit set

  endpoint::Endpoint* sender = pair.client.get();
  endpoint::Endpoint* receiver = pair.server.get();
  SocketAddress from = pair.options.client_address;
  SocketAddress to = pair.options.server_address;
  std::vector<size_t> sizes{datagram.bytes.size()};
  for (int exchange = 0; exchange < 2000; ++exchange) {
    now += kMillisecond;
    deliver(*receiver, now, datagram, from);
    auto replies = collect_transmit(*receiver, now);
    if (replies.empty()) break;
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_LT(replies[0].bytes.size(), datagram.bytes.size());
    EXPECT_GE(replies[0].bytes.size(), endpoint::kMinStatelessResetLength);
    EXPECT_EQ(replies[0].path.remote, from);
    datagram = replies[0];
    sizes.push_back(datagram.bytes.size());
    std::swap(sender, receiver);
    std::swap(from, to);
  }
  (void)sender;
  // Strictly shrinking from 1200 to the 21-byte minimum, whose trigger
  // got no answer: the exchange ended on its own.
  ASSERT_GE(sizes.size(), 2u);
  EXPECT_EQ(sizes.back(), endpoint::kMinStatelessResetLength);
  EXPECT_LE(sizes.size(), 1200u - endpoint::kMinStatelessResetLength + 1);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_LT(sizes[i], sizes[i - 1]);
  EXPECT_EQ(pair.client->stats().stateless_resets_sent + pair.server->stats().stateless_resets_sent,
            sizes.size() - 1);
}

TEST(StatelessResetTest, SmallTriggersAreAnsweredOneByteShorterOrNotAtAll) {
  QuicPair pair;
  const Instant now = pair.simulator->now();
  for (size_t size : {size_t{17}, size_t{21}, size_t{22}, size_t{30}, size_t{43}}) {
    SentDatagram datagram;
    datagram.path = {pair.options.client_address, pair.options.server_address};
    datagram.bytes.assign(size, 0x11);
    datagram.bytes[0] = 0x40;
    const uint64_t before = pair.server->stats().stateless_resets_sent;
    deliver(*pair.server, now, datagram, pair.options.client_address);
    auto replies = collect_transmit(*pair.server, now);
    if (size <= endpoint::kMinStatelessResetLength) {
      EXPECT_TRUE(replies.empty()) << size;
      EXPECT_EQ(pair.server->stats().stateless_resets_sent, before) << size;
    } else {
      ASSERT_EQ(replies.size(), 1u) << size;
      EXPECT_EQ(replies[0].bytes.size(), size - 1);
      // Looks like a short header: form bit 0, fixed bit 1.
      EXPECT_EQ(replies[0].bytes[0] & 0xc0, 0x40);
    }
  }
}

}  // namespace
}  // namespace dpquic::harness
