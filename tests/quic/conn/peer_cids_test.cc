#include "quic/conn/peer_cids.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

using wire::TransportErrorCode;

constexpr uint64_t kNewCidFrameType = 0x18;

// CID bytes derived from the sequence (8 bytes, never zero-length).
struct CidBytes {
  std::array<uint8_t, 8> bytes;
};
CidBytes cid_bytes(uint64_t sequence, uint8_t tag = 0xc0) {
  CidBytes out;
  for (size_t i = 0; i < 8; ++i) out.bytes[i] = static_cast<uint8_t>(sequence >> (8 * (7 - i)));
  out.bytes[0] = tag;
  return out;
}
wire::ConnectionId cid_of(uint64_t sequence, uint8_t tag = 0xc0) {
  const CidBytes bytes = cid_bytes(sequence, tag);
  return wire::ConnectionId(bytes.bytes);
}
wire::StatelessResetToken token_of(uint64_t sequence) {
  wire::StatelessResetToken token;
  for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(sequence * 31 + i);
  return token;
}

// A NEW_CONNECTION_ID frame; its span refers to `storage`.
wire::NewConnectionIdFrame new_cid(uint64_t sequence, uint64_t retire_prior_to, CidBytes& storage) {
  storage = cid_bytes(sequence);
  wire::NewConnectionIdFrame frame;
  frame.sequence_number = sequence;
  frame.retire_prior_to = retire_prior_to;
  frame.connection_id = storage.bytes;
  frame.stateless_reset_token = token_of(sequence);
  return frame;
}

TransportError receive(PeerConnectionIds& cids, uint64_t sequence, uint64_t retire_prior_to) {
  CidBytes storage;
  return cids.on_new_connection_id(new_cid(sequence, retire_prior_to, storage));
}

// Writes every due RETIRE_CONNECTION_ID frame; returns their sequences.
std::vector<uint64_t> drain_retires(PeerConnectionIds& cids) {
  std::vector<uint64_t> sequences;
  while (cids.retire_frame_due()) {
    std::array<uint8_t, 16> buffer{};
    wire::ByteWriter writer(buffer);
    uint64_t sequence = UINT64_MAX;
    EXPECT_TRUE(cids.write_retire_frame(writer, sequence));
    wire::ByteReader reader(writer.written());
    wire::Frame frame;
    EXPECT_EQ(wire::decode_frame(reader, frame), wire::WireError::kOk);
    EXPECT_EQ(frame.type, wire::FrameType::kRetireConnectionId);
    EXPECT_EQ(frame.retire_connection_id.sequence_number, sequence);
    sequences.push_back(sequence);
  }
  return sequences;
}

class PeerCidsTest : public ::testing::Test {
 protected:
  PeerCidsTest() : cids_(4, 16) { cids_.set_initial(cid_of(0)); }
  PeerConnectionIds cids_;
};

TEST_F(PeerCidsTest, InitialIsActive) {
  EXPECT_EQ(cids_.active(), cid_of(0));
  EXPECT_EQ(cids_.active_sequence(), 0u);
  EXPECT_FALSE(cids_.has_unused());
  EXPECT_FALSE(cids_.switch_to_unused());
  EXPECT_FALSE(cids_.retire_frame_due());
  EXPECT_EQ(cids_.held_count(), 1u);
}

TEST_F(PeerCidsTest, ActiveLimit) {
  EXPECT_TRUE(receive(cids_, 1, 0).ok());
  EXPECT_TRUE(receive(cids_, 2, 0).ok());
  EXPECT_TRUE(receive(cids_, 3, 0).ok());
  EXPECT_EQ(cids_.held_count(), 4u);
  const TransportError error = receive(cids_, 4, 0);
  EXPECT_EQ(error.code, TransportErrorCode::kConnectionIdLimitError);
  EXPECT_EQ(error.frame_type, kNewCidFrameType);
}

TEST_F(PeerCidsTest, RetirePriorToMakesRoomBeforeAdding) {
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(receive(cids_, s, 0).ok());
  // Four held; a fifth with Retire Prior To 1 retires sequence 0 first.
  EXPECT_TRUE(receive(cids_, 4, 1).ok());
  EXPECT_EQ(cids_.held_count(), 4u);
  EXPECT_EQ(cids_.active_sequence(), 1u);
  EXPECT_EQ(cids_.active(), cid_of(1));
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0}));
}

