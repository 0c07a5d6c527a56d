// Stopped streams (RFC 9000 §3.5): once we sent STOP_SENDING, every byte the
// peer sends on the stream counts as consumed for connection flow control
// (the peer must not be blocked on data we throw away), so the connection
// window no longer bounds what such streams could hold. A peer that keeps
// sending 1-byte frames at spread offsets on stopped streams, each within
// the stream's window, must therefore make us store nothing: only the
// received ranges are kept, to learn when the peer has sent everything.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "tests/quic/attacks/forged_peer.h"

namespace dpquic::attacks {
namespace {

using wire::TransportErrorCode;

constexpr size_t kBlockSize = 4096;
constexpr uint64_t kStopCode = 0x10c;  // H3_REQUEST_CANCELLED, as the h3 server uses
// Frames per packet: each raises a stream's highest offset by one block, so
// a packet stays well inside the connection window's update threshold.
constexpr size_t kFramesPerPacket = 16;

// A small receive pool for the victim (the default 4 GiB is for production,
// not for a test run in parallel under ASan): 1024 blocks, 4 MiB. Storing
// what the attack sends would need 6300 of them.
harness::PairOptions small_receive_pool() {
  harness::PairOptions options;
  options.server.receive_blocks_initial = 256;
  options.server.receive_blocks_max = 1024;
  return options;
}

class StoppedStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish());
    const auto& transport = peer_.pair().options.server.connection.transport;
    streams_ = transport.initial_max_streams_bidi;
    stream_window_ = transport.initial_max_stream_data;
    max_data_ = transport.initial_max_data;
    blocks_before_ = peer_.victim_blocks_in_use();
  }

  // Opens `streams_` request streams with one byte each and stops them all
  // (STOP_SENDING), resetting our side too, as a server abandoning a request
  // does.
  void open_and_stop() {
    for (uint64_t s = 0; s < streams_;) {
      FrameBuffer frames;
      while (s < streams_ && frames.add(stream_frame(4 * s, 0, byte_))) ++s;
      peer_.send(frames);
    }
    for (uint64_t s = 0; s < streams_; ++s) {
      ASSERT_TRUE(peer_.victim()->stop_sending(4 * s, kStopCode));
      ASSERT_TRUE(peer_.victim()->reset_stream(4 * s, kStopCode));
    }
    peer_.wake_victim();
    peer_.advance(kMillisecond);  // the STOP_SENDING frames go out
  }

  ForgedPeer peer_{Side::kClient, small_receive_pool()};
  uint64_t streams_ = 0;
  uint64_t stream_window_ = 0;
  uint64_t max_data_ = 0;
  size_t blocks_before_ = 0;
  std::array<uint8_t, 1> byte_ = {0x5a};
};

TEST_F(StoppedStreamTest, SpreadBytesOnStoppedStreamsHoldNoBlocks) {
  ASSERT_NO_FATAL_FAILURE(open_and_stop());
  EXPECT_EQ(peer_.count_frames(wire::FrameType::kStopSending), streams_);
  // Round k puts one byte at k * 4096 + 1 of every stopped stream, up to the
  // stream's window: in all, many times the connection window.
  const uint64_t rounds = stream_window_ / kBlockSize - 1;
  size_t peak_blocks = 0;
  uint64_t sent = 0;
  for (uint64_t k = 1; k <= rounds && !peer_.close(); ++k) {
    for (uint64_t s = 0; s < streams_ && !peer_.close();) {
      FrameBuffer frames;
      for (size_t n = 0; n < kFramesPerPacket && s < streams_; ++n, ++s) {
        ASSERT_TRUE(frames.add(stream_frame(4 * s, k * kBlockSize + 1, byte_)));
      }
      peer_.send(frames);
      sent += kFramesPerPacket;
      peak_blocks = std::max(peak_blocks, peer_.victim_blocks_in_use() - blocks_before_);
    }
  }
  ASSERT_FALSE(peer_.close().has_value()) << peer_.close()->error_code;
  // The peer moved far past the connection window (it kept opening)...
  EXPECT_GT(rounds * streams_ * kBlockSize, 8 * max_data_);
  EXPECT_GE(sent, rounds * streams_);
  // ...and not one of its bytes was stored.
  EXPECT_EQ(peak_blocks, 0u);

  // The streams still end: a FIN, then the bytes in front of it, tell the
  // victim the peer has sent everything, and the streams are freed.
  for (uint64_t s = 0; s < streams_; ++s) {
    FrameBuffer frames;
    const std::array<uint8_t, 1> last = {0x5a};
    ASSERT_TRUE(frames.add(stream_frame(4 * s, stream_window_ - 1, last, /*fin=*/true)));
    peer_.send(frames);
  }
  EXPECT_EQ(peer_.victim()->open_stream_count(), streams_);
  for (uint64_t offset = 1; offset < stream_window_ - 1; offset += 1024) {
    const uint64_t length = std::min<uint64_t>(1024, stream_window_ - 1 - offset);
    std::vector<uint8_t> chunk(length, 0x5a);
    for (uint64_t s = 0; s < streams_; ++s) {
      FrameBuffer frames;
      ASSERT_TRUE(frames.add(stream_frame(4 * s, offset, chunk)));
      peer_.send(frames);
      ASSERT_EQ(peer_.victim_blocks_in_use(), blocks_before_);
    }
  }
  ASSERT_FALSE(peer_.close().has_value());
  EXPECT_EQ(peer_.victim()->open_stream_count(), 0u);
  EXPECT_EQ(peer_.victim_blocks_in_use(), blocks_before_);
}

}  // namespace
}  // namespace dpquic::attacks
