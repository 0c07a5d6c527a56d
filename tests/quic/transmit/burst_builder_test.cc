// The burst builder, byte for byte: datagrams are built with real
// AES-128-GCM keys (the Initial keys of RFC 9001 §5.2, fixed secrets for the
// other levels), every packet is opened back, and its frames are checked.
#include "quic/transmit/burst_builder.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "crypto/initial_secrets.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/version.h"
#include "tests/quic/transmit/packet_reader.h"
#include "tools/testbed/scripted_source.h"

namespace dpquic::transmit {
namespace {

using crypto::EncryptionLevel;
using testing::OpenedPacket;
using testing::ScriptedSource;
using wire::FrameType;

constexpr uint8_t kDcid[] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
constexpr uint8_t kScid[] = {0xf0, 0x67, 0xa5, 0x50};
constexpr size_t kSegment = 1200;

std::vector<uint8_t> pattern(size_t length, uint8_t seed) {
  std::vector<uint8_t> out(length);
  for (size_t i = 0; i < length; ++i) out[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return out;
}

std::vector<FrameType> types_of(const OpenedPacket& packet) {
  bool ok = false;
  std::vector<FrameType> types;
  for (const wire::Frame& frame : packet.frames(&ok)) types.push_back(frame.type);
  EXPECT_TRUE(ok);
  return types;
}

class BurstBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    crypto::InitialSecrets secrets;
    ASSERT_TRUE(crypto::derive_initial_secrets(wire::kVersion1, kDcid, secrets));
    ASSERT_TRUE(initial_.derive(mb_, crypto::kInitialCipherSuite, wire::kVersion1, secrets.client));
    const std::vector<uint8_t> handshake_secret(32, 0x11), one_rtt_secret(32, 0x22);
    ASSERT_TRUE(
        handshake_.derive(mb_, crypto::CipherSuite::kAes128Gcm, wire::kVersion1, handshake_secret));
    ASSERT_TRUE(
        one_rtt_.derive(mb_, crypto::CipherSuite::kAes128Gcm, wire::kVersion1, one_rtt_secret));
    reader_keys_ = {&initial_, &handshake_, nullptr, &one_rtt_};
  }

  // Lends `count` datagram buffers: consecutive slices of one buffer.
  BurstBuffers lend(size_t count, BurstMode mode, size_t segment = kSegment) {
    storage_.assign(count * segment, 0xcc);
    slices_.resize(count);
    lend_gso_buffer(storage_.data(), segment, slices_);
    return BurstBuffers{slices_, segment, segment, mode};
  }

  std::span<const uint8_t> datagram(size_t index) const {
    return {slices_[index], out_.lengths[index]};
  }

  std::vector<OpenedPacket> open(size_t index) {
    std::vector<OpenedPacket> packets;
    EXPECT_TRUE(testing::open_datagram(mb_, datagram(index), sizeof(kDcid), reader_keys_, packets))
        << "datagram " << index;
    return packets;
  }

  // Every STREAM frame's data, in order, checking offsets are contiguous.
  std::vector<uint8_t> stream_bytes(size_t from, size_t to, bool* fin = nullptr) {
    std::vector<uint8_t> bytes;
    for (size_t d = from; d < to; ++d) {
      for (const OpenedPacket& packet : open(d)) {
        for (const wire::Frame& frame : packet.frames()) {
          if (frame.type != FrameType::kStream) continue;
          EXPECT_EQ(frame.stream.offset, bytes.size());
          bytes.insert(bytes.end(), frame.stream.data.begin(), frame.stream.data.end());
          if (fin != nullptr) *fin = frame.stream.fin;
        }
      }
    }
    return bytes;
  }

