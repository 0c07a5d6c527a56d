#include "quic/conn/local_cids.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "crypto/tokens.h"
#include "quic/conn/cid_generator.h"
#include "quic/conn/random.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

using wire::TransportErrorCode;

constexpr uint64_t kRetireFrameType = 0x19;

// A registry with fixed storage (so it allocates nothing itself) that logs
// every call and can refuse registrations.
class FakeRegistry : public CidRegistry {
 public:
  static constexpr size_t kCapacity = 64;

  bool register_cid(const wire::ConnectionId& cid) override {
    ++register_calls;
    if (refuse_next > 0) {
      --refuse_next;
      return false;
    }
    if (contains(cid) || count == capacity) return false;
    cids[count++] = cid;
    return true;
  }
  void unregister_cid(const wire::ConnectionId& cid) override {
    ++unregister_calls;
    for (size_t i = 0; i < count; ++i) {
      if (cids[i] == cid) {
        cids[i] = cids[--count];
        return;
      }
    }
    ++unknown_unregisters;
  }
  bool contains(const wire::ConnectionId& cid) const {
    for (size_t i = 0; i < count; ++i) {
      if (cids[i] == cid) return true;
    }
    return false;
  }

  std::array<wire::ConnectionId, kCapacity> cids{};
  size_t count = 0;
  size_t capacity = kCapacity;
  int refuse_next = 0;
  int register_calls = 0;
  int unregister_calls = 0;
  int unknown_unregisters = 0;
};

const std::vector<uint8_t> kResetKey(32, 0x42);

struct DecodedNewCid {
  uint64_t sequence;
  uint64_t retire_prior_to;
  wire::ConnectionId cid;
  wire::StatelessResetToken token;
};

// Writes one NEW_CONNECTION_ID frame and decodes it back.
DecodedNewCid write_one(LocalConnectionIds& cids) {
  std::array<uint8_t, 64> buffer{};
  wire::ByteWriter writer(buffer);
  uint64_t sequence = UINT64_MAX;
  EXPECT_TRUE(cids.write_new_cid_frame(writer, sequence));
  wire::ByteReader reader(writer.written());
  wire::Frame frame;
  EXPECT_EQ(wire::decode_frame(reader, frame), wire::WireError::kOk);
  EXPECT_TRUE(reader.empty());
  EXPECT_EQ(frame.type, wire::FrameType::kNewConnectionId);
  EXPECT_EQ(frame.new_connection_id.sequence_number, sequence);
  return {frame.new_connection_id.sequence_number, frame.new_connection_id.retire_prior_to,
          wire::ConnectionId(frame.new_connection_id.connection_id),
          frame.new_connection_id.stateless_reset_token};
}

class LocalCidsTest : public ::testing::Test {
 protected:
  LocalCidsTest() : generator_(make_layout(), 7, random_), tokens_(kResetKey) {}

  static CidLayout make_layout() {
    CidLayout layout;
    layout.server_id = {0x01, 0x02};
    layout.cid_length = 12;
    return layout;
  }

  RandomSource random_;
  CidGenerator generator_;
  crypto::StatelessResetTokens tokens_;
  FakeRegistry registry_;
};

TEST_F(LocalCidsTest, InitialIsRegisteredAsSequenceZero) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  const wire::ConnectionId initial = generator_.generate();
  cids.set_initial(initial);
  EXPECT_TRUE(cids.initial_registered());
  EXPECT_TRUE(registry_.contains(initial));
  EXPECT_EQ(cids.active_count(), 1u);
  EXPECT_EQ(cids.any_active(), initial);
  EXPECT_EQ(cids.next_sequence(), 1u);
  EXPECT_FALSE(cids.new_cid_frame_due());  // sequence 0 travels in the handshake
}

