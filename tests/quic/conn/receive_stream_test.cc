#include "quic/conn/receive_stream.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace dpquic::conn {
namespace {

using wire::TransportErrorCode;
constexpr Duration kRtt = 50 * kMillisecond;

std::vector<uint8_t> bytes(size_t size, uint8_t first = 0) {
  std::vector<uint8_t> out(size);
  std::iota(out.begin(), out.end(), first);
  return out;
}

class ReceiveStreamTest : public ::testing::Test {
 protected:
  // Checks a frame is accepted and returns newly_received.
  uint64_t accept(ReceiveStream& stream, uint64_t offset, size_t len, bool fin) {
    const auto data = bytes(len, static_cast<uint8_t>(offset));
    uint64_t newly = 12345;
    const TransportError error = stream.on_stream_frame(offset, data, fin, newly);
    EXPECT_TRUE(error.ok()) << error.reason;
    return newly;
  }
  TransportError frame(ReceiveStream& stream, uint64_t offset, size_t len, bool fin) {
    const auto data = bytes(len, static_cast<uint8_t>(offset));
    uint64_t newly = 12345;
    const TransportError error = stream.on_stream_frame(offset, data, fin, newly);
    if (error) {
      EXPECT_EQ(newly, 0u);
    }
    return error;
  }
  TransportError reset(ReceiveStream& stream, uint64_t code, uint64_t final_size) {
    uint64_t newly = 0;
    return stream.on_reset_stream(code, final_size, newly);
  }

  BlockPool pool_{256, 16, 1024};
};

TEST_F(ReceiveStreamTest, DataThenFinWalksTheStatesInOrder) {
  ReceiveStream stream(pool_, 10000, 10000);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kRecv);
  EXPECT_FALSE(stream.readable());
  EXPECT_EQ(accept(stream, 100, 100, false), 200u);  // out of order: highest 0 -> 200
  EXPECT_FALSE(stream.readable());
  EXPECT_EQ(accept(stream, 0, 100, false), 0u);  // fills the hole, highest unchanged
  EXPECT_TRUE(stream.readable());
  EXPECT_EQ(accept(stream, 300, 50, true), 150u);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kSizeKnown);
  EXPECT_TRUE(stream.final_size_known());
  EXPECT_EQ(stream.final_size(), 350u);
  EXPECT_FALSE(stream.window().update_due());  // no MAX_STREAM_DATA once the size is known

  std::vector<uint8_t> out(1000);
  bool fin = true;
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 200u);
  EXPECT_FALSE(fin);
  EXPECT_EQ(stream.connection_consumed(), 200u);
  EXPECT_FALSE(stream.readable());
  EXPECT_EQ(accept(stream, 200, 100, false), 0u);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kDataRecvd);
  EXPECT_TRUE(stream.readable());
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 150u);
  EXPECT_TRUE(fin);
  const auto expected_tail = bytes(100, 200);
  EXPECT_TRUE(std::equal(expected_tail.begin(), expected_tail.end(), out.begin()));
  EXPECT_EQ(stream.state(), ReceiveStreamState::kDataRead);
  EXPECT_TRUE(stream.finished());
  EXPECT_FALSE(stream.readable());
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 0u);
  EXPECT_TRUE(fin);
  EXPECT_EQ(pool_.blocks_in_use(), 0u);
}

TEST_F(ReceiveStreamTest, EmptyStreamWithFinIsReadImmediately) {
  ReceiveStream stream(pool_, 1000, 1000);
  EXPECT_EQ(accept(stream, 0, 0, true), 0u);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kDataRecvd);
  EXPECT_TRUE(stream.readable());
  bool fin = false;
  std::vector<uint8_t> out(10);
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 0u);
  EXPECT_TRUE(fin);
  EXPECT_TRUE(stream.finished());
}

TEST_F(ReceiveStreamTest, FlowControlLimitIsExact) {
  ReceiveStream stream(pool_, 1000, 1000);
  EXPECT_EQ(accept(stream, 900, 100, false), 1000u);  // ends exactly at the limit
  const TransportError error = frame(stream, 1000, 1, false);
  EXPECT_EQ(error.code, TransportErrorCode::kFlowControlError);
  EXPECT_EQ(error.frame_type, ReceiveStream::kStreamFrameType);
  EXPECT_EQ(frame(stream, 1001, 0, false).code, TransportErrorCode::kFlowControlError);
  EXPECT_EQ(stream.highest_received(), 1000u);
  // A peer offset whose end does not fit in 62 bits.
  EXPECT_EQ(frame(stream, (uint64_t{1} << 62) - 10, 20, false).code,
            TransportErrorCode::kFlowControlError);
  EXPECT_EQ(frame(stream, UINT64_MAX - 5, 10, true).code, TransportErrorCode::kFlowControlError);
}

