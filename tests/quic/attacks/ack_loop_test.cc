// Attack / failure mode: an ACK-only ping-pong. RFC 9000 §13.2.1: ACK-only
// packets are not ack-eliciting, and an endpoint must not send an ACK-only
// packet in answer to one, or two endpoints would acknowledge each other's
// acknowledgments forever. Checked twice: two real endpoints left idle after
// a download exchange nothing more (until the idle timeout), and a forged
// peer sending thousands of ACK-only packets draws no answer at all.

#include <gtest/gtest.h>

#include "tests/quic/attacks/forged_peer.h"
#include "tools/testbed/perf_app.h"

namespace dpquic::attacks {
namespace {

TEST(AckLoopTest, IdleEndpointsFallSilentAfterADownload) {
  harness::QuicPair pair;
  harness::PerfServer server_app(*pair.server);
  harness::PerfClient client_app(*pair.client);
  harness::attach(pair, server_app, client_app);
  uint64_t datagrams = 0;
  pair.simulator->set_observer([&](bool, Instant, const harness::Datagram&) { ++datagrams; });
  const auto handle = pair.connect();
  client_app.request(handle, 1 << 20);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  EXPECT_EQ(client_app.mismatches(), 0u);
  // The last ACKs (delayed up to max_ack_delay) and any PTO-driven
  // retransmission settle within a second.
  (void)pair.run_until([] { return false; }, 1 * kSecond);
  const uint64_t settled = datagrams;
  // Then 25 s with nothing to send (idle timeout: 30 s): no datagram at all.
  (void)pair.run_until([] { return false; }, 25 * kSecond);
  EXPECT_EQ(datagrams, settled) << "endpoints kept exchanging packets while idle";
  ASSERT_NE(pair.client_connection(handle), nullptr);
  EXPECT_TRUE(pair.client_connection(handle)->is_established());
  // And the connection ends by idle timeout, silently.
  (void)pair.run_until([&] { return pair.client_connection(handle) == nullptr; }, 10 * kSecond);
  EXPECT_EQ(pair.client_connection(handle), nullptr);
  EXPECT_EQ(datagrams, settled);
}

TEST(AckLoopTest, AckOnlyPacketsAreNeverAnswered) {
  ForgedPeer peer(Side::kClient);
  ASSERT_NO_FATAL_FAILURE(peer.establish());
  // Something to acknowledge: a PING, answered once.
  FrameBuffer frames;
  ASSERT_TRUE(frames.add(ping_frame()));
  peer.send(frames);
  peer.advance(100 * kMillisecond);
  ASSERT_FALSE(peer.received().empty());
  const uint64_t answered = peer.victim_datagrams();

  // 5000 ACK-only packets (the auto ACK, nothing else), a millisecond apart.
  peer.reset_victim_allocations();
  for (int i = 0; i < 5000; ++i) {
    peer.send(std::span<const uint8_t>());
    peer.advance(kMillisecond);
  }
  EXPECT_EQ(peer.victim_datagrams(), answered) << "the victim answered ACK-only packets";
  EXPECT_EQ(peer.victim_allocations(), 0u);
  EXPECT_FALSE(peer.close().has_value());
  EXPECT_TRUE(peer.victim()->is_established());
}

}  // namespace
}  // namespace dpquic::attacks