TEST_F(PeerCidsTest, RepeatsAndConflicts) {
  CidBytes storage;
  const wire::NewConnectionIdFrame frame = new_cid(1, 0, storage);
  EXPECT_TRUE(cids_.on_new_connection_id(frame).ok());
  // The same frame again (retransmission): fine, nothing changes.
  EXPECT_TRUE(cids_.on_new_connection_id(frame).ok());
  EXPECT_EQ(cids_.held_count(), 2u);

  // Same sequence, another CID.
  CidBytes other_bytes = cid_bytes(1, 0xd0);
  wire::NewConnectionIdFrame other_cid = frame;
  other_cid.connection_id = other_bytes.bytes;
  TransportError error = cids_.on_new_connection_id(other_cid);
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  EXPECT_EQ(error.frame_type, kNewCidFrameType);
  // Same sequence, another token.
  wire::NewConnectionIdFrame other_token = frame;
  other_token.stateless_reset_token[0] ^= 1;
  EXPECT_EQ(cids_.on_new_connection_id(other_token).code, TransportErrorCode::kProtocolViolation);
  // Same CID under another sequence.
  wire::NewConnectionIdFrame other_sequence = frame;
  other_sequence.sequence_number = 2;
  EXPECT_EQ(cids_.on_new_connection_id(other_sequence).code,
            TransportErrorCode::kProtocolViolation);
  // The initial CID re-issued under a new sequence.
  CidBytes initial_bytes = cid_bytes(0);
  wire::NewConnectionIdFrame initial_again = new_cid(5, 0, storage);
  initial_again.connection_id = initial_bytes.bytes;
  EXPECT_EQ(cids_.on_new_connection_id(initial_again).code, TransportErrorCode::kProtocolViolation);
}

TEST_F(PeerCidsTest, FrameEncodingErrors) {
  TransportError error = receive(cids_, 1, 2);  // Retire Prior To > Sequence
  EXPECT_EQ(error.code, TransportErrorCode::kFrameEncodingError);
  EXPECT_EQ(error.frame_type, kNewCidFrameType);
  CidBytes storage;
  wire::NewConnectionIdFrame empty = new_cid(1, 0, storage);
  empty.connection_id = {};
  EXPECT_EQ(cids_.on_new_connection_id(empty).code, TransportErrorCode::kFrameEncodingError);
  std::array<uint8_t, 21> long_cid{};
  wire::NewConnectionIdFrame too_long = new_cid(1, 0, storage);
  too_long.connection_id = long_cid;
  EXPECT_EQ(cids_.on_new_connection_id(too_long).code, TransportErrorCode::kFrameEncodingError);
  EXPECT_EQ(cids_.held_count(), 1u);
}

TEST(PeerCids, ZeroLengthActiveRejectsNewConnectionId) {
  PeerConnectionIds cids;
  cids.set_initial(wire::ConnectionId{});
  const TransportError error = receive(cids, 1, 0);
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  EXPECT_EQ(error.frame_type, kNewCidFrameType);
}

TEST_F(PeerCidsTest, RetirePriorToJumpSwitchesActive) {
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(receive(cids_, s, 0).ok());
  ASSERT_TRUE(cids_.switch_to_unused());  // now on 1, 0 retired
  EXPECT_EQ(cids_.active_sequence(), 1u);
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0}));

  // Retire Prior To 3: 1 (active) and 2 go; 3 becomes active; 4 added.
  EXPECT_TRUE(receive(cids_, 4, 3).ok());
  EXPECT_EQ(cids_.active_sequence(), 3u);
  EXPECT_EQ(cids_.active(), cid_of(3));
  EXPECT_EQ(cids_.held_count(), 2u);
  std::vector<uint64_t> retired = drain_retires(cids_);
  std::sort(retired.begin(), retired.end());
  EXPECT_EQ(retired, (std::vector<uint64_t>{1, 2}));

  // A big jump: everything held is retired; the new CID becomes active and
  // nothing is done for the never-seen sequences in between.
  EXPECT_TRUE(receive(cids_, 1'000'000, 1'000'000).ok());
  EXPECT_EQ(cids_.active_sequence(), 1'000'000u);
  EXPECT_EQ(cids_.held_count(), 1u);
  retired = drain_retires(cids_);
  std::sort(retired.begin(), retired.end());
  EXPECT_EQ(retired, (std::vector<uint64_t>{3, 4}));
}