  crypto::MbManager mb_;
  crypto::PacketKeys initial_, handshake_, one_rtt_;
  testing::ReaderKeys reader_keys_;
  CryptoPacketSealer sealer_{mb_};
  std::unique_ptr<BurstBuilder> builder_ = std::make_unique<BurstBuilder>(sealer_);
  ChunkPool pool_{16384, 8};
  std::vector<uint8_t> storage_;
  std::vector<uint8_t*> slices_;
  BurstDescriptor out_;
};

// The connection may build below the stride the caller lent (its path MTU
// or the peer's limit): a GSO train is still laid out back to back, from the
// start of the lent region, at the segment size actually used.
TEST_F(BurstBuilderTest, GsoTrainBelowTheLentStrideIsContiguous) {
  const std::vector<uint8_t> data = pattern(5000, 9);
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.next_packet_number = 100;
  app.stream_id = 4;
  app.stream_fin = true;
  app.stream_data = pool_.copy_from(data);
  constexpr size_t kStride = 2000;
  BurstBuffers buffers = lend(8, BurstMode::kGsoTrain, kStride);
  buffers.segment_size = kSegment;  // lowered below the lent 2000

  ASSERT_EQ(builder_->build(source, buffers, {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 5u);
  EXPECT_EQ(out_.segment_size, kSegment);
  for (size_t d = 0; d < out_.datagram_count; ++d) {
    EXPECT_EQ(burst_datagram(buffers, out_, d), storage_.data() + d * kSegment);
    if (d + 1 < out_.datagram_count) {
      EXPECT_EQ(out_.lengths[d], kSegment);
    }
    // Read each datagram where the train put it.
    slices_[d] = storage_.data() + d * kSegment;
  }
  bool fin = false;
  EXPECT_EQ(stream_bytes(0, out_.datagram_count, &fin), data);
  EXPECT_TRUE(fin);
  // Independent datagrams stay in their own buffers.
  buffers.mode = BurstMode::kIndependent;
  lend_gso_buffer(storage_.data(), kStride, slices_);
  EXPECT_EQ(burst_datagram(buffers, out_, 3), storage_.data() + 3 * kStride);
}

TEST_F(BurstBuilderTest, InitialAndHandshakeCoalescedPaddedOnlyInTheLast) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  const std::vector<uint8_t> initial_crypto = pattern(90, 1), handshake_crypto = pattern(300, 2);
  auto& initial = source.level(EncryptionLevel::kInitial);
  initial.keys = &initial_;
  initial.ack = true;
  initial.ack_smallest = 0;
  initial.ack_largest = 0;
  initial.crypto_data = pool_.copy_from(initial_crypto);
  auto& handshake = source.level(EncryptionLevel::kHandshake);
  handshake.keys = &handshake_;
  handshake.next_packet_number = 5;
  handshake.crypto_data = pool_.copy_from(handshake_crypto);

  ASSERT_EQ(builder_->build(source, lend(4, BurstMode::kGsoTrain), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1200u);
  const std::vector<OpenedPacket> packets = open(0);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].type, wire::PacketType::kInitial);
  EXPECT_EQ(packets[0].packet_number, 0u);
  EXPECT_EQ(types_of(packets[0]), (std::vector{FrameType::kAck, FrameType::kCrypto}));
  EXPECT_EQ(packets[1].type, wire::PacketType::kHandshake);
  EXPECT_EQ(packets[1].packet_number, 5u);
  EXPECT_EQ(types_of(packets[1]), (std::vector{FrameType::kCrypto, FrameType::kPadding}));
  EXPECT_EQ(packets[0].size + packets[1].size, 1200u);
  // The Initial packet: 1 + 4 + 1 + 8 + 1 + 4 + 1 (token length) + 2
  // (Length) + 2 (pn) header, ACK (5) + CRYPTO (1 + 1 + 2 + 90) frames, tag.
  EXPECT_EQ(packets[0].size, 24u + 5 + 94 + 16);
  const auto initial_frames = packets[0].frames();
  EXPECT_TRUE(std::equal(initial_frames[1].crypto.data.begin(), initial_frames[1].crypto.data.end(),
                         initial_crypto.begin(), initial_crypto.end()));
  const auto handshake_frames = packets[1].frames();
  EXPECT_TRUE(std::equal(handshake_frames[0].crypto.data.begin(),
                         handshake_frames[0].crypto.data.end(), handshake_crypto.begin(),
                         handshake_crypto.end()));

  ASSERT_EQ(source.sent().size(), 2u);
  EXPECT_EQ(source.sent()[0].level, EncryptionLevel::kInitial);
  EXPECT_EQ(source.sent()[0].size, packets[0].size);
  EXPECT_TRUE(source.sent()[0].ack_eliciting);
  EXPECT_EQ(source.sent()[1].level, EncryptionLevel::kHandshake);
  EXPECT_EQ(source.sent()[1].packet_number, 5u);
  EXPECT_EQ(source.sent()[1].size, packets[1].size);
  EXPECT_TRUE(source.sent()[1].in_flight);
  EXPECT_EQ(initial.next_packet_number, 1u);
  EXPECT_EQ(handshake.next_packet_number, 6u);
}

TEST_F(BurstBuilderTest, ZeroRttIsCoalescedBeforeHandshake) {
  // RFC 9000 §12.2: increasing encryption levels, Initial, 0-RTT, Handshake.
  ScriptedSource source(wire::Role::kClient, kDcid, kScid);
  auto& initial = source.level(EncryptionLevel::kInitial);
  initial.keys = &initial_;
  initial.ack = true;
  auto& zero_rtt = source.level(EncryptionLevel::kEarlyData);
  zero_rtt.keys = &one_rtt_;
  zero_rtt.stream_data = pool_.copy_from(pattern(100, 4));
  auto& handshake = source.level(EncryptionLevel::kHandshake);
  handshake.keys = &handshake_;
  handshake.ack = true;
  reader_keys_.zero_rtt = &one_rtt_;
  ASSERT_EQ(builder_->build(source, lend(2, BurstMode::kIndependent), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1200u);
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0].type, wire::PacketType::kInitial);
  EXPECT_EQ(packets[1].type, wire::PacketType::kZeroRtt);
  EXPECT_EQ(types_of(packets[1]), std::vector{FrameType::kStream});
  EXPECT_EQ(packets[2].type, wire::PacketType::kHandshake);
  EXPECT_EQ(types_of(packets[2]), (std::vector{FrameType::kAck, FrameType::kPadding}));
  ASSERT_EQ(source.sent().size(), 3u);
  EXPECT_EQ(source.sent()[1].level, EncryptionLevel::kEarlyData);
  EXPECT_EQ(source.sent()[2].level, EncryptionLevel::kHandshake);
}

