// Attack: optimistic ACK (RFC 9000 §21.4; Savage et al., "TCP congestion
// control with a misbehaving receiver"). A receiver that acknowledges
// packets before they arrive, or hides losses by acknowledging whole
// ranges, makes the sender grow its congestion window past what the path
// carries. Our sender skips a 1-RTT packet number every 128 to 383 packets
// (quic/conn/connection_transmit.cc); the skipped numbers are remembered by
// recovery (quic/recovery/sent_packets.h), and an ACK covering one closes
// the connection with PROTOCOL_VIOLATION before it can inflate the window.
//
// The attacker here downloads from a real perf server: it acknowledges
// either exactly what it received (honest: the download goes on) or one
// contiguous range from its first packet to the largest one received, as a
// receiver hiding losses would (caught at the first skipped number).

#include <gtest/gtest.h>

#include <vector>

#include "tests/quic/attacks/forged_peer.h"
#include "tools/testbed/perf_app.h"

namespace dpquic::attacks {
namespace {

using wire::TransportErrorCode;

constexpr uint64_t kAckFrameType = 0x02;
constexpr uint64_t kDownload = uint64_t{1} << 30;
// A skip comes within 383 packets; this many leave room for two.
constexpr size_t kVictimPackets = 1000;

class OptimisticAckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish_download(server_app_, client_app_, kDownload));
    // The server's window is full of packets the real client will never
    // see: its PTO probes reach us.
    for (int i = 0; i < 2000 && peer_.received().empty(); ++i) peer_.advance(kMillisecond);
    ASSERT_FALSE(peer_.received().empty()) << "the download did not continue";
    first_ = peer_.received().front().packet_number;
  }

  // Acknowledges (all ranges received, or one range hiding every hole)
  // once a millisecond until the victim sent `packets` or closed.
  void download(bool optimistic, size_t packets) {
    peer_.set_auto_ack(!optimistic);
    while (peer_.received().size() < packets && !peer_.close()) {
      FrameBuffer frames;
      if (optimistic) {
        const std::vector<wire::AckRange> received = peer_.victim_packet_ranges();
        const wire::AckRange all{first_, received.front().largest};
        ASSERT_TRUE(frames.add_ack({&all, 1}));
        // Every victim datagram reaches us: a hole is a skipped number.
        if (received.size() >= 2) {
          ++acks_over_a_hole_;
          cwnd_before_hiding_ = peer_.victim()->congestion().congestion_window();
        }
      } else {
        ASSERT_TRUE(frames.add(ping_frame()));  // the ACK goes in front of it
      }
      peer_.send(frames);
      peer_.advance(kMillisecond);
    }
  }

  ForgedPeer peer_{Side::kClient};
  harness::PerfServer server_app_{*peer_.pair().server};
  harness::PerfClient client_app_{*peer_.pair().client};
  uint64_t first_ = 0;
  size_t acks_over_a_hole_ = 0;
  uint64_t cwnd_before_hiding_ = 0;
};

TEST_F(OptimisticAckTest, HonestAcknowledgmentsKeepTheDownloadGoing) {
  ASSERT_NO_FATAL_FAILURE(download(false, kVictimPackets));
  EXPECT_FALSE(peer_.close().has_value());
  EXPECT_GE(peer_.received().size(), kVictimPackets);
  // The download passed skipped numbers, which honest ACKs leave out.
  EXPECT_GE(peer_.victim_packet_ranges().size(), 2u);
  EXPECT_TRUE(peer_.victim()->is_established());
}

TEST_F(OptimisticAckTest, AcknowledgingOverASkippedNumberClosesWithProtocolViolation) {
  ASSERT_NO_FATAL_FAILURE(download(true, kVictimPackets));
  ASSERT_TRUE(closed_with(peer_.close(), TransportErrorCode::kProtocolViolation, kAckFrameType))
      << "after " << peer_.received().size() << " packets of optimistic ACKs";
  // Caught at the first ACK that hid a skipped number, which inflated
  // nothing.
  EXPECT_EQ(acks_over_a_hole_, 1u);
  ASSERT_NE(peer_.victim(), nullptr);
  EXPECT_EQ(peer_.victim()->congestion().congestion_window(), cwnd_before_hiding_);
  // Closing, then freed: the download's state goes with it.
  EXPECT_TRUE(freed_after_closing(peer_, 0));
}

}  // namespace
}  // namespace dpquic::attacks