TEST_F(ReceiveStreamTest, WindowUpdatesAfterReadsRaiseTheLimit) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 1000, false);
  std::vector<uint8_t> out(600);
  bool fin = false;
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 600u);
  ASSERT_TRUE(stream.window().update_due());
  EXPECT_EQ(stream.window().next_limit(), 1600u);
  stream.window().on_update_sent(1600);
  EXPECT_EQ(accept(stream, 1000, 600, false), 600u);
  EXPECT_EQ(frame(stream, 1600, 1, false).code, TransportErrorCode::kFlowControlError);
}

TEST_F(ReceiveStreamTest, DataBeyondKnownFinalSizeIsFinalSizeError) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, true);
  const TransportError error = frame(stream, 100, 1, false);
  EXPECT_EQ(error.code, TransportErrorCode::kFinalSizeError);
  EXPECT_EQ(error.frame_type, ReceiveStream::kStreamFrameType);
  EXPECT_EQ(frame(stream, 50, 51, false).code, TransportErrorCode::kFinalSizeError);
  EXPECT_EQ(frame(stream, 200, 0, false).code, TransportErrorCode::kFinalSizeError);
  // Retransmissions inside the final size are fine.
  accept(stream, 0, 100, true);
  accept(stream, 40, 20, false);
}

TEST_F(ReceiveStreamTest, FinThatChangesTheFinalSizeIsFinalSizeError) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, true);
  EXPECT_EQ(frame(stream, 0, 101, true).code, TransportErrorCode::kFinalSizeError);
  EXPECT_EQ(frame(stream, 0, 99, true).code, TransportErrorCode::kFinalSizeError);
  EXPECT_EQ(frame(stream, 50, 0, true).code, TransportErrorCode::kFinalSizeError);
  accept(stream, 100, 0, true);  // same final size: fine
  EXPECT_EQ(stream.final_size(), 100u);
}

TEST_F(ReceiveStreamTest, FinBelowReceivedDataIsFinalSizeError) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 200, 100, false);
  EXPECT_EQ(frame(stream, 0, 299, true).code, TransportErrorCode::kFinalSizeError);
  EXPECT_EQ(frame(stream, 250, 0, true).code, TransportErrorCode::kFinalSizeError);
  EXPECT_FALSE(stream.final_size_known());
  accept(stream, 300, 0, true);  // exactly at the highest offset: fine
  EXPECT_EQ(stream.final_size(), 300u);
}

TEST_F(ReceiveStreamTest, ResetStreamFinalSizeRules) {
  {
    ReceiveStream stream(pool_, 1000, 1000);
    accept(stream, 0, 100, true);
    const TransportError error = reset(stream, 7, 101);
    EXPECT_EQ(error.code, TransportErrorCode::kFinalSizeError);
    EXPECT_EQ(error.frame_type, ReceiveStream::kResetStreamFrameType);
    EXPECT_EQ(reset(stream, 7, 99).code, TransportErrorCode::kFinalSizeError);
  }
  {
    ReceiveStream stream(pool_, 1000, 1000);
    accept(stream, 300, 100, false);
    EXPECT_EQ(reset(stream, 7, 399).code, TransportErrorCode::kFinalSizeError);
    EXPECT_FALSE(stream.reset_received());
  }
  {
    ReceiveStream stream(pool_, 1000, 1000);
    EXPECT_EQ(reset(stream, 7, 1001).code, TransportErrorCode::kFlowControlError);
    EXPECT_TRUE(reset(stream, 7, 1000).ok());  // exactly the limit
  }
  {
    // After a reset, frames are ignored but the final size still binds.
    ReceiveStream stream(pool_, 1000, 1000);
    accept(stream, 0, 50, false);
    ASSERT_TRUE(reset(stream, 9, 500).ok());
    EXPECT_EQ(accept(stream, 100, 400, false), 0u);
    EXPECT_EQ(pool_.blocks_in_use(), 0u);  // nothing stored
    EXPECT_EQ(frame(stream, 400, 101, false).code, TransportErrorCode::kFinalSizeError);
    EXPECT_EQ(frame(stream, 0, 400, true).code, TransportErrorCode::kFinalSizeError);
    EXPECT_EQ(reset(stream, 9, 501).code, TransportErrorCode::kFinalSizeError);
    EXPECT_TRUE(reset(stream, 9, 500).ok());  // a repeat
  }
}