TEST_F(BurstBuilderTest, ClientInitialAloneIsPaddedInItself) {
  ScriptedSource source(wire::Role::kClient, kDcid, kScid);
  auto& initial = source.level(EncryptionLevel::kInitial);
  initial.keys = &initial_;
  initial.crypto_data = pool_.copy_from(pattern(250, 3));
  ASSERT_EQ(builder_->build(source, lend(4, BurstMode::kIndependent), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1200u);
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(types_of(packets[0]), (std::vector{FrameType::kCrypto, FrameType::kPadding}));
}

TEST_F(BurstBuilderTest, GsoTrainOfFullSegmentsPlusOneShortFinal) {
  ScriptedSource source(wire::Role::kClient, kDcid, kScid);
  const std::vector<uint8_t> data = pattern(5000, 9);
  Chunk chunk = pool_.copy_from(data);
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.next_packet_number = 100;
  app.stream_id = 4;
  app.stream_fin = true;
  app.stream_data = chunk;
  const uint32_t references = chunk.use_count();  // ours and the script's
  ASSERT_EQ(references, 2u);

  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), {}, out_), BurstStatus::kOk);
  // 1200-byte segments: 11 header + 16 tag leave 1173 bytes of STREAM frame.
  ASSERT_EQ(out_.datagram_count, 5u);
  EXPECT_EQ(out_.segment_size, kSegment);
  for (size_t i = 0; i + 1 < out_.datagram_count; ++i) EXPECT_EQ(out_.lengths[i], kSegment);
  EXPECT_LT(out_.lengths[4], kSegment);
  for (size_t d = 0; d < out_.datagram_count; ++d) {
    const auto packets = open(d);
    ASSERT_EQ(packets.size(), 1u);
    EXPECT_EQ(packets[0].packet_number, 100 + d);
    // One STREAM frame, no padding: not in full segments, and the final
    // segment is not padded to match S.
    EXPECT_EQ(types_of(packets[0]), std::vector{FrameType::kStream});
  }
  bool fin = false;
  EXPECT_EQ(stream_bytes(0, out_.datagram_count, &fin), data);
  EXPECT_TRUE(fin);
  // Frames of 1171 bytes (offset 0: 2-byte header), then 1169 (a 2-byte
  // offset), then the rest with offset and Length (6-byte header).
  EXPECT_EQ(out_.lengths[4], 11u + 16 + 6 + (5000 - 1171 - 3 * 1169));
  // The burst's chunk references are gone; the script still holds its own.
  EXPECT_EQ(chunk.use_count(), references);
  ASSERT_EQ(source.sent().size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(source.sent()[i].size, out_.lengths[i]);
}

