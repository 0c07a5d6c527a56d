// Attacks on stream reassembly (RFC 9000 §21.9, §21.10):
// - stream commitment: opening more streams than MAX_STREAMS allows is
//   STREAM_LIMIT_ERROR (§4.6), so streams (and their state) stay bounded;
// - fragmentation: tiny out-of-order STREAM frames spread over many streams
//   and blocks. Memory is bounded by flow control: a byte is stored in its
//   4 KiB block only, and every stream's highest offset counts against the
//   connection window (1 MiB here), so the blocks held stay near
//   window / 4096 + one per stream; data past the window is
//   FLOW_CONTROL_ERROR (§4.1);
// - holes: one stream's reassembly keeps at most max_gaps holes
//   (clamp(max_stream_window / 4096, 1024, 4096)); a peer needing more is
//   closed (our policy: PROTOCOL_VIOLATION), and the hole list grows by
//   doubling, never per frame.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "tests/quic/attacks/forged_peer.h"

namespace dpquic::attacks {
namespace {

using wire::TransportErrorCode;

constexpr uint64_t kStreamFrameType = 0x08;
constexpr size_t kBlockSize = 4096;

class StreamFragmentationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish());
    const auto& transport = peer_.pair().options.server.connection.transport;
    max_streams_ = transport.initial_max_streams_bidi;
    max_data_ = transport.initial_max_data;
    max_gaps_ = std::clamp<size_t>(static_cast<size_t>(transport.max_stream_window / kBlockSize),
                                   1024, 4096);
    blocks_before_ = blocks_in_use();
  }

  size_t blocks_in_use() { return peer_.victim_blocks_in_use(); }

  ForgedPeer peer_{Side::kClient};
  uint64_t max_streams_ = 0;
  uint64_t max_data_ = 0;
  size_t max_gaps_ = 0;
  size_t blocks_before_ = 0;
  std::array<uint8_t, 1> byte_ = {0x5a};
};

TEST_F(StreamFragmentationTest, StreamsBeyondMaxStreamsAreAStreamLimitError) {
  // One byte at offset 1 (never readable) on every stream the limit allows.
  uint64_t stream = 0;
  while (stream / 4 < max_streams_) {
    FrameBuffer frames;
    while (stream / 4 < max_streams_ && frames.add(stream_frame(stream, 1, byte_))) stream += 4;
    peer_.send(frames);
  }
  ASSERT_FALSE(peer_.close().has_value());
  EXPECT_EQ(peer_.victim()->open_stream_count(), max_streams_);
  EXPECT_LE(blocks_in_use() - blocks_before_, max_streams_);
  // The next one is over the limit (client bidi streams 0, 4, 8, ...).
  FrameBuffer frames;
  ASSERT_TRUE(frames.add(stream_frame(4 * max_streams_, 0, byte_)));
  peer_.send(frames);
  ASSERT_TRUE(closed_with(peer_.close(), TransportErrorCode::kStreamLimitError, kStreamFrameType));
  EXPECT_EQ(peer_.victim()->open_stream_count(), max_streams_);
  EXPECT_TRUE(freed_after_closing(peer_, blocks_before_));
}

TEST_F(StreamFragmentationTest, OneByteFragmentsAcrossStreamsStayWithinTheWindow) {
  // Round k puts one byte at k * 4096 + 1 of every stream: each byte in a
  // block of its own, offset 0 never sent.
  size_t peak_blocks = 0;
  for (uint64_t k = 0; k < 64 && !peer_.close(); ++k) {
    for (uint64_t s = 0; s < max_streams_ && !peer_.close();) {
      FrameBuffer frames;
      while (s < max_streams_ && frames.add(stream_frame(4 * s, k * kBlockSize + 1, byte_))) ++s;
      peer_.send(frames);
      peak_blocks = std::max(peak_blocks, blocks_in_use() - blocks_before_);
    }
  }
  ASSERT_TRUE(closed_with(peer_.close(), TransportErrorCode::kFlowControlError, kStreamFrameType));
  // Blocks: the window's worth plus one partial block per stream.
  EXPECT_LE(peak_blocks, max_data_ / kBlockSize + max_streams_);
  EXPECT_GT(peak_blocks, max_streams_);  // the attack did make it store
  EXPECT_TRUE(freed_after_closing(peer_, blocks_before_));
}

TEST_F(StreamFragmentationTest, TooManyHolesInOneStreamCloseWithoutPerFrameAllocation) {
  // One byte every other byte of stream 0 from offset 1: a new hole each.
  peer_.reset_victim_allocations();
  uint64_t offset = 1;
  size_t fragments = 0;
  while (!peer_.close() && fragments < 4 * max_gaps_) {
    FrameBuffer frames;
    while (frames.add(stream_frame(0, offset, byte_))) {
      offset += 2;
      ++fragments;
    }
    peer_.send(frames);
    EXPECT_LE(blocks_in_use() - blocks_before_, offset / kBlockSize + 1);
  }
  ASSERT_TRUE(closed_with(peer_.close(), TransportErrorCode::kProtocolViolation, kStreamFrameType));
  EXPECT_GT(fragments, max_gaps_);
  EXPECT_LE(fragments, max_gaps_ + 200);  // closed in the packet passing the bound
  // The stream object once, the hole list and block ring by doubling.
  EXPECT_LE(peer_.victim_allocations(), 40u);
  EXPECT_TRUE(freed_after_closing(peer_, blocks_before_));
}

}  // namespace
}  // namespace dpquic::attacks