TEST_F(LocalCidsTest, IssuesMinOfPeerLimitAndCap) {
  struct Case {
    uint64_t peer_limit;
    size_t cap;
    size_t expected_active;
  };
  for (const Case c : {Case{2, 8, 2}, Case{4, 8, 4}, Case{8, 8, 8}, Case{100, 8, 8}, Case{3, 2, 2},
                       Case{UINT64_MAX, 5, 5}}) {
    FakeRegistry registry;
    LocalConnectionIds cids(&generator_, &tokens_, registry, c.cap);
    const wire::ConnectionId initial = generator_.generate();
    cids.set_initial(initial);
    cids.on_peer_limit(c.peer_limit);
    EXPECT_EQ(cids.active_count(), c.expected_active) << c.peer_limit << " " << c.cap;
    EXPECT_EQ(registry.count, c.expected_active);
    EXPECT_EQ(registry.register_calls, static_cast<int>(c.expected_active));

    // One NEW_CONNECTION_ID per issued CID, sequences 1.. in order, each CID
    // registered, in our layout, with its keyed reset token.
    for (uint64_t sequence = 1; sequence < c.expected_active; ++sequence) {
      ASSERT_TRUE(cids.new_cid_frame_due());
      const DecodedNewCid frame = write_one(cids);
      EXPECT_EQ(frame.sequence, sequence);
      EXPECT_EQ(frame.retire_prior_to, 0u);
      EXPECT_EQ(frame.cid.size(), 12u);
      EXPECT_TRUE(registry.contains(frame.cid));
      EXPECT_NE(frame.cid, initial);
      EXPECT_EQ(CidGenerator::core_of(frame.cid.span(), generator_.layout()),
                std::optional<uint8_t>(7));
      EXPECT_EQ(frame.token, tokens_.token_for(frame.cid));
    }
    EXPECT_FALSE(cids.new_cid_frame_due());
    std::array<uint8_t, 64> buffer{};
    wire::ByteWriter writer(buffer);
    uint64_t sequence = 0;
    EXPECT_FALSE(cids.write_new_cid_frame(writer, sequence));
    EXPECT_EQ(writer.position(), 0u);
  }
}

TEST_F(LocalCidsTest, RetireIssuesReplacement) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_, 8);
  const wire::ConnectionId initial = generator_.generate();
  cids.set_initial(initial);
  cids.on_peer_limit(3);
  const DecodedNewCid one = write_one(cids);
  const DecodedNewCid two = write_one(cids);
  ASSERT_EQ(cids.active_count(), 3u);

  // The peer retires sequence 0 in a packet sent to sequence 2's CID.
  EXPECT_TRUE(cids.on_retire(0, two.cid.span()).ok());
  EXPECT_FALSE(registry_.contains(initial));
  EXPECT_EQ(registry_.unregister_calls, 1);
  EXPECT_EQ(cids.active_count(), 3u);
  ASSERT_TRUE(cids.new_cid_frame_due());
  const DecodedNewCid three = write_one(cids);
  EXPECT_EQ(three.sequence, 3u);
  EXPECT_TRUE(registry_.contains(three.cid));
  EXPECT_EQ(registry_.register_calls, 4);

  // A repeated RETIRE_CONNECTION_ID (retransmission) changes nothing.
  EXPECT_TRUE(cids.on_retire(0, two.cid.span()).ok());
  EXPECT_EQ(registry_.unregister_calls, 1);
  EXPECT_FALSE(cids.new_cid_frame_due());

  EXPECT_TRUE(cids.on_retire(1, two.cid.span()).ok());
  EXPECT_FALSE(registry_.contains(one.cid));
  EXPECT_EQ(write_one(cids).sequence, 4u);
  EXPECT_EQ(registry_.unknown_unregisters, 0);
}

TEST_F(LocalCidsTest, RetireErrors) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  const wire::ConnectionId initial = generator_.generate();
  cids.set_initial(initial);
  cids.on_peer_limit(2);
  const DecodedNewCid one = write_one(cids);

  // Never issued.
  TransportError error = cids.on_retire(2, initial.span());
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  EXPECT_EQ(error.frame_type, kRetireFrameType);
  error = cids.on_retire(UINT64_MAX, initial.span());
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  // Names the CID the packet was sent to.
  error = cids.on_retire(1, one.cid.span());
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  EXPECT_EQ(error.frame_type, kRetireFrameType);
  error = cids.on_retire(0, initial.span());
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  // None of that touched the registry.
  EXPECT_EQ(registry_.unregister_calls, 0);
  EXPECT_EQ(cids.active_count(), 2u);
}

TEST_F(LocalCidsTest, ZeroLengthCidsIssueNothingAndRejectRetire) {
  LocalConnectionIds cids(nullptr, nullptr, registry_);
  cids.set_initial(wire::ConnectionId{});
  cids.on_peer_limit(8);
  EXPECT_EQ(cids.active_count(), 0u);
  EXPECT_EQ(registry_.register_calls, 0);
  EXPECT_FALSE(cids.new_cid_frame_due());
  EXPECT_EQ(cids.on_retire(0, {}).code, TransportErrorCode::kProtocolViolation);
  EXPECT_TRUE(cids.any_active().empty());
}