// Every 1-RTT header of a burst after the first is copied from the one
// before with its packet number patched in (the header template), and
// written afresh where the packet number needs another length.
TEST_F(BurstBuilderTest, ShortHeadersAreCopiedUntilThePacketNumberLengthChanges) {
  ScriptedSource source(wire::Role::kClient, kDcid, kScid);
  const std::vector<uint8_t> data = pattern(9000, 5);
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.packet_number_length = 0;
  app.largest_acked = 0;
  app.next_packet_number = 124;  // 124..128 take one byte, 129 on two
  app.stream_id = 4;
  app.stream_fin = true;
  app.stream_data = pool_.copy_from(data);

  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kIndependent), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 8u);
  for (size_t d = 0; d < out_.datagram_count; ++d) {
    const auto packets = open(d);
    ASSERT_EQ(packets.size(), 1u);
    EXPECT_EQ(packets[0].packet_number, 124 + d);
    // First byte, the 8-byte DCID and the packet number.
    EXPECT_EQ(source.sent()[d].size - packets[0].payload.size() - crypto::kAeadTagLength,
              1 + sizeof(kDcid) + (124 + d <= 128 ? 1 : 2))
        << "datagram " << d;
  }
  bool fin = false;
  EXPECT_EQ(stream_bytes(0, out_.datagram_count, &fin), data);
  EXPECT_TRUE(fin);
}

TEST_F(BurstBuilderTest, ShortDatagramMidTrainIsPaddedToSegmentSizeButNotTheLast) {
  const std::vector<uint8_t> data = pattern(2100, 4);
  for (const BurstMode mode : {BurstMode::kGsoTrain, BurstMode::kIndependent}) {
    ScriptedSource source(wire::Role::kClient, kDcid, kScid);
    auto& app = source.level(EncryptionLevel::kApplication);
    app.keys = &one_rtt_;
    app.stream_data = pool_.copy_from(data);
    app.max_stream_frame = 700;
    app.max_stream_frames_per_packet = 1;
    ASSERT_EQ(builder_->build(source, lend(8, mode), {}, out_), BurstStatus::kOk);
    ASSERT_EQ(out_.datagram_count, 3u);
    for (size_t d = 0; d < 3; ++d) {
      const auto packets = open(d);
      ASSERT_EQ(packets.size(), 1u);
      const bool padded = mode == BurstMode::kGsoTrain && d < 2;
      EXPECT_EQ(out_.lengths[d], padded ? kSegment : 11 + 16 + 1 + 1 + (d ? 2 : 0) + 2 + 700u);
      EXPECT_EQ(types_of(packets[0]), padded
                                          ? (std::vector{FrameType::kStream, FrameType::kPadding})
                                          : std::vector{FrameType::kStream});
    }
    EXPECT_EQ(stream_bytes(0, 3), data);
  }
}

TEST_F(BurstBuilderTest, NothingAfterConnectionClose) {
  ScriptedSource source(wire::Role::kClient, kDcid, kScid);
  auto& initial = source.level(EncryptionLevel::kInitial);
  initial.keys = &initial_;
  initial.ack = true;
  initial.close = true;
  initial.crypto_data = pool_.copy_from(pattern(100, 5));
  auto& handshake = source.level(EncryptionLevel::kHandshake);
  handshake.keys = &handshake_;
  handshake.crypto_data = pool_.copy_from(pattern(100, 6));
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.stream_data = pool_.copy_from(pattern(3000, 7));

  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1200u);  // a client's Initial datagram
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 1u);
  // The padding goes before the frames: the close is the last byte.
  EXPECT_EQ(types_of(packets[0]), (std::vector{FrameType::kPadding, FrameType::kAck,
                                               FrameType::kConnectionCloseTransport}));
  EXPECT_EQ(packets[0].frames()[2].connection_close.error_code, 0x0au);
  ASSERT_EQ(source.sent().size(), 1u);
  EXPECT_EQ(handshake.next_packet_number, 0u);
  EXPECT_EQ(app.next_packet_number, 0u);
  EXPECT_EQ(app.stream_sent, 0u);
}

TEST_F(BurstBuilderTest, CloseInOneRttAfterAnAckEndsTheBurst) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.ack = true;
  app.ack_largest = 3;
  app.close = true;
  app.stream_data = pool_.copy_from(pattern(3000, 7));
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(types_of(packets[0]),
            (std::vector{FrameType::kAck, FrameType::kConnectionCloseTransport}));
  EXPECT_EQ(out_.lengths[0], 11u + 5 + 4 + 16);  // no padding at all
}