TEST_F(PeerCidsTest, LateSequenceBelowRetirePriorToRetiredAtOnce) {
  // Sequence 3 (Retire Prior To 2) arrives before sequences 1 and 2.
  EXPECT_TRUE(receive(cids_, 3, 2).ok());
  EXPECT_EQ(cids_.active_sequence(), 3u);
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0}));
  EXPECT_TRUE(receive(cids_, 1, 0).ok());
  EXPECT_EQ(cids_.held_count(), 1u);  // not added
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{1}));
  // Retransmitted again: already retired, not retired twice.
  EXPECT_TRUE(receive(cids_, 1, 0).ok());
  EXPECT_FALSE(cids_.retire_frame_due());
  EXPECT_EQ(cids_.pending_retire_count(), 2u);  // 0 and 1 in flight
  // Sequence 2 is not below Retire Prior To 2: kept.
  EXPECT_TRUE(receive(cids_, 2, 0).ok());
  EXPECT_EQ(cids_.held_count(), 2u);
  EXPECT_TRUE(cids_.has_unused());
  EXPECT_FALSE(cids_.retire_frame_due());
}

TEST_F(PeerCidsTest, RetiredSequenceRetransmittedIsNotReused) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  ASSERT_TRUE(receive(cids_, 2, 0).ok());
  ASSERT_TRUE(cids_.switch_to_unused());  // 0 retired, on 1
  ASSERT_TRUE(cids_.switch_to_unused());  // 1 retired, on 2
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0, 1}));
  cids_.on_retire_frame_acked(0);
  cids_.on_retire_frame_acked(1);
  EXPECT_EQ(cids_.pending_retire_count(), 0u);
  // The peer resends sequence 1's frame: it must not come back as unused.
  EXPECT_TRUE(receive(cids_, 1, 0).ok());
  EXPECT_FALSE(cids_.has_unused());
  EXPECT_EQ(cids_.held_count(), 1u);
}

TEST_F(PeerCidsTest, RetireFrameLossAndAck) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  ASSERT_TRUE(cids_.switch_to_unused());
  std::array<uint8_t, 2> buffer{};
  wire::ByteWriter writer(buffer);
  uint64_t sequence = 99;
  ASSERT_TRUE(cids_.write_retire_frame(writer, sequence));
  EXPECT_EQ(sequence, 0u);
  EXPECT_EQ(buffer[0], 0x19);
  EXPECT_EQ(buffer[1], 0x00);
  EXPECT_FALSE(cids_.retire_frame_due());
  cids_.on_retire_frame_lost(0);
  EXPECT_TRUE(cids_.retire_frame_due());
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0}));
  cids_.on_retire_frame_acked(0);
  EXPECT_EQ(cids_.pending_retire_count(), 0u);
  cids_.on_retire_frame_lost(0);  // late loss report after the ack: nothing
  EXPECT_FALSE(cids_.retire_frame_due());

  // A frame that does not fit stays queued.
  ASSERT_TRUE(receive(cids_, 2, 0).ok());
  ASSERT_TRUE(cids_.switch_to_unused());
  std::array<uint8_t, 1> tiny{};
  wire::ByteWriter small(tiny);
  EXPECT_FALSE(cids_.write_retire_frame(small, sequence));
  EXPECT_EQ(small.position(), 0u);
  EXPECT_TRUE(cids_.retire_frame_due());
}

// quiche CVE-2024-1410: a peer keeps raising Retire Prior To and never
// acknowledges our RETIRE_CONNECTION_ID frames.
TEST(PeerCids, HostileRetirePriorToIsBounded) {
  enum class Mode { kNeverWritten, kWrittenNeverAcked, kWrittenAndLost };
  for (const Mode mode : {Mode::kNeverWritten, Mode::kWrittenNeverAcked, Mode::kWrittenAndLost}) {
    PeerConnectionIds cids(4, 16);
    cids.set_initial(cid_of(0));
    ASSERT_EQ(cids.retire_bound(), 16u);
    TransportError error;
    uint64_t failed_at = 0;
    for (uint64_t i = 1; i <= 10'000; ++i) {
      error = receive(cids, i, i);
      ASSERT_LE(cids.pending_retire_count(), 16u);
      ASSERT_LE(cids.held_count(), 4u);
      if (error) {
        failed_at = i;
        break;
      }
      if (mode != Mode::kNeverWritten) {
        for (const uint64_t sequence : drain_retires(cids)) {
          if (mode == Mode::kWrittenAndLost) cids.on_retire_frame_lost(sequence);
        }
      }
    }
    // Frame i retires sequence i - 1: the 17th unacknowledged retirement is
    // refused.
    EXPECT_EQ(error.code, TransportErrorCode::kConnectionIdLimitError);
    EXPECT_EQ(error.frame_type, kNewCidFrameType);
    EXPECT_EQ(failed_at, 17u);
    EXPECT_EQ(cids.pending_retire_count(), 16u);
  }
}

