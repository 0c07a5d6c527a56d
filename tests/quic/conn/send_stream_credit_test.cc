// A stream takes from its application no more than the peer's credit
// allows plus SendStream::kSendAheadOfCredit, so a peer that grants none
// pins nothing more in the sender (a file server reads no further than the
// stream takes); and no chunk size can stall it: while nothing queued waits
// for credit, a chunk is taken whole.

#include <gtest/gtest.h>

#include <vector>

#include "quic/conn/send_stream.h"
#include "tests/quic/conn/send_stream_bench.h"

namespace dpquic::conn {
namespace {

using testing::ChunkPool;
using testing::kStreamId;
using testing::PacketBench;
using testing::pattern;

constexpr uint64_t kAhead = SendStream::kSendAheadOfCredit;
constexpr uint64_t kBuffer = 4 << 20;

TEST(SendStreamCreditTest, WritableIsTheCreditPlusTheMarginWithinTheBuffer) {
  ChunkPool pool(64 * 1024, 8);
  SendStream stream(kStreamId, /*peer_max_stream_data=*/0, kBuffer);
  EXPECT_EQ(stream.writable_bytes(), kAhead);  // no credit at all

  ASSERT_TRUE(stream.write(pool.copy_from(pattern(kAhead - 100, 1)), false));
  EXPECT_EQ(stream.writable_bytes(), 100u);
  // Data waits for credit: nothing past the margin.
  EXPECT_FALSE(stream.write(pool.copy_from(pattern(101, 2)), false));
  ASSERT_TRUE(stream.write(pool.copy_from(pattern(100, 3)), false));
  EXPECT_EQ(stream.writable_bytes(), 0u);
  EXPECT_FALSE(stream.write(pool.copy_from(pattern(1, 4)), false));
  EXPECT_EQ(stream.queued_end(), kAhead);

  // Credit arrives: the margin moves with it.
  stream.on_max_stream_data(5000);
  EXPECT_EQ(stream.writable_bytes(), 5000u);
  // A large peer window leaves the buffer as the bound.
  stream.on_max_stream_data(uint64_t{1} << 40);
  EXPECT_EQ(stream.writable_bytes(), kBuffer - kAhead);
}

TEST(SendStreamCreditTest, AChunkIsTakenWholeWhileNothingWaitsForCredit) {
  ChunkPool pool(64 * 1024, 8);
  SendStream stream(kStreamId, /*peer_max_stream_data=*/1000, kBuffer);
  EXPECT_EQ(stream.writable_bytes(), 1000 + kAhead);
  // Larger than what the stream takes, but everything queued (nothing) is
  // within the credit: taken whole, so the peer sees data and opens its
  // window.
  ASSERT_TRUE(stream.write(pool.copy_from(pattern(64 * 1024, 5)), false));
  EXPECT_EQ(stream.writable_bytes(), 0u);
  EXPECT_FALSE(stream.write(pool.copy_from(pattern(1, 6)), false));

  // Sending stops at the credit, and STREAM_DATA_BLOCKED is due.
  PacketBench bench;
  uint64_t credit = uint64_t{1} << 40;
  while (!bench.send(stream, 1200, credit).empty()) {
  }
  EXPECT_EQ(stream.sent_end(), 1000u);
  EXPECT_TRUE(stream.blocked_frame_due());

  // Once the peer's limit covers everything queued, any chunk is taken again.
  stream.on_max_stream_data(64 * 1024);
  EXPECT_EQ(stream.writable_bytes(), kAhead);
  ASSERT_TRUE(stream.write(pool.copy_from(pattern(64 * 1024, 7)), false));
  EXPECT_EQ(stream.queued_end(), 128u * 1024);
}

}  // namespace
}  // namespace dpquic::conn