TEST_F(BurstBuilderTest, CongestionBudgetExhaustedAllowsOnlyAck) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.ack = true;
  app.ack_smallest = 2;
  app.ack_largest = 9;
  app.ping = true;
  app.stream_data = pool_.copy_from(pattern(4000, 8));
  BurstParams params;
  params.congestion_budget = kSegment - 1;
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), params, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(types_of(packets[0]), std::vector{FrameType::kAck});
  ASSERT_EQ(source.sent().size(), 1u);
  EXPECT_FALSE(source.sent()[0].ack_eliciting);
  EXPECT_FALSE(source.sent()[0].in_flight);
  EXPECT_EQ(app.stream_sent, 0u);

  // Room for two full segments: two datagrams of data, then only ACKs (none
  // pending).
  source.clear_sent();
  params.congestion_budget = 2 * kSegment + 100;
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), params, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 2u);
  EXPECT_EQ(out_.lengths[0], kSegment);
  EXPECT_EQ(out_.lengths[1], kSegment);
  EXPECT_EQ(types_of(open(0)[0]), (std::vector{FrameType::kPing, FrameType::kStream}));
}

TEST_F(BurstBuilderTest, AmplificationBudgetIsRespectedExactly) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  auto& initial = source.level(EncryptionLevel::kInitial);
  initial.keys = &initial_;
  initial.ack = true;
  initial.crypto_data = pool_.copy_from(pattern(90, 1));
  auto& handshake = source.level(EncryptionLevel::kHandshake);
  handshake.keys = &handshake_;
  handshake.crypto_data = pool_.copy_from(pattern(6000, 2));
  BurstParams params;
  params.amplification_budget = 3 * kSegment + 500;
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), params, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 4u);
  EXPECT_EQ(out_.total_bytes(), params.amplification_budget);
  EXPECT_EQ(out_.lengths[3], 500u);
  EXPECT_EQ(types_of(open(0)[0]), (std::vector{FrameType::kAck, FrameType::kCrypto}));
  for (size_t d = 1; d < 4; ++d) EXPECT_EQ(open(d)[0].type, wire::PacketType::kHandshake);
}

TEST_F(BurstBuilderTest, AmplificationBudgetBelow1200AllowsNoAckElicitingInitial) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  auto& initial = source.level(EncryptionLevel::kInitial);
  initial.keys = &initial_;
  initial.ack = true;
  initial.crypto_data = pool_.copy_from(pattern(90, 1));
  auto& handshake = source.level(EncryptionLevel::kHandshake);
  handshake.keys = &handshake_;
  handshake.crypto_data = pool_.copy_from(pattern(6000, 2));
  BurstParams params;
  params.amplification_budget = 1000;
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kGsoTrain), params, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1000u);
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(types_of(packets[0]), std::vector{FrameType::kAck});
  EXPECT_EQ(types_of(packets[1]), std::vector{FrameType::kCrypto});
  EXPECT_EQ(initial.crypto_sent, 0u);
}

TEST_F(BurstBuilderTest, PacerLimitsDatagramsAndSmallPacketsGetSamplePadding) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.packet_number_length = 1;
  app.ping = true;  // 1 + 1 byte: 2 bytes of padding for the sample
  BurstParams params;
  params.max_datagrams = 1;
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kIndependent), params, out_),
            BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1u + 8 + 1 + 3 + 16);
  EXPECT_EQ(types_of(open(0)[0]), (std::vector{FrameType::kPing, FrameType::kPadding}));
  EXPECT_TRUE(source.sent()[0].in_flight);

  params.max_datagrams = 0;
  app.ping = true;
  ASSERT_EQ(builder_->build(source, lend(8, BurstMode::kIndependent), params, out_),
            BurstStatus::kOk);
  EXPECT_EQ(out_.datagram_count, 0u);
}

TEST_F(BurstBuilderTest, RejectsUnusableBuffers) {
  ScriptedSource source(wire::Role::kServer, kDcid, kScid);
  BurstBuffers buffers = lend(2, BurstMode::kGsoTrain, 1100);
  EXPECT_EQ(builder_->build(source, buffers, {}, out_), BurstStatus::kInvalidArgument);
  buffers = lend(2, BurstMode::kGsoTrain);
  buffers.capacity = kSegment - 1;
  EXPECT_EQ(builder_->build(source, buffers, {}, out_), BurstStatus::kInvalidArgument);
  EXPECT_EQ(out_.datagram_count, 0u);
}