TEST_F(LocalCidsTest, ClientWithoutGeneratorUsesRandomCidsOfInitialLength) {
  LocalConnectionIds cids(nullptr, nullptr, registry_, 4);
  const std::vector<uint8_t> bytes = {9, 8, 7, 6, 5, 4, 3, 2, 1};
  const wire::ConnectionId initial(bytes);
  cids.set_initial(initial);
  cids.on_peer_limit(4);
  ASSERT_EQ(cids.active_count(), 4u);
  std::vector<wire::ConnectionId> seen = {initial};
  for (int i = 0; i < 3; ++i) {
    const DecodedNewCid frame = write_one(cids);
    EXPECT_EQ(frame.cid.size(), 9u);
    for (const auto& other : seen) EXPECT_NE(frame.cid, other);
    seen.push_back(frame.cid);
    // Random tokens: not all zero, and differing between CIDs.
    EXPECT_NE(frame.token, wire::StatelessResetToken{});
  }
}

TEST_F(LocalCidsTest, RegistryCollisionRetriesAndFullTableStops) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  cids.set_initial(generator_.generate());
  // Two collisions, then success: one CID issued after three calls.
  registry_.refuse_next = 2;
  cids.on_peer_limit(2);
  EXPECT_EQ(cids.active_count(), 2u);
  EXPECT_EQ(registry_.register_calls, 1 + 3);
  EXPECT_EQ(write_one(cids).sequence, 1u);  // failed attempts use no sequence

  // A full table: issuing stops without consuming sequence numbers.
  FakeRegistry full;
  full.capacity = 3;
  LocalConnectionIds limited(&generator_, &tokens_, full);
  limited.set_initial(generator_.generate());
  limited.on_peer_limit(8);
  EXPECT_EQ(limited.active_count(), 3u);
  EXPECT_EQ(limited.next_sequence(), 3u);
  EXPECT_EQ(full.register_calls,
            3 + LocalConnectionIds::kRegisterAttempts);  // the 4th CID gave up

  // A refused initial is reported and nothing more is issued.
  FakeRegistry refusing;
  refusing.refuse_next = 1;
  LocalConnectionIds refused(&generator_, &tokens_, refusing);
  refused.set_initial(generator_.generate());
  EXPECT_FALSE(refused.initial_registered());
  refused.on_peer_limit(4);
  EXPECT_EQ(refused.active_count(), 0u);
}

TEST_F(LocalCidsTest, LostFrameRequeuedOnlyWhileActive) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  const wire::ConnectionId initial = generator_.generate();
  cids.set_initial(initial);
  cids.on_peer_limit(3);
  const DecodedNewCid one = write_one(cids);
  const DecodedNewCid two = write_one(cids);
  EXPECT_FALSE(cids.new_cid_frame_due());

  cids.on_new_cid_frame_lost(2);
  ASSERT_TRUE(cids.new_cid_frame_due());
  const DecodedNewCid again = write_one(cids);
  EXPECT_EQ(again.sequence, 2u);
  EXPECT_EQ(again.cid, two.cid);
  EXPECT_EQ(again.token, two.token);

  // Retired meanwhile: a loss does not resurrect it.
  ASSERT_TRUE(cids.on_retire(1, initial.span()).ok());
  (void)write_one(cids);  // the replacement, sequence 3
  cids.on_new_cid_frame_lost(1);
  EXPECT_FALSE(cids.new_cid_frame_due());
  // Sequence 0 was never in a frame.
  cids.on_new_cid_frame_lost(0);
  EXPECT_FALSE(cids.new_cid_frame_due());
  (void)one;
}

TEST_F(LocalCidsTest, FrameThatDoesNotFitStaysQueued) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  cids.set_initial(generator_.generate());
  cids.on_peer_limit(2);
  // 1 type + 1 seq + 1 rpt + 1 len + 12 CID + 16 token = 32 bytes.
  std::array<uint8_t, 31> small{};
  wire::ByteWriter writer(small);
  uint64_t sequence = 0;
  EXPECT_FALSE(cids.write_new_cid_frame(writer, sequence));
  EXPECT_EQ(writer.position(), 0u);
  EXPECT_TRUE(cids.new_cid_frame_due());
  std::array<uint8_t, 32> exact{};
  wire::ByteWriter fits(exact);
  EXPECT_TRUE(cids.write_new_cid_frame(fits, sequence));
  EXPECT_EQ(fits.position(), 32u);
  EXPECT_EQ(exact[0], 0x18);
  EXPECT_EQ(exact[1], 0x01);
  EXPECT_EQ(exact[2], 0x00);
  EXPECT_EQ(exact[3], 12);
}