TEST_F(ReceiveStreamTest, ResetDropsBufferedDataAndIsReportedOnce) {
  ReceiveStream stream(pool_, 10000, 10000);
  accept(stream, 0, 1000, false);
  accept(stream, 2000, 500, false);
  EXPECT_GT(pool_.blocks_in_use(), 0u);
  std::vector<uint8_t> out(100);
  bool fin = false;
  ASSERT_EQ(stream.read(out, fin, 0, kRtt), 100u);
  uint64_t newly = 0;
  ASSERT_TRUE(stream.on_reset_stream(42, 4000, newly).ok());
  EXPECT_EQ(newly, 1500u);  // highest 2500 -> 4000
  EXPECT_EQ(stream.state(), ReceiveStreamState::kResetRecvd);
  EXPECT_TRUE(stream.reset_received());
  EXPECT_EQ(stream.reset_error_code(), 42u);
  EXPECT_EQ(stream.final_size(), 4000u);
  EXPECT_EQ(pool_.blocks_in_use(), 0u);
  EXPECT_EQ(stream.connection_consumed(), 4000u);  // the unread bytes release connection credit
  EXPECT_FALSE(stream.window().update_due());
  EXPECT_TRUE(stream.readable());
  EXPECT_FALSE(stream.finished());
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 0u);
  EXPECT_FALSE(fin);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kResetRead);
  EXPECT_FALSE(stream.readable());
  EXPECT_TRUE(stream.finished());
  ASSERT_TRUE(stream.on_reset_stream(43, 4000, newly).ok());
  EXPECT_EQ(newly, 0u);
  EXPECT_EQ(stream.reset_error_code(), 42u);
}

TEST_F(ReceiveStreamTest, ResetAfterAllDataArrivedKeepsTheData) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, true);
  ASSERT_EQ(stream.state(), ReceiveStreamState::kDataRecvd);
  uint64_t newly = 99;
  ASSERT_TRUE(stream.on_reset_stream(5, 100, newly).ok());
  EXPECT_EQ(newly, 0u);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kDataRecvd);
  EXPECT_FALSE(stream.reset_received());
  std::vector<uint8_t> out(200);
  bool fin = false;
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 100u);
  EXPECT_TRUE(fin);
  EXPECT_EQ(out[99], 99);
}

TEST_F(ReceiveStreamTest, StopSendingIsDueUntilSentAndAgainWhenLost) {
  ReceiveStream stream(pool_, 10000, 10000);
  accept(stream, 0, 1000, false);
  accept(stream, 3000, 100, false);
  EXPECT_FALSE(stream.stop_sending_due());
  stream.stop_sending(77);
  EXPECT_TRUE(stream.stopped());
  EXPECT_TRUE(stream.stop_sending_due());
  EXPECT_EQ(stream.stop_sending_error(), 77u);
  EXPECT_FALSE(stream.readable());
  EXPECT_FALSE(stream.window().update_due());
  EXPECT_EQ(stream.connection_consumed(), 3100u);   // everything received counts as consumed
  EXPECT_EQ(stream.buffer().read_offset(), 1000u);  // contiguous data discarded
  stream.on_stop_sending_sent();
  EXPECT_FALSE(stream.stop_sending_due());
  stream.on_stop_sending_lost();
  EXPECT_TRUE(stream.stop_sending_due());
  stream.on_stop_sending_sent();
  // More data is discarded as it arrives.
  accept(stream, 1000, 2000, false);
  EXPECT_EQ(stream.buffer().read_offset(), 3100u);
  EXPECT_EQ(pool_.blocks_in_use(), 0u);
  EXPECT_FALSE(stream.finished());
  uint64_t newly = 0;
  ASSERT_TRUE(stream.on_reset_stream(1, 3500, newly).ok());
  EXPECT_EQ(newly, 400u);
  stream.on_stop_sending_lost();  // reset arrived: no need to resend
  EXPECT_FALSE(stream.stop_sending_due());
  EXPECT_TRUE(stream.finished());
  EXPECT_EQ(stream.connection_consumed(), 3500u);
}

TEST_F(ReceiveStreamTest, StopSendingAfterAllDataNeedsNoFrame) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, true);
  stream.stop_sending(3);
  EXPECT_FALSE(stream.stop_sending_due());
  EXPECT_TRUE(stream.finished());
  EXPECT_EQ(pool_.blocks_in_use(), 0u);
}

TEST_F(ReceiveStreamTest, StoppedStreamFinishesWhenThePeerSendsEverything) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, false);
  stream.stop_sending(3);
  accept(stream, 200, 100, true);
  EXPECT_FALSE(stream.finished());
  accept(stream, 100, 100, false);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kDataRecvd);
  EXPECT_FALSE(stream.stop_sending_due());
  EXPECT_TRUE(stream.finished());
  EXPECT_EQ(pool_.blocks_in_use(), 0u);
}

TEST_F(ReceiveStreamTest, PoolExhaustionIsInternalError) {
  BlockPool tiny(256, 1, 1);
  ReceiveStream stream(tiny, 10000, 10000);
  accept(stream, 0, 200, false);
  const TransportError error = frame(stream, 200, 100, false);
  EXPECT_EQ(error.code, TransportErrorCode::kInternalError);
}

