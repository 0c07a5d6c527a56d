#include "quic/conn/stream_limits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace dpquic::conn {
namespace {

using wire::Role;
using wire::TransportErrorCode;

constexpr auto kBidi = StreamDirection::kBidirectional;
constexpr auto kUni = StreamDirection::kUnidirectional;

TEST(StreamLimitsTest, OpensLocalStreamsInIdOrderPerType) {
  StreamLimits client(Role::kClient, 10, 10);
  client.set_peer_limits(3, 2);
  EXPECT_EQ(client.open_local(kBidi), 0u);
  EXPECT_EQ(client.open_local(kUni), 2u);
  EXPECT_EQ(client.open_local(kBidi), 4u);
  EXPECT_EQ(client.open_local(kUni), 6u);
  EXPECT_EQ(client.open_local(kBidi), 8u);
  EXPECT_EQ(client.local_opened_count(kBidi), 3u);
  EXPECT_TRUE(client.local_stream_opened(8));
  EXPECT_FALSE(client.local_stream_opened(12));
  EXPECT_FALSE(client.local_stream_opened(1));  // a server id is never local

  StreamLimits server(Role::kServer, 10, 10);
  server.set_peer_limits(2, 2);
  EXPECT_EQ(server.open_local(kBidi), 1u);
  EXPECT_EQ(server.open_local(kBidi), 5u);
  EXPECT_EQ(server.open_local(kUni), 3u);
  EXPECT_EQ(server.open_local(kUni), 7u);
}

TEST(StreamLimitsTest, NoLocalStreamsBeforeThePeerLimitsArrive) {
  StreamLimits limits(Role::kClient, 10, 10);
  EXPECT_EQ(limits.open_local(kBidi), std::nullopt);
  EXPECT_TRUE(limits.streams_blocked_due(kBidi));
  EXPECT_EQ(limits.streams_blocked_value(kBidi), 0u);
  EXPECT_FALSE(limits.streams_blocked_due(kUni));
  limits.set_peer_limits(1, 0);
  EXPECT_FALSE(limits.streams_blocked_due(kBidi));
  EXPECT_EQ(limits.open_local(kBidi), 0u);
}

TEST(StreamLimitsTest, StreamsBlockedOncePerLimitAndClearedByMaxStreams) {
  StreamLimits limits(Role::kServer, 10, 10);
  limits.set_peer_limits(2, 1);
  EXPECT_EQ(limits.open_local(kUni), 3u);
  EXPECT_FALSE(limits.streams_blocked_due(kUni));
  EXPECT_EQ(limits.open_local(kUni), std::nullopt);
  EXPECT_TRUE(limits.streams_blocked_due(kUni));
  EXPECT_EQ(limits.streams_blocked_value(kUni), 1u);
  EXPECT_FALSE(limits.streams_blocked_due(kBidi));

  limits.on_streams_blocked_sent(kUni);
  EXPECT_FALSE(limits.streams_blocked_due(kUni));
  // Trying again at the same limit does not owe another frame...
  EXPECT_EQ(limits.open_local(kUni), std::nullopt);
  EXPECT_FALSE(limits.streams_blocked_due(kUni));
  // ...unless the one sent was lost.
  limits.on_streams_blocked_lost(kUni, 1);
  EXPECT_TRUE(limits.streams_blocked_due(kUni));
  limits.on_streams_blocked_sent(kUni);

  // A lower or equal MAX_STREAMS is ignored; a higher one unblocks.
  EXPECT_TRUE(limits.on_max_streams(kUni, 1).ok());
  EXPECT_EQ(limits.open_local(kUni), std::nullopt);
  EXPECT_TRUE(limits.on_max_streams(kUni, 3).ok());
  EXPECT_EQ(limits.peer_max_streams(kUni), 3u);
  EXPECT_TRUE(limits.on_max_streams(kUni, 2).ok());
  EXPECT_EQ(limits.peer_max_streams(kUni), 3u);
  EXPECT_EQ(limits.open_local(kUni), 7u);
  EXPECT_EQ(limits.open_local(kUni), 11u);
  // RFC 9000 §19.11: a limit of 3 permits 3, 7, 11 but not 15.
  EXPECT_EQ(limits.open_local(kUni), std::nullopt);
  EXPECT_TRUE(limits.streams_blocked_due(kUni));
  EXPECT_EQ(limits.streams_blocked_value(kUni), 3u);
  // A loss of the old STREAMS_BLOCKED(1) is stale now.
  limits.on_streams_blocked_sent(kUni);
  limits.on_streams_blocked_lost(kUni, 1);
  EXPECT_FALSE(limits.streams_blocked_due(kUni));
  // Raised limits while blocked clear the pending frame.
  EXPECT_EQ(limits.open_local(kBidi), 1u);
  EXPECT_EQ(limits.open_local(kBidi), 5u);
  EXPECT_EQ(limits.open_local(kBidi), std::nullopt);
  EXPECT_TRUE(limits.streams_blocked_due(kBidi));
  EXPECT_TRUE(limits.on_max_streams(kBidi, 3).ok());
  EXPECT_FALSE(limits.streams_blocked_due(kBidi));
}

TEST(StreamLimitsTest, MaxStreamsAbove2To60IsFrameEncodingError) {
  StreamLimits limits(Role::kClient, 10, 10);
  limits.set_peer_limits(0, 0);
  const TransportError bidi = limits.on_max_streams(kBidi, (uint64_t{1} << 60) + 1);
  EXPECT_EQ(bidi.code, TransportErrorCode::kFrameEncodingError);
  EXPECT_EQ(bidi.frame_type, 0x12u);
  const TransportError uni = limits.on_max_streams(kUni, ~uint64_t{0});
  EXPECT_EQ(uni.code, TransportErrorCode::kFrameEncodingError);
  EXPECT_EQ(uni.frame_type, 0x13u);
  EXPECT_EQ(limits.peer_max_streams(kBidi), 0u);
  EXPECT_TRUE(limits.on_max_streams(kBidi, uint64_t{1} << 60).ok());
  EXPECT_EQ(limits.peer_max_streams(kBidi), uint64_t{1} << 60);
}

TEST(StreamLimitsTest, PeerStreamOpensLowerIdsOfItsTypeImplicitly) {
  StreamLimits server(Role::kServer, 10, 10);
  std::optional<uint64_t> begin;
  ASSERT_TRUE(server.on_peer_stream(8, begin).ok());
  EXPECT_EQ(begin, 0u);  // ids 0, 4 and 8 open now
  EXPECT_TRUE(server.peer_stream_opened(0));
  EXPECT_TRUE(server.peer_stream_opened(4));
  EXPECT_TRUE(server.peer_stream_opened(8));
  EXPECT_FALSE(server.peer_stream_opened(12));
  EXPECT_FALSE(server.peer_stream_opened(2));  // other type untouched
  EXPECT_EQ(server.peer_opened_count(kBidi), 3u);

  begin = 99;
  ASSERT_TRUE(server.on_peer_stream(4, begin).ok());
  EXPECT_EQ(begin, std::nullopt);
  ASSERT_TRUE(server.on_peer_stream(8, begin).ok());
  EXPECT_EQ(begin, std::nullopt);
  ASSERT_TRUE(server.on_peer_stream(16, begin).ok());
  EXPECT_EQ(begin, 12u);  // 12 and 16

  ASSERT_TRUE(server.on_peer_stream(6, begin).ok());
  EXPECT_EQ(begin, 2u);  // client uni 2 and 6
  EXPECT_EQ(server.peer_opened_count(kUni), 2u);

  StreamLimits client(Role::kClient, 10, 10);
  ASSERT_TRUE(client.on_peer_stream(7, begin).ok());
  EXPECT_EQ(begin, 3u);  // server uni 3 and 7
  ASSERT_TRUE(client.on_peer_stream(1, begin).ok());
  EXPECT_EQ(begin, 1u);
}

TEST(StreamLimitsTest, StreamLimitErrorExactlyAtLimitPlusOne) {
  StreamLimits server(Role::kServer, 3, 2);
  std::optional<uint64_t> begin;
  // Bidi limit 3: ids 0, 4, 8 are allowed, 12 is the fourth stream.
  ASSERT_TRUE(server.on_peer_stream(8, begin).ok());
  TransportError error = server.on_peer_stream(12, begin);
  EXPECT_EQ(error.code, TransportErrorCode::kStreamLimitError);
  EXPECT_EQ(begin, std::nullopt);
  EXPECT_FALSE(server.peer_stream_opened(12));
  EXPECT_EQ(server.peer_opened_count(kBidi), 3u);
  // Uni limit 2: ids 2, 6 allowed; 10 is not.
  ASSERT_TRUE(server.on_peer_stream(2, begin).ok());
  ASSERT_TRUE(server.on_peer_stream(6, begin).ok());
  EXPECT_EQ(server.on_peer_stream(10, begin).code, TransportErrorCode::kStreamLimitError);
  // The largest stream id is refused without overflow.
  EXPECT_EQ(server.on_peer_stream(kMaxStreamId - 1, begin).code,
            TransportErrorCode::kStreamLimitError);

  // A limit of zero refuses the very first stream.
  StreamLimits client(Role::kClient, 0, 0);
  EXPECT_EQ(client.on_peer_stream(1, begin).code, TransportErrorCode::kStreamLimitError);
  EXPECT_EQ(client.on_peer_stream(3, begin).code, TransportErrorCode::kStreamLimitError);
}

TEST(StreamLimitsTest, LocalStreamNeverOpenedIsStreamStateError) {
  StreamLimits server(Role::kServer, 10, 10);
  server.set_peer_limits(5, 5);
  std::optional<uint64_t> begin;
  EXPECT_EQ(server.on_peer_stream(1, begin).code, TransportErrorCode::kStreamStateError);
  EXPECT_EQ(server.on_peer_stream(3, begin).code, TransportErrorCode::kStreamStateError);
  ASSERT_EQ(server.open_local(kBidi), 1u);
  EXPECT_TRUE(server.on_peer_stream(1, begin).ok());
  EXPECT_EQ(begin, std::nullopt);
  EXPECT_EQ(server.on_peer_stream(5, begin).code, TransportErrorCode::kStreamStateError);
}

TEST(StreamLimitsTest, MaxStreamsReplenishesAfterHalfTheWindowIsFreed) {
  StreamLimits server(Role::kServer, 10, 3);
  std::optional<uint64_t> begin;
  ASSERT_TRUE(server.on_peer_stream(make_stream_id(9, Role::kClient, kBidi), begin).ok());
  EXPECT_EQ(server.advertised_max_streams(kBidi), 10u);
  EXPECT_FALSE(server.max_streams_due(kBidi));
  for (int i = 0; i < 4; ++i) server.on_peer_stream_closed(kBidi);
  EXPECT_FALSE(server.max_streams_due(kBidi));
  EXPECT_EQ(server.next_max_streams(kBidi), 14u);
  server.on_peer_stream_closed(kBidi);
  EXPECT_TRUE(server.max_streams_due(kBidi));
  EXPECT_EQ(server.next_max_streams(kBidi), 15u);
  server.on_max_streams_sent(kBidi, 15);
  EXPECT_FALSE(server.max_streams_due(kBidi));
  EXPECT_EQ(server.advertised_max_streams(kBidi), 15u);

  // Stream index 14 (id 56) is now allowed, 15 is not.
  ASSERT_TRUE(server.on_peer_stream(56, begin).ok());
  EXPECT_EQ(begin, 40u);
  EXPECT_EQ(server.on_peer_stream(60, begin).code, TransportErrorCode::kStreamLimitError);

  for (int i = 0; i < 5; ++i) server.on_peer_stream_closed(kBidi);
  EXPECT_TRUE(server.max_streams_due(kBidi));
  EXPECT_EQ(server.next_max_streams(kBidi), 20u);
  server.on_max_streams_sent(kBidi, 20);
  // Loss of the superseded frame changes nothing; loss of the latest does.
  server.on_max_streams_lost(kBidi, 15);
  EXPECT_FALSE(server.max_streams_due(kBidi));
  server.on_max_streams_lost(kBidi, 20);
  EXPECT_TRUE(server.max_streams_due(kBidi));
  EXPECT_EQ(server.next_max_streams(kBidi), 20u);
  server.on_max_streams_sent(kBidi, 20);
  EXPECT_FALSE(server.max_streams_due(kBidi));

  // Window 3: the threshold is one stream.
  ASSERT_TRUE(server.on_peer_stream(2, begin).ok());
  EXPECT_FALSE(server.max_streams_due(kUni));
  server.on_peer_stream_closed(kUni);
  EXPECT_TRUE(server.max_streams_due(kUni));
  EXPECT_EQ(server.next_max_streams(kUni), 4u);

  // Closing more streams than were opened does not create credit.
  StreamLimits client(Role::kClient, 4, 4);
  client.on_peer_stream_closed(kBidi);
  EXPECT_EQ(client.peer_closed_count(kBidi), 0u);
  EXPECT_FALSE(client.max_streams_due(kBidi));
  EXPECT_EQ(client.next_max_streams(kBidi), 4u);
}

// A peer that opens as many streams as it is allowed while streams close in
// random order: the live count never exceeds the window, every MAX_STREAMS
// carries exactly closed + window, and an attempt one past the advertised
// limit is always refused.
TEST(StreamLimitsTest, TwoThousandStreamsThroughAWindowOfOneHundred) {
  constexpr uint64_t kWindow = 100;
  constexpr uint64_t kTotal = 2000;
  StreamLimits server(Role::kServer, kWindow, kWindow);
  std::mt19937_64 rng(20240606);
  std::vector<uint64_t> live;
  uint64_t next_index = 0;
  uint64_t max_streams_frames = 0;
  std::optional<uint64_t> begin;
  while (next_index < kTotal || !live.empty()) {
    // The peer opens up to the advertised limit, sometimes several at once.
    const uint64_t allowed = server.advertised_max_streams(kBidi);
    if (next_index < std::min(allowed, kTotal) && rng() % 2 == 0) {
      const uint64_t last = std::min({allowed, kTotal, next_index + 1 + rng() % 8}) - 1;
      ASSERT_TRUE(server.on_peer_stream(make_stream_id(last, Role::kClient, kBidi), begin).ok());
      ASSERT_EQ(begin, make_stream_id(next_index, Role::kClient, kBidi));
      for (uint64_t i = next_index; i <= last; ++i) live.push_back(i);
      next_index = last + 1;
    } else if (!live.empty()) {
      const size_t victim = rng() % live.size();
      live[victim] = live.back();
      live.pop_back();
      server.on_peer_stream_closed(kBidi);
    }
    ASSERT_LE(server.peer_live_count(kBidi), kWindow);
    ASSERT_EQ(server.peer_live_count(kBidi), live.size());
    // One past the limit is refused and opens nothing.
    const uint64_t limit = server.advertised_max_streams(kBidi);
    ASSERT_EQ(server.on_peer_stream(make_stream_id(limit, Role::kClient, kBidi), begin).code,
              TransportErrorCode::kStreamLimitError);
    ASSERT_LE(limit, server.peer_closed_count(kBidi) + kWindow);
    if (server.max_streams_due(kBidi)) {
      const uint64_t value = server.next_max_streams(kBidi);
      ASSERT_EQ(value, server.peer_closed_count(kBidi) + kWindow);
      ASSERT_GE(value - limit, kWindow / 2);
      server.on_max_streams_sent(kBidi, value);
      ++max_streams_frames;
    }
  }
  EXPECT_EQ(server.peer_opened_count(kBidi), kTotal);
  EXPECT_EQ(server.peer_closed_count(kBidi), kTotal);
  EXPECT_EQ(server.advertised_max_streams(kBidi), kTotal + kWindow);
  // One frame per half window freed.
  EXPECT_EQ(max_streams_frames, kTotal / (kWindow / 2));
}

}  // namespace
}  // namespace dpquic::conn