TEST(PeerCids, HonestRotationNeverHitsTheBound) {
  PeerConnectionIds cids(4, 16);
  cids.set_initial(cid_of(0));
  for (uint64_t i = 1; i <= 10'000; ++i) {
    ASSERT_TRUE(receive(cids, i, i).ok()) << i;
    for (const uint64_t sequence : drain_retires(cids)) cids.on_retire_frame_acked(sequence);
    ASSERT_EQ(cids.active_sequence(), i);
  }
  EXPECT_EQ(cids.pending_retire_count(), 0u);
}

TEST(PeerCids, HostileLowSequencesBounded) {
  // After Retire Prior To 100000, a flood of fresh low sequences, each of
  // which must be retired at once.
  PeerConnectionIds cids(4, 16);
  cids.set_initial(cid_of(0));
  ASSERT_TRUE(receive(cids, 100'000, 100'000).ok());
  TransportError error;
  uint64_t sequence = 99'999;
  for (; sequence > 0; --sequence) {
    error = receive(cids, sequence, 0);
    ASSERT_LE(cids.pending_retire_count(), 16u);
    if (error) break;
  }
  EXPECT_EQ(error.code, TransportErrorCode::kConnectionIdLimitError);
  // 0 plus 15 fresh ones fill the bound; the 16th fresh one fails.
  EXPECT_EQ(sequence, 99'999u - 15);
}

TEST(PeerCids, RetireBoundIsAtLeastTwiceTheLimit) {
  PeerConnectionIds cids(8, 4);
  EXPECT_EQ(cids.active_limit(), 8u);
  EXPECT_EQ(cids.retire_bound(), 16u);
  PeerConnectionIds tiny(0, 0);
  EXPECT_EQ(tiny.active_limit(), 2u);
  EXPECT_EQ(tiny.retire_bound(), 4u);
}

TEST_F(PeerCidsTest, SwitchToUnused) {
  ASSERT_TRUE(receive(cids_, 2, 0).ok());
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  EXPECT_TRUE(cids_.has_unused());
  ASSERT_TRUE(cids_.switch_to_unused());
  EXPECT_EQ(cids_.active_sequence(), 1u);  // lowest unused first
  ASSERT_TRUE(cids_.switch_to_unused());
  EXPECT_EQ(cids_.active_sequence(), 2u);
  EXPECT_FALSE(cids_.has_unused());
  EXPECT_FALSE(cids_.switch_to_unused());
  EXPECT_EQ(cids_.active_sequence(), 2u);
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0, 1}));
}

TEST_F(PeerCidsTest, StatelessResetDetection) {
  const wire::StatelessResetToken server_token = token_of(1000);
  cids_.set_initial_reset_token(server_token);
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  EXPECT_TRUE(cids_.is_stateless_reset(server_token));
  // Sequence 1 is not used yet: its token must not be checked (§10.3.1).
  EXPECT_FALSE(cids_.is_stateless_reset(token_of(1)));
  wire::StatelessResetToken near = server_token;
  near[15] ^= 0x80;
  EXPECT_FALSE(cids_.is_stateless_reset(near));
  EXPECT_FALSE(cids_.is_stateless_reset(std::span<const uint8_t>(server_token.data(), 15)));

  ASSERT_TRUE(cids_.switch_to_unused());
  EXPECT_TRUE(cids_.is_stateless_reset(token_of(1)));
  // Sequence 0 is retired now: its token no longer counts.
  EXPECT_FALSE(cids_.is_stateless_reset(server_token));
}

TEST(PeerCids, ClientSideWithoutTokenHasNoReset) {
  PeerConnectionIds cids;
  cids.set_initial(cid_of(0));
  EXPECT_FALSE(cids.is_stateless_reset(wire::StatelessResetToken{}));
}