// A source with one Initial packet to offer, whose frames a test writes.
class OneInitialSource : public TransmitSource {
 public:
  OneInitialSource(const crypto::PacketKeys* keys,
                   std::function<PacketContents(PacketPayloadWriter&)> write)
      : keys_(keys), write_(std::move(write)) {}
  bool next_packet(EncryptionLevel level, const SendAllowance&, PacketHeader& header) override {
    if (level != EncryptionLevel::kInitial || offered_) return false;
    offered_ = true;
    header = PacketHeader{};
    header.keys = keys_;
    header.long_fields.version = wire::kVersion1;
    header.long_fields.type = wire::PacketType::kInitial;
    header.long_fields.dcid = kDcid;
    header.long_fields.scid = kScid;
    header.long_fields.packet_number_length = 2;
    return true;
  }
  PacketContents write_frames(EncryptionLevel, PacketPayloadWriter& writer,
                              const SendAllowance&) override {
    return write_(writer);
  }
  void on_packet_sent(const SentPacketInfo& packet) override { sent.push_back(packet); }
  std::vector<SentPacketInfo> sent;

 private:
  const crypto::PacketKeys* keys_;
  std::function<PacketContents(PacketPayloadWriter&)> write_;
  bool offered_ = false;
};

TEST_F(BurstBuilderTest, AbandonedPacketDropsItsChunkReferencesAtOnce) {
  Chunk chunk = pool_.copy_from(pattern(10, 1));
  OneInitialSource source(&initial_, [&](PacketPayloadWriter& writer) {
    // A zero-length append takes a reference but writes nothing.
    EXPECT_TRUE(writer.append_stream_data(chunk, 3, 0));
    EXPECT_EQ(chunk.use_count(), 2u);
    return PacketContents{};
  });
  ASSERT_EQ(builder_->build(source, lend(2, BurstMode::kIndependent), {}, out_), BurstStatus::kOk);
  EXPECT_EQ(out_.datagram_count, 0u);
  EXPECT_TRUE(source.sent.empty());
  EXPECT_EQ(chunk.use_count(), 1u);  // not held until the next build
}

TEST_F(BurstBuilderTest, CloseAfterChunkDataIsPaddedInFrontWithTheDataIntact) {
  const std::vector<uint8_t> bytes = pattern(300, 6);
  Chunk chunk = pool_.copy_from(bytes);
  OneInitialSource source(&initial_, [&](PacketPayloadWriter& writer) {
    PacketContents contents;
    EXPECT_TRUE(writer.write_crypto_frame(0, chunk, 0, bytes.size()));
    wire::Frame close;
    close.type = FrameType::kConnectionCloseTransport;
    close.connection_close = wire::ConnectionCloseFrame{0x0a, 0, {}};
    EXPECT_TRUE(wire::encode_frame(writer.frames(), close));
    contents.ack_eliciting = contents.in_flight = true;
    contents.needs_initial_padding = true;
    contents.connection_close = true;
    return contents;
  });
  ASSERT_EQ(builder_->build(source, lend(2, BurstMode::kGsoTrain), {}, out_), BurstStatus::kOk);
  ASSERT_EQ(out_.datagram_count, 1u);
  EXPECT_EQ(out_.lengths[0], 1200u);
  const auto packets = open(0);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(types_of(packets[0]), (std::vector{FrameType::kPadding, FrameType::kCrypto,
                                               FrameType::kConnectionCloseTransport}));
  const auto frames = packets[0].frames();
  EXPECT_EQ(std::vector<uint8_t>(frames[1].crypto.data.begin(), frames[1].crypto.data.end()),
            bytes);
  EXPECT_EQ(chunk.use_count(), 1u);
}

// A sealer that fails every packet.
class FailingSealer final : public PacketSealer {
 public:
  size_t seal(std::span<const crypto::GatherProtectOp> packets,
              std::span<crypto::PacketStatus> status) override {
    for (size_t i = 0; i < packets.size(); ++i) status[i] = crypto::PacketStatus::kEngineError;
    return 0;
  }
};

