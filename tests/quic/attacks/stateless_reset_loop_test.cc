// Attack / failure mode: a stateless reset loop (RFC 9000 §10.3.3). A
// stateless reset looks like any short-header packet, so an endpoint that
// does not recognise one may answer it with a reset of its own, and two such
// endpoints could bounce resets forever. Each reset must be smaller than its
// trigger (so a loop shrinks to nothing) and resets are rate limited.
//
// In the network: a server restarted with a new reset key (it lost its
// connections and cannot produce the tokens the client knows) answers the
// client's packets with resets the client cannot recognise; the client's
// endpoint answers those with resets of its own, and so on. The exchange
// must die out on its own, and all traffic stop once the client gives up.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "quic/endpoint/stateless_packets.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/lent_buffers.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::attacks {
namespace {

struct Sent {
  bool client_to_server;
  Instant at;
  size_t size;
};

TEST(StatelessResetLoopTest, ResetsBetweenTwoEndpointsThatCannotRecogniseThemDieOut) {
  harness::QuicPair pair;
  harness::PerfClient client_app(*pair.client);
  pair.client_node->set_application([&](Instant now) { client_app.run(now); });
  const auto handle = pair.connect();
  ASSERT_TRUE(pair.run_until([&] {
    conn::Connection* c = pair.client_connection(handle);
    return c != nullptr && c->handshake_confirmed();
  }));
  (void)pair.run_until([] { return false; }, 300 * kMillisecond);

  // The server loses its state and its reset key.
  pair.options.server.stateless_reset_key.assign(32, 0x99);
  pair.restart_server();
  std::vector<Sent> sent;
  pair.simulator->set_observer([&](bool client_to_server, Instant now, const harness::Datagram& d) {
    sent.push_back({client_to_server, now, d.bytes.size()});
  });
  client_app.request(handle, 100 * 1000);  // the client keeps sending

  // Until the client gives up (idle timeout), then 5 s of silence.
  ASSERT_TRUE(pair.run_until([&] { return pair.client->connection_count() == 0; }, 60 * kSecond));
  const Instant gave_up = pair.simulator->now();
  const size_t sent_at_give_up = sent.size();
  (void)pair.run_until([] { return false; }, 5 * kSecond);

  const uint64_t server_resets = pair.server->stats().stateless_resets_sent;
  const uint64_t client_resets = pair.client->stats().stateless_resets_sent;
  // The loop did happen: each side answered the other's resets.
  EXPECT_GT(server_resets, 0u);
  EXPECT_GT(client_resets, 0u);
  // Every reset the server sent answered a client datagram, every one the
  // client sent answered a server reset; each is smaller than what
  // triggered it, so the exchange ends: nothing moves after the client gave
  // up, beyond resets still shrinking in flight at that moment.
  size_t after = 0;
  for (size_t i = sent_at_give_up; i < sent.size(); ++i) {
    ++after;
    EXPECT_LT(sent[i].at, gave_up + 2 * kSecond) << "resets still bouncing long after";
  }
  EXPECT_LE(after, 2 * (1200 - endpoint::kMinStatelessResetLength));
  // Resets of at most 1200 bytes answering datagrams of at most 1472: the
  // whole exchange is bounded by the client's own packets, each starting a
  // chain of strictly shrinking resets.
  uint64_t client_packets = 0;
  for (const Sent& s : sent) client_packets += s.client_to_server ? 1 : 0;
  client_packets -= client_resets;
  EXPECT_GT(client_packets, 0u);
  EXPECT_LE(server_resets + client_resets,
            client_packets * (1200 - endpoint::kMinStatelessResetLength + 1));
  EXPECT_EQ(pair.server->connection_count(), 0u);
}

TEST(StatelessResetLoopTest, ResetsAreRateLimitedAndAllocateNothing) {
  harness::PairOptions options;
  options.server.stateless_replies_per_second = 100;
  harness::QuicPair pair(options);
  // 5000 distinct 1200-byte short-header datagrams for unknown connections
  // within one second.
  std::vector<uint8_t> datagram(1200, 0x5a);
  const harness::LentBuffers lent(16, 1472);
  const transmit::BurstBuffers buffers = lent.buffers();
  const conn::PathAddresses path{options.server_address, options.client_address};
  Instant now = harness::kSimulationStart;
  size_t allocations = 0;
  uint64_t replies = 0;
  for (uint32_t i = 0; i < 5000; ++i) {
    now += 200 * 1000;  // 0.2 ms apart: 1 s in all
    datagram[0] = 0x43;
    for (size_t b = 0; b < 4; ++b) datagram[1 + b] = static_cast<uint8_t>(i >> (8 * b));
    std::vector<uint8_t> copy = datagram;
    testing::AllocationWindow window;
    pair.server->handle_datagram(now, path, transmit::EcnCodepoint::kNotEct, copy);
    transmit::BurstDescriptor out;
    conn::PathAddresses reply_path;
    while (pair.server->poll_transmit(now, buffers, out, reply_path)) {
      for (size_t d = 0; d < out.datagram_count; ++d) {
        ++replies;
        EXPECT_LT(out.lengths[d], datagram.size());
      }
    }
    allocations += window.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(replies, pair.server->stats().stateless_resets_sent);
  // 100 per second with a burst of 2x: at most 300 in this second.
  EXPECT_LE(replies, 300u);
  EXPECT_GT(replies, 0u);
  EXPECT_GE(pair.server->stats().stateless_replies_dropped, 5000u - 300u);
}

}  // namespace
}  // namespace dpquic::attacks