TEST(PeerCids, PreferredAddressIsSequenceOne) {
  PeerConnectionIds cids(2, 16);
  cids.set_initial(cid_of(0));
  cids.add_preferred_address_cid(cid_of(1, 0xee), token_of(1));
  EXPECT_EQ(cids.held_count(), 2u);
  EXPECT_TRUE(cids.has_unused());
  // The same sequence 1 again in a NEW_CONNECTION_ID with another CID.
  EXPECT_EQ(receive(cids, 1, 0).code, TransportErrorCode::kProtocolViolation);
  // Limit 2 is full.
  EXPECT_EQ(receive(cids, 2, 0).code, TransportErrorCode::kConnectionIdLimitError);
  ASSERT_TRUE(cids.switch_to_unused());
  EXPECT_EQ(cids.active(), cid_of(1, 0xee));
  EXPECT_TRUE(cids.is_stateless_reset(token_of(1)));
}

TEST(PeerCids, SetInitialAgainReplacesSequenceZero) {
  PeerConnectionIds cids;
  cids.set_initial(cid_of(0, 0x11));
  cids.set_initial(cid_of(0, 0x22));
  EXPECT_EQ(cids.active(), cid_of(0, 0x22));
  EXPECT_EQ(cids.held_count(), 1u);
}

// --- Per-path CIDs (RFC 9000 §9.5) ------------------------------------------

TEST_F(PeerCidsTest, ClaimUnusedHandsOutEachCidOnceLowestFirst) {
  EXPECT_FALSE(cids_.claim_unused().has_value());  // only the active one
  ASSERT_TRUE(receive(cids_, 2, 0).ok());
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  const auto first = cids_.claim_unused();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_EQ(first->cid, cid_of(1));
  const auto second = cids_.claim_unused();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->sequence, 2u);
  EXPECT_EQ(second->cid, cid_of(2));
  EXPECT_FALSE(cids_.claim_unused().has_value());
  EXPECT_FALSE(cids_.has_unused());
  // Claiming changes neither the active CID nor what is held.
  EXPECT_EQ(cids_.active_sequence(), 0u);
  EXPECT_EQ(cids_.held_count(), 3u);
  EXPECT_FALSE(cids_.retire_frame_due());
}

TEST_F(PeerCidsTest, CidForResolvesHeldSequencesOnly) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  ASSERT_NE(cids_.cid_for(0), nullptr);
  EXPECT_EQ(*cids_.cid_for(0), cid_of(0));
  ASSERT_NE(cids_.cid_for(1), nullptr);
  EXPECT_EQ(*cids_.cid_for(1), cid_of(1));
  EXPECT_EQ(cids_.cid_for(2), nullptr);  // never received
  ASSERT_TRUE(receive(cids_, 2, 1).ok());
  EXPECT_EQ(cids_.cid_for(0), nullptr);  // retired by Retire Prior To
}

TEST_F(PeerCidsTest, ClaimedCidsResetTokensCount) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  const wire::StatelessResetToken token = token_of(1);
  EXPECT_FALSE(cids_.is_stateless_reset(token));  // not used yet (§10.3.1)
  ASSERT_TRUE(cids_.claim_unused().has_value());
  EXPECT_TRUE(cids_.is_stateless_reset(token));
}

TEST_F(PeerCidsTest, RetireQueuesTheFrameButNeverTheActiveCid) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  ASSERT_TRUE(receive(cids_, 2, 0).ok());
  ASSERT_EQ(cids_.claim_unused()->sequence, 1u);
  EXPECT_FALSE(cids_.retire(0));  // the active one
  EXPECT_FALSE(cids_.retire(7));  // not held
  EXPECT_FALSE(cids_.retire_frame_due());
  EXPECT_TRUE(cids_.retire(1));
  EXPECT_EQ(cids_.cid_for(1), nullptr);
  EXPECT_FALSE(cids_.retire(1));  // once
  EXPECT_EQ(cids_.held_count(), 2u);
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{1}));
  // An unused CID may be retired too; the retired ones are never handed out.
  EXPECT_TRUE(cids_.retire(2));
  EXPECT_FALSE(cids_.claim_unused().has_value());
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{2}));
}

TEST_F(PeerCidsTest, SetActiveFollowsTheActivePath) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  ASSERT_EQ(cids_.claim_unused()->sequence, 1u);
  EXPECT_FALSE(cids_.set_active(5));
  EXPECT_EQ(cids_.active_sequence(), 0u);
  ASSERT_TRUE(cids_.set_active(1));
  EXPECT_EQ(cids_.active(), cid_of(1));
  // The old path's CID may now be retired; the new active one may not.
  EXPECT_FALSE(cids_.retire(1));
  EXPECT_TRUE(cids_.retire(0));
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0}));
}