TEST_F(LocalCidsTest, UnregisterAllMatchesRegistrations) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  cids.set_initial(generator_.generate());
  cids.on_peer_limit(6);
  ASSERT_EQ(registry_.count, 6u);
  cids.unregister_all();
  EXPECT_EQ(registry_.count, 0u);
  EXPECT_EQ(registry_.unregister_calls, 6);
  EXPECT_EQ(registry_.unknown_unregisters, 0);
  EXPECT_EQ(cids.active_count(), 0u);
  EXPECT_TRUE(cids.any_active().empty());
  // Closed: nothing is issued again.
  cids.on_peer_limit(8);
  EXPECT_EQ(registry_.count, 0u);
  EXPECT_FALSE(cids.new_cid_frame_due());
}

TEST_F(LocalCidsTest, PreferredAddressIsSequenceOne) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_, 4);
  const wire::ConnectionId initial = generator_.generate();
  EXPECT_FALSE(cids.issue_for_preferred_address().has_value());  // before set_initial
  cids.set_initial(initial);
  const auto preferred = cids.issue_for_preferred_address();
  ASSERT_TRUE(preferred.has_value());
  EXPECT_TRUE(registry_.contains(preferred->first));
  EXPECT_EQ(preferred->second, tokens_.token_for(preferred->first));
  EXPECT_FALSE(cids.new_cid_frame_due());                        // sent in the transport parameter
  EXPECT_FALSE(cids.issue_for_preferred_address().has_value());  // only once

  cids.on_peer_limit(4);
  EXPECT_EQ(cids.active_count(), 4u);
  EXPECT_EQ(write_one(cids).sequence, 2u);
  EXPECT_EQ(write_one(cids).sequence, 3u);
  EXPECT_FALSE(cids.new_cid_frame_due());
  // The peer may retire it like any other.
  EXPECT_TRUE(cids.on_retire(1, initial.span()).ok());
  EXPECT_FALSE(registry_.contains(preferred->first));
}

TEST_F(LocalCidsTest, ZeroCapRejected) {
  EXPECT_THROW(LocalConnectionIds(&generator_, &tokens_, registry_, 0), std::invalid_argument);
}

// Without a reset key: StatelessResetTokens::token_for (BoringSSL HMAC)
// mallocs its digest contexts, which is outside this class.
TEST_F(LocalCidsTest, SteadyStateAllocatesNothing) {
  LocalConnectionIds cids(&generator_, nullptr, registry_, 8);
  const wire::ConnectionId initial = generator_.generate();
  cids.set_initial(initial);
  cids.on_peer_limit(8);
  std::array<uint8_t, 64> buffer{};
  testing::AllocationWindow window;
  for (uint64_t round = 0; round < 1000; ++round) {
    while (cids.new_cid_frame_due()) {
      wire::ByteWriter writer(buffer);
      uint64_t sequence = 0;
      ASSERT_TRUE(cids.write_new_cid_frame(writer, sequence));
    }
    // Retire the oldest active: a replacement is issued each time.
    const uint64_t oldest = cids.next_sequence() - 8;
    ASSERT_TRUE(cids.on_retire(oldest, wire::ConnectionId{}.span()).ok());
    ASSERT_EQ(cids.active_count(), 8u);
  }
  EXPECT_EQ(window.count(), 0u);
}

// RFC 9000 §19.16: a sequence "greater than any previously sent to the peer"
// is PROTOCOL_VIOLATION, even if issued here and only waiting for its
// NEW_CONNECTION_ID frame (a peer guessing it must not make us drop it).
TEST_F(LocalCidsTest, RetireOfIssuedButUnsentSequenceIsProtocolViolation) {
  LocalConnectionIds cids(&generator_, &tokens_, registry_);
  const wire::ConnectionId initial = generator_.generate();
  cids.set_initial(initial);
  cids.on_peer_limit(3);  // sequences 1 and 2 issued, neither frame sent yet
  ASSERT_EQ(cids.next_sequence(), 3u);
  TransportError error = cids.on_retire(1, initial.span());
  EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation);
  EXPECT_EQ(error.frame_type, kRetireFrameType);
  EXPECT_EQ(registry_.unregister_calls, 0);
  EXPECT_EQ(cids.active_count(), 3u);

  const DecodedNewCid one = write_one(cids);
  ASSERT_EQ(one.sequence, 1u);
  // Sequence 2 is still unsent; sequence 1 now may be retired.
  EXPECT_EQ(cids.on_retire(2, initial.span()).code, TransportErrorCode::kProtocolViolation);
  EXPECT_TRUE(cids.on_retire(1, initial.span()).ok());
  EXPECT_FALSE(registry_.contains(one.cid));
  EXPECT_EQ(write_one(cids).sequence, 2u);
  EXPECT_TRUE(cids.on_retire(2, initial.span()).ok());
  // Sequence 0 (handshake) is retirable from the start.
  EXPECT_TRUE(cids.on_retire(0, one.cid.span()).ok());
}

}  // namespace
}  // namespace dpquic::conn
