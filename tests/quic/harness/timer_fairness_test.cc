// The endpoint's timer pass handles each due connection once per
// handle_timeout call. A connection whose deadline is still due afterwards
// (an ACK only its next transmit clears) must not be handled again and again
// in the same pass: with many connections that spun the server's core (as
// many handlings per call as there were timers) and at 80k idle connections
// starved its ACKs until clients timed out.

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr size_t kConnections = 6;

TEST(TimerFairnessTest, ADueAckIsHandledOncePerPassAndClearedByTransmit) {
  transmit::ChunkPool pool(64, 1);  // outlives the connections
  QuicPair pair;
  std::vector<endpoint::ConnectionHandle> handles;
  for (size_t i = 0; i < kConnections; ++i) handles.push_back(pair.connect());
  ASSERT_TRUE(pair.run_until([&] {
    for (const auto handle : handles) {
      const conn::Connection* c = pair.client_connection(handle);
      if (c == nullptr || !c->handshake_confirmed()) return false;
    }
    return pair.server->connection_count() == kConnections;
  }));
  // Quiet: every handshake ACK and HANDSHAKE_DONE settled.
  (void)pair.run_until([] { return false; }, 2 * kSecond);

  // One client sends one ack-eliciting packet; the server gets it directly.
  const Instant sent_at = pair.simulator->now();
  const auto stream = pair.client->open_stream(handles[0], conn::StreamDirection::kBidirectional);
  ASSERT_TRUE(stream.has_value());
  static const std::array<uint8_t, 4> kBytes{1, 2, 3, 4};
  (void)pair.client->send(handles[0], *stream, pool.copy_from(kBytes), false);
  const std::vector<SentDatagram> request = collect_transmit(*pair.client, sent_at);
  ASSERT_FALSE(request.empty());
  for (const SentDatagram& datagram : request) {
    deliver(*pair.server, sent_at, datagram, datagram.path.local);
  }

  // Its ACK is delayed (one ack-eliciting packet, RFC 9000 §13.2.2): the
  // server's next timer is that ACK's deadline.
  const Instant ack_due = pair.server->poll_timeout();
  ASSERT_GT(ack_due, sent_at);
  ASSERT_LE(ack_due, sent_at + 100 * kMillisecond);

  const uint64_t handled_before = pair.server->stats().connection_timeouts;
  pair.server->handle_timeout(ack_due);
  EXPECT_EQ(pair.server->stats().connection_timeouts - handled_before, 1u);
  // Still due: the timer pass cannot send the ACK, the transmit does.
  EXPECT_LE(pair.server->poll_timeout(), ack_due);
  pair.server->handle_timeout(ack_due);
  EXPECT_EQ(pair.server->stats().connection_timeouts - handled_before, 2u);

  const std::vector<SentDatagram> ack = collect_transmit(*pair.server, ack_due);
  EXPECT_FALSE(ack.empty());
  EXPECT_GT(pair.server->poll_timeout(), ack_due);
  pair.server->handle_timeout(ack_due);
  EXPECT_EQ(pair.server->stats().connection_timeouts - handled_before, 2u);
}

}  // namespace
}  // namespace dpquic::harness