TEST_F(PeerCidsTest, RetirePriorToPrefersAnUnusedCidForTheActivePath) {
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(receive(cids_, s, 0).ok());
  // Sequence 2 is another path's; 1 and 3 unused. Retiring 0 and 1 moves
  // the active CID to 3, not to the lower 2 another path sends with.
  ASSERT_EQ(cids_.claim_unused()->sequence, 1u);
  ASSERT_EQ(cids_.claim_unused()->sequence, 2u);
  ASSERT_TRUE(cids_.retire(1));
  ASSERT_EQ(drain_retires(cids_), (std::vector<uint64_t>{1}));
  ASSERT_TRUE(receive(cids_, 4, 1).ok());  // retires 0
  EXPECT_EQ(cids_.active_sequence(), 3u);
  EXPECT_NE(cids_.cid_for(2), nullptr);
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0}));
  ASSERT_EQ(cids_.claim_unused()->sequence, 4u);
  ASSERT_TRUE(receive(cids_, 5, 4).ok());  // retires 2 and 3 (active)
  EXPECT_EQ(cids_.active_sequence(), 5u);  // 5 is unused: preferred to 4
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{2, 3}));
}

TEST_F(PeerCidsTest, RetirePriorToFallsBackToTheLowestHeldWhenNoneIsUnused) {
  ASSERT_TRUE(receive(cids_, 1, 0).ok());
  ASSERT_TRUE(receive(cids_, 2, 0).ok());
  ASSERT_EQ(cids_.claim_unused()->sequence, 1u);
  ASSERT_EQ(cids_.claim_unused()->sequence, 2u);
  // Sequence 2 again, now with Retire Prior To 2: 0 (active) and 1 go, and
  // the only CID left is 2, which another path uses. It becomes the active
  // one anyway (the connection then drops the other path).
  ASSERT_TRUE(receive(cids_, 2, 2).ok());
  EXPECT_EQ(cids_.active_sequence(), 2u);
  EXPECT_EQ(cids_.held_count(), 1u);
  EXPECT_EQ(drain_retires(cids_), (std::vector<uint64_t>{0, 1}));
}

TEST_F(PeerCidsTest, RetireStopsAtTheRetirementBound) {
  PeerConnectionIds cids(2, 4);  // bound raised to 2 * 2 = 4
  cids.set_initial(cid_of(0));
  ASSERT_EQ(cids.retire_bound(), 4u);
  uint64_t next = 1;
  // Four retirements, never acknowledged.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(receive(cids, next, 0).ok());
    ASSERT_EQ(cids.claim_unused()->sequence, next);
    ASSERT_TRUE(cids.retire(next));
    ++next;
  }
  EXPECT_EQ(cids.pending_retire_count(), 4u);
  ASSERT_TRUE(receive(cids, next, 0).ok());
  ASSERT_EQ(cids.claim_unused()->sequence, next);
  EXPECT_FALSE(cids.retire(next));  // stays held and used
  EXPECT_NE(cids.cid_for(next), nullptr);
  EXPECT_FALSE(cids.claim_unused().has_value());
  EXPECT_EQ(cids.pending_retire_count(), 4u);
}

TEST(PeerCids, SteadyStateAllocatesNothing) {
  PeerConnectionIds cids(4, 16);
  cids.set_initial(cid_of(0));
  std::array<uint8_t, 16> buffer{};
  testing::AllocationWindow window;
  for (uint64_t i = 1; i <= 2000; ++i) {
    CidBytes storage;
    ASSERT_TRUE(cids.on_new_connection_id(new_cid(i, i - 1, storage)).ok());
    if (i % 3 == 0) {
      ASSERT_TRUE(cids.switch_to_unused());
    } else if (i % 3 == 1) {
      // A path claims a CID and is abandoned.
      const auto claimed = cids.claim_unused();
      ASSERT_TRUE(claimed.has_value());
      ASSERT_NE(cids.cid_for(claimed->sequence), nullptr);
      ASSERT_TRUE(cids.retire(claimed->sequence));
    }
    while (cids.retire_frame_due()) {
      wire::ByteWriter writer(buffer);
      uint64_t sequence = 0;
      ASSERT_TRUE(cids.write_retire_frame(writer, sequence));
      cids.on_retire_frame_acked(sequence);
    }
    (void)cids.is_stateless_reset(buffer);
  }
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace dpquic::conn