TEST_F(ReceiveStreamTest, TooManyGapsIsProtocolViolation) {
  ReceiveStream stream(pool_, 100000, 100000, /*max_gaps=*/3);
  accept(stream, 10, 1, false);
  accept(stream, 20, 1, false);
  accept(stream, 30, 1, false);
  EXPECT_EQ(frame(stream, 40, 1, false).code, TransportErrorCode::kProtocolViolation);
  accept(stream, 11, 9, false);  // closes a hole
  accept(stream, 40, 1, false);
}

TEST_F(ReceiveStreamTest, ZeroCopyPeekAndConsume) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 300, true);
  bool fin = true;
  auto piece = stream.peek(fin);
  ASSERT_EQ(piece.size(), 256u);
  EXPECT_EQ(piece[5], 5);
  EXPECT_FALSE(fin);  // the piece ends at a block boundary, before the FIN
  EXPECT_EQ(stream.consume(256, fin, 0, kRtt), 256u);
  EXPECT_FALSE(fin);
  piece = stream.peek(fin);
  ASSERT_EQ(piece.size(), 44u);
  EXPECT_EQ(piece[0], 0);                              // offset 256 of bytes(300, 0) wraps to 0
  EXPECT_TRUE(fin);                                    // reading all of it reads the stream
  EXPECT_EQ(stream.consume(1000, fin, 0, kRtt), 44u);  // clamped to what is there
  EXPECT_TRUE(fin);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kDataRead);
  EXPECT_TRUE(stream.finished());
  EXPECT_TRUE(stream.peek(fin).empty());
  EXPECT_TRUE(fin);
}

TEST_F(ReceiveStreamTest, ZeroCopyPartialConsumeKeepsTheRest) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, false);
  bool fin = true;
  EXPECT_EQ(stream.consume(30, fin, 0, kRtt), 30u);
  EXPECT_FALSE(fin);
  auto piece = stream.peek(fin);
  ASSERT_EQ(piece.size(), 70u);
  EXPECT_EQ(piece[0], 30);
  EXPECT_FALSE(fin);  // no FIN received yet
  EXPECT_EQ(stream.read_offset(), 30u);
}

TEST_F(ReceiveStreamTest, ZeroCopyReportsAResetAsReadDoes) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 100, false);
  uint64_t newly = 0;
  ASSERT_TRUE(stream.on_reset_stream(7, 100, newly).ok());
  bool fin = true;
  EXPECT_TRUE(stream.peek(fin).empty());
  EXPECT_FALSE(fin);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kResetRecvd);
  EXPECT_EQ(stream.consume(0, fin, 0, kRtt), 0u);
  EXPECT_FALSE(fin);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kResetRead);
  EXPECT_TRUE(stream.finished());
}

TEST_F(ReceiveStreamTest, ReadsDriveWindowAutoTuning) {
  ReceiveStream stream(pool_, 1000, 4000);
  std::vector<uint8_t> out(4000);
  bool fin = false;
  uint64_t offset = 0;
  Instant now = 0;
  for (int i = 0; i < 6; ++i) {
    const uint64_t end = stream.window().limit();
    accept(stream, offset, static_cast<size_t>(end - offset), false);
    offset = end;
    stream.read(out, fin, now, kRtt);
    ASSERT_TRUE(stream.window().update_due());
    stream.window().on_update_sent(stream.window().next_limit());
    now += 10 * kMillisecond;  // far faster than 2 RTT
  }
  EXPECT_EQ(stream.window().window(), 4000u);
}

TEST_F(ReceiveStreamTest, ReinitializeMakesAFreshStream) {
  ReceiveStream stream(pool_, 1000, 1000);
  accept(stream, 0, 500, false);
  accept(stream, 600, 100, false);
  stream.stop_sending(4);
  ASSERT_TRUE(reset(stream, 4, 900).ok());
  stream.reinitialize(2000, 8000);
  EXPECT_EQ(pool_.blocks_in_use(), 0u);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kRecv);
  EXPECT_FALSE(stream.stopped());
  EXPECT_FALSE(stream.final_size_known());
  EXPECT_FALSE(stream.reset_received());
  EXPECT_EQ(stream.highest_received(), 0u);
  EXPECT_EQ(stream.window().limit(), 2000u);
  EXPECT_EQ(stream.window().max_window(), 8000u);
  EXPECT_EQ(accept(stream, 0, 2000, true), 2000u);
  std::vector<uint8_t> out(3000);
  bool fin = false;
  EXPECT_EQ(stream.read(out, fin, 0, kRtt), 2000u);
  EXPECT_TRUE(fin);
  EXPECT_EQ(out[1999], static_cast<uint8_t>(1999));
}

}  // namespace
}  // namespace dpquic::conn
