// Attack: many ACK frames in one packet. Processing an ACK frame composes
// the part of the in-flight window it reaches (quic/recovery/ack_processing),
// so a packet packed with ACK frames that each reach the window would cost
// that many compositions. The victim processes a packet's first ACK frame
// only (RFC 9000 does not ask for more; a peer sends one) and counts the
// rest as ignored.

#include <gtest/gtest.h>

#include <vector>

#include "quic/recovery/ack_processing.h"
#include "tests/quic/attacks/forged_peer.h"
#include "tools/testbed/perf_app.h"

namespace dpquic::attacks {
namespace {

constexpr uint64_t kDownload = uint64_t{1} << 30;

class AckFramesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish_download(server_app_, client_app_, kDownload));
    // The victim's window fills with packets nobody acknowledges yet.
    peer_.set_auto_ack(false);
    for (int i = 0; i < 2000 && peer_.received().size() < 2; ++i) peer_.advance(kMillisecond);
    ASSERT_GE(peer_.received().size(), 2u) << "the download did not continue";
  }

  const recovery::AckXorBuffer& ack_buffer() { return *peer_.victim_endpoint().core().ack_buffer; }

  ForgedPeer peer_{Side::kClient};
  harness::PerfServer server_app_{*peer_.pair().server};
  harness::PerfClient client_app_{*peer_.pair().client};
};

TEST_F(AckFramesTest, APacketOfAckFramesComposesTheWindowOnce) {
  // Every frame acknowledges the victim's latest packet only: the older
  // ones stay in flight, so each frame would reach the window again.
  const uint64_t latest = peer_.received().back().packet_number;
  const wire::AckRange only_latest{latest, latest};
  FrameBuffer frames;
  size_t count = 0;
  while (frames.add_ack({&only_latest, 1})) ++count;
  ASSERT_GE(count, 100u);

  const size_t rebuilds_before = ack_buffer().rebuilds();
  const uint64_t ignored_before = peer_.victim()->stats().ack_frames_ignored;
  peer_.send(frames);
  EXPECT_EQ(ack_buffer().rebuilds() - rebuilds_before, 1u);
  EXPECT_EQ(peer_.victim()->stats().ack_frames_ignored - ignored_before, count - 1);
  EXPECT_FALSE(peer_.close().has_value());

  // Honest acknowledgments go on working: the download continues.
  peer_.set_auto_ack(true);
  const size_t received = peer_.received().size();
  for (int i = 0; i < 200; ++i) {
    FrameBuffer ping;
    ASSERT_TRUE(ping.add(ping_frame()));
    peer_.send(ping);
    peer_.advance(kMillisecond);
  }
  EXPECT_GT(peer_.received().size(), received + 50);
  EXPECT_FALSE(peer_.close().has_value());
}

}  // namespace
}  // namespace dpquic::attacks
