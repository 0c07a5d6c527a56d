// Attack: an unbounded PATH_CHALLENGE queue (CVE-2023-6193, quiche). Each
// PATH_CHALLENGE obliges a PATH_RESPONSE; a peer that floods challenges
// faster than the answers can leave (here: while the victim never gets to
// transmit) made the victim queue one response per challenge without bound.
// Our server keeps at most PathTable::kMaxPendingResponses (4) responses,
// the newest, and allocates nothing for the flood. A flood is not a protocol
// error, so the connection stays up.

#include <gtest/gtest.h>

#include <array>
#include <set>

#include "tests/quic/attacks/forged_peer.h"

namespace dpquic::attacks {
namespace {

using wire::FrameType;

constexpr size_t kMaxPendingResponses = 4;  // PathTable::kMaxPendingResponses
constexpr size_t kChallengesPerPacket = 150;
constexpr size_t kPackets = 40;  // 6000 challenges

std::array<uint8_t, 8> challenge_bytes(uint64_t value) {
  return path_challenge_frame(value).path_challenge.data;
}

TEST(PathChallengeFloodTest, QueuedResponsesStayAtFourAndNothingIsAllocated) {
  ForgedPeer peer(Side::kClient);
  ASSERT_NO_FATAL_FAILURE(peer.establish());
  // Warm-up: one challenge answered, so lazily sized state exists.
  FrameBuffer frames(1400);
  ASSERT_TRUE(frames.add(path_challenge_frame(1)));
  peer.send(frames);
  ASSERT_EQ(peer.count_frames(FrameType::kPathResponse), 1u);
  const size_t responses_before = peer.count_frames(FrameType::kPathResponse);
  const size_t packets_before = peer.received().size();

  // The flood arrives while the victim does not transmit.
  peer.set_collect(false);
  peer.reset_victim_allocations();
  uint64_t value = 1000;
  for (size_t p = 0; p < kPackets; ++p) {
    frames.clear();
    for (size_t i = 0; i < kChallengesPerPacket; ++i) {
      ASSERT_TRUE(frames.add(path_challenge_frame(value++)));
    }
    peer.send(frames);
  }
  EXPECT_EQ(peer.victim_allocations(), 0u) << "the flood grew the victim's state";
  peer.flush();

  // At most four responses went out, answering the last four challenges.
  std::set<std::array<uint8_t, 8>> answered;
  for (size_t i = packets_before; i < peer.received().size(); ++i) {
    for (const wire::Frame& frame : peer.received()[i].frames()) {
      if (frame.type == FrameType::kPathResponse) answered.insert(frame.path_response.data);
    }
  }
  EXPECT_EQ(peer.count_frames(FrameType::kPathResponse) - responses_before, kMaxPendingResponses);
  const std::set<std::array<uint8_t, 8>> newest = {
      challenge_bytes(value - 4), challenge_bytes(value - 3), challenge_bytes(value - 2),
      challenge_bytes(value - 1)};
  EXPECT_EQ(answered, newest);

  // A flood the victim answers as it arrives: never more than four answers
  // per datagram, still no allocation, and no close (not a protocol error).
  peer.set_collect(true);
  peer.reset_victim_allocations();
  for (size_t p = 0; p < kPackets; ++p) {
    frames.clear();
    for (size_t i = 0; i < kChallengesPerPacket; ++i) {
      ASSERT_TRUE(frames.add(path_challenge_frame(value++)));
    }
    const size_t before = peer.count_frames(FrameType::kPathResponse);
    peer.send(frames);
    EXPECT_LE(peer.count_frames(FrameType::kPathResponse) - before, kMaxPendingResponses);
  }
  EXPECT_EQ(peer.victim_allocations(), 0u);
  EXPECT_FALSE(peer.close().has_value());
  ASSERT_NE(peer.victim(), nullptr);
  EXPECT_TRUE(peer.victim()->is_established());
}

// The same flood from a forged server against our client.
TEST(PathChallengeFloodTest, AClientVictimAlsoKeepsFourResponses) {
  ForgedPeer peer(Side::kServer);
  ASSERT_NO_FATAL_FAILURE(peer.establish());
  FrameBuffer frames(1400);
  peer.set_collect(false);
  peer.reset_victim_allocations();
  uint64_t value = 1;
  for (size_t p = 0; p < kPackets; ++p) {
    frames.clear();
    for (size_t i = 0; i < kChallengesPerPacket; ++i) {
      ASSERT_TRUE(frames.add(path_challenge_frame(value++)));
    }
    peer.send(frames);
  }
  EXPECT_EQ(peer.victim_allocations(), 0u);
  peer.flush();
  EXPECT_EQ(peer.count_frames(FrameType::kPathResponse), kMaxPendingResponses);
  EXPECT_FALSE(peer.close().has_value());
  ASSERT_NE(peer.victim(), nullptr);
  EXPECT_TRUE(peer.victim()->is_established());
}

}  // namespace
}  // namespace dpquic::attacks