TEST_F(BurstBuilderTest, SealFailureReportsNothingAndReturnsTheChunks) {
  FailingSealer failing;
  auto builder = std::make_unique<BurstBuilder>(failing);
  ScriptedSource source(wire::Role::kClient, kDcid, kScid);
  Chunk chunk = pool_.copy_from(pattern(3000, 3));
  auto& app = source.level(EncryptionLevel::kApplication);
  app.keys = &one_rtt_;
  app.stream_data = chunk;
  ASSERT_EQ(builder->build(source, lend(4, BurstMode::kGsoTrain), {}, out_),
            BurstStatus::kSealFailed);
  EXPECT_EQ(out_.datagram_count, 0u);
  EXPECT_TRUE(source.sent().empty());
  EXPECT_EQ(chunk.use_count(), 2u);  // ours and the script's
}

// Random scripts, modes, segment sizes and budgets: every burst must keep the
// builder's invariants (every datagram opens, GSO train shape, budgets,
// Initial padding, close last, data intact, chunk references returned).
TEST_F(BurstBuilderTest, RandomBurstsKeepEveryInvariant) {
  std::mt19937 rng(20240605);
  auto uniform = [&](size_t low, size_t high) {
    return std::uniform_int_distribution<size_t>(low, high)(rng);
  };
  const std::vector<uint8_t> crypto_bytes = pattern(3000, 11), stream_bytes = pattern(9000, 12);
  reader_keys_.zero_rtt = &handshake_;
  const EncryptionLevel levels[] = {EncryptionLevel::kInitial, EncryptionLevel::kHandshake,
                                    EncryptionLevel::kEarlyData, EncryptionLevel::kApplication};
  size_t total_datagrams = 0, trains = 0;
  for (int round = 0; round < 3000; ++round) {
    SCOPED_TRACE(round);
    const bool client = uniform(0, 1) == 0;
    ScriptedSource source(client ? wire::Role::kClient : wire::Role::kServer, kDcid, kScid);
    Chunk crypto_chunk = pool_.copy_from(crypto_bytes);
    Chunk stream_chunk = pool_.copy_from(stream_bytes);
    ASSERT_TRUE(crypto_chunk.valid() && stream_chunk.valid());
    const crypto::PacketKeys* keys_of[] = {&initial_, &handshake_, &handshake_, &one_rtt_};
    for (const EncryptionLevel level : levels) {
      const size_t l = static_cast<size_t>(level);
      if (level == EncryptionLevel::kEarlyData && !client) continue;
      if (uniform(0, 2) == 0) continue;
      auto& script = source.level(level);
      script.keys = keys_of[l];
      script.packet_number_length = uniform(1, 4);
      script.next_packet_number = uniform(0, 100);  // decodable with no largest
      script.ack = level != EncryptionLevel::kEarlyData && uniform(0, 1) == 0;
      script.ack_largest = 5;
      script.ping = uniform(0, 3) == 0;
      script.close = uniform(0, 12) == 0;
      if (level != EncryptionLevel::kApplication && level != EncryptionLevel::kEarlyData &&
          uniform(0, 1) == 0) {
        script.crypto_data = crypto_chunk.slice(0, uniform(0, 3000));
      }
      if ((level == EncryptionLevel::kApplication || level == EncryptionLevel::kEarlyData) &&
          uniform(0, 3) != 0) {
        script.stream_data = stream_chunk.slice(0, uniform(1, 9000));
        script.stream_id = l;
        script.max_stream_frame = uniform(0, 1) == 0 ? 0 : uniform(1, 1300);
        script.max_stream_frames_per_packet = uniform(0, 2);
      }
    }
    const uint32_t crypto_refs = crypto_chunk.use_count(), stream_refs = stream_chunk.use_count();
    const BurstMode mode = uniform(0, 1) == 0 ? BurstMode::kGsoTrain : BurstMode::kIndependent;
    const size_t segment = uniform(1200, 1500);
    BurstParams params;
    params.max_datagrams = uniform(0, 8);
    if (uniform(0, 1) == 0) params.congestion_budget = uniform(0, 9000);
    if (!client && uniform(0, 1) == 0) params.amplification_budget = uniform(0, 9000);

    ASSERT_EQ(builder_->build(source, lend(8, mode, segment), params, out_), BurstStatus::kOk);
    EXPECT_EQ(crypto_chunk.use_count(), crypto_refs);
    EXPECT_EQ(stream_chunk.use_count(), stream_refs);
    const size_t n = out_.datagram_count;
    ASSERT_LE(n, params.max_datagrams);
    if (params.amplification_budget != UINT64_MAX) {
      EXPECT_LE(out_.total_bytes(), params.amplification_budget);
    }
    std::vector<size_t> sent_sum(n, 0);
    uint64_t in_flight_before = 0;  // in-flight bytes of the datagrams before d
    size_t sent_index = 0;
    bool close_seen = false;
    std::array<std::vector<uint8_t>, 4> received_crypto, received_stream;
    for (size_t d = 0; d < n; ++d) {
      SCOPED_TRACE(d);
      ASSERT_GT(out_.lengths[d], 0u);
      ASSERT_LE(out_.lengths[d], segment);
      if (mode == BurstMode::kGsoTrain && d + 1 < n) {
        EXPECT_EQ(out_.lengths[d], segment);
      }
      const std::vector<OpenedPacket> packets = open(d);
      ASSERT_FALSE(packets.empty());
      bool initial_needs_1200 = false, any_ack_eliciting = false;
      uint64_t in_flight = 0;
      size_t bytes = 0;
      for (size_t p = 0; p < packets.size(); ++p) {
        ASSERT_LT(sent_index, source.sent().size());
        const SentPacketInfo& info = source.sent()[sent_index++];
        EXPECT_EQ(info.datagram_index, d);
        EXPECT_EQ(info.size, packets[p].size);
        EXPECT_EQ(info.packet_number, packets[p].packet_number);
        bytes += info.size;
        bool ok = false;
        const std::vector<wire::Frame> frames = packets[p].frames(&ok);
        ASSERT_TRUE(ok);
        bool eliciting = false, padded = false;
        const size_t l = static_cast<size_t>(info.level);
        for (size_t f = 0; f < frames.size(); ++f) {
          const wire::Frame& frame = frames[f];
          EXPECT_FALSE(close_seen) << "a frame after CONNECTION_CLOSE";
          if (frame.type == FrameType::kConnectionCloseTransport) close_seen = true;
          if (frame.type == FrameType::kPadding) padded = true;
          if (frame.type == FrameType::kPing) eliciting = true;
          if (frame.type == FrameType::kCrypto) {
            eliciting = true;
            EXPECT_EQ(frame.crypto.offset, received_crypto[l].size());
            received_crypto[l].insert(received_crypto[l].end(), frame.crypto.data.begin(),
                                      frame.crypto.data.end());
          }
          if (frame.type == FrameType::kStream) {
            eliciting = true;
            EXPECT_EQ(frame.stream.offset, received_stream[l].size());
            received_stream[l].insert(received_stream[l].end(), frame.stream.data.begin(),
                                      frame.stream.data.end());
          }
        }
        EXPECT_EQ(info.ack_eliciting, eliciting);
        EXPECT_EQ(info.in_flight, eliciting || padded);
        if (info.in_flight) in_flight += info.size;
        any_ack_eliciting |= eliciting;
        if (info.level == EncryptionLevel::kInitial && (client || eliciting)) {
          initial_needs_1200 = true;
        }
      }
      EXPECT_EQ(bytes, out_.lengths[d]);
      if (initial_needs_1200) {
        EXPECT_GE(out_.lengths[d], 1200u);
      }
      if (any_ack_eliciting && params.congestion_budget != UINT64_MAX) {
        EXPECT_LE(in_flight_before + segment, params.congestion_budget);
      }
      in_flight_before += in_flight;
    }
    EXPECT_EQ(sent_index, source.sent().size());
    for (size_t l = 0; l < 4; ++l) {
      const std::vector<uint8_t>& c = received_crypto[l];
      EXPECT_TRUE(std::equal(c.begin(), c.end(), crypto_bytes.begin()));
      const std::vector<uint8_t>& s = received_stream[l];
      EXPECT_TRUE(std::equal(s.begin(), s.end(), stream_bytes.begin()));
    }
    total_datagrams += n;
    if (mode == BurstMode::kGsoTrain && n > 1) ++trains;
    if (::testing::Test::HasFailure()) break;
  }
  // The scripts do reach multi-datagram bursts and trains.
  EXPECT_GT(total_datagrams, 4000u);
  EXPECT_GT(trains, 400u);
}

}  // namespace
}  // namespace dpquic::transmit
