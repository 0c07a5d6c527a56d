// The burst builder, byte for byte: datagrams are built with real
// AES-128-GCM keys (the Initial keys of RFC 9001 §5.2, fixed secrets for the
// other levels), every packet is opened back, and its frames are checked.
#include "quic/transmit/burst_builder.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "crypto/initial_secrets.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/wire/frames.h"
#include "quic/wire/version.h"
#include "tests/quic/transmit/packet_reader.h"
#include "tests/quic/transmit/scripted_source.h"

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

}  // namespace
}  // namespace dpquic::transmit
