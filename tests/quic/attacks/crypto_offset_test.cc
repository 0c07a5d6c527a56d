// Attack: CRYPTO frames at huge offsets (quiche CVE-2024-1765 and similar).
// CRYPTO data has no flow control; a receiver that buffers whatever offset
// arrives can be made to reserve memory for the gap in front of it. RFC 9000
// §7.5: an endpoint MAY bound its buffering and close with
// CRYPTO_BUFFER_EXCEEDED beyond it. Ours buffers at most max_crypto_buffer
// (64 KiB) past the read offset per level, with at most 1024 holes, stores
// bytes only in the 4 KiB blocks they touch, and closes beyond either bound.

#include <gtest/gtest.h>

#include <array>

#include "tests/quic/attacks/forged_peer.h"

namespace dpquic::attacks {
namespace {

using wire::TransportErrorCode;

constexpr uint64_t kCryptoFrameType = 0x06;
constexpr uint64_t kMaxCryptoBuffer = 64 * 1024;  // ConnectionConfig::max_crypto_buffer
constexpr size_t kBlockSize = 4096;

class CryptoOffsetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(peer_.establish());
    ASSERT_EQ(peer_.pair().options.server.connection.max_crypto_buffer, kMaxCryptoBuffer);
    blocks_before_ = blocks_in_use();
    peer_.reset_victim_allocations();
  }

  size_t blocks_in_use() { return peer_.victim_blocks_in_use(); }

  ::testing::AssertionResult closed_with_crypto_buffer_exceeded() {
    return closed_with(peer_.close(), TransportErrorCode::kCryptoBufferExceeded, kCryptoFrameType);
  }

  ForgedPeer peer_{Side::kClient};
  size_t blocks_before_ = 0;
  std::array<uint8_t, 100> data_{};
};

TEST_F(CryptoOffsetTest, OffsetNearTwoToTheSixtyTwoAllocatesNothingAndCloses) {
  FrameBuffer frames;
  ASSERT_TRUE(frames.add(crypto_frame((uint64_t{1} << 62) - 1 - data_.size(), data_)));
  peer_.send(frames);
  ASSERT_TRUE(closed_with_crypto_buffer_exceeded());
  EXPECT_EQ(peer_.victim_allocations(), 0u);
  EXPECT_EQ(blocks_in_use(), blocks_before_);
  EXPECT_TRUE(freed_after_closing(peer_, blocks_before_));
}

TEST_F(CryptoOffsetTest, DataEndingJustPastTheBufferBoundCloses) {
  FrameBuffer frames;
  ASSERT_TRUE(frames.add(crypto_frame(kMaxCryptoBuffer - data_.size() / 2, data_)));
  peer_.send(frames);
  ASSERT_TRUE(closed_with_crypto_buffer_exceeded());
  EXPECT_EQ(peer_.victim_allocations(), 0u);
  EXPECT_EQ(blocks_in_use(), blocks_before_);
  EXPECT_TRUE(freed_after_closing(peer_, blocks_before_));
}

TEST_F(CryptoOffsetTest, DataAtTheEndOfTheBufferHoldsOneBlockNotTheGap) {
  FrameBuffer frames;
  ASSERT_TRUE(frames.add(crypto_frame(kMaxCryptoBuffer - data_.size(), data_)));
  peer_.send(frames);
  EXPECT_FALSE(peer_.close().has_value());
  // 64 KiB - 100 bytes of gap, one block of data.
  EXPECT_EQ(blocks_in_use(), blocks_before_ + 1);
}

TEST_F(CryptoOffsetTest, TinyFragmentsAreBoundedByTheGapLimitThenClose) {
  // One byte every other byte from offset 1: nothing is ever readable and
  // every fragment opens a new hole.
  constexpr size_t kMaxGaps = 1024;  // ReceiveBuffer's default
  uint64_t offset = 1;
  size_t fragments = 0;
  while (!peer_.close() && fragments < 4 * kMaxGaps) {
    FrameBuffer frames;
    while (frames.add(crypto_frame(offset, std::span<const uint8_t>(data_).first(1)))) {
      offset += 2;
      ++fragments;
    }
    peer_.send(frames);
    // Blocks for the bytes stored, never for the whole 64 KiB window.
    EXPECT_LE(blocks_in_use() - blocks_before_, offset / kBlockSize + 1);
  }
  ASSERT_TRUE(closed_with_crypto_buffer_exceeded());
  EXPECT_LE(fragments, 2 * kMaxGaps);  // closed in the packet exceeding the limit
  EXPECT_LE(blocks_in_use() - blocks_before_, (kMaxGaps * 2 + 2) / kBlockSize + 1);
  EXPECT_TRUE(freed_after_closing(peer_, blocks_before_));
}

}  // namespace
}  // namespace dpquic::attacks
