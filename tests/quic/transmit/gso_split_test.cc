// GSO trains split back into datagrams: the arithmetic, and a real train
// from the burst builder whose every datagram parses and opens on its own, as
// a peer without GSO (or GRO) would receive it.
#include "quic/transmit/gso_split.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/transmit/burst_builder.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/wire/version.h"
#include "tests/quic/transmit/packet_reader.h"
#include "tests/quic/transmit/scripted_source.h"

namespace dpquic::transmit {
namespace {

TEST(GsoSplitTest, SegmentsOfTheTrain) {
  std::vector<uint8_t> train(2500);
  std::array<std::span<const uint8_t>, 4> out;
  ASSERT_EQ(gso_split(train, 1000, out), 3u);
  EXPECT_EQ(out[0].data(), train.data());
  EXPECT_EQ(out[0].size(), 1000u);
  EXPECT_EQ(out[1].data(), train.data() + 1000);
  EXPECT_EQ(out[1].size(), 1000u);
  EXPECT_EQ(out[2].size(), 500u);
  // Exact multiple: no empty tail.
  ASSERT_EQ(gso_split(std::span(train).first(2000), 1000, out), 2u);
  EXPECT_EQ(out[1].size(), 1000u);
  // One short datagram.
  ASSERT_EQ(gso_split(std::span(train).first(10), 1000, out), 1u);
  EXPECT_EQ(out[0].size(), 10u);
  EXPECT_EQ(gso_segment_count(2500, 1000), 3u);
  EXPECT_EQ(gso_segment_count(0, 1000), 0u);
}

TEST(GsoSplitTest, RejectsWhatCannotBeSplit) {
  std::vector<uint8_t> train(2500);
  std::array<std::span<const uint8_t>, 2> out;
  EXPECT_EQ(gso_split(train, 1000, out), 0u);  // needs 3
  EXPECT_EQ(gso_split(train, 0, out), 0u);
  EXPECT_EQ(gso_split({}, 1000, out), 0u);
  EXPECT_EQ(gso_segment_count(10, 0), 0u);
}

TEST(GsoSplitTest, BuiltTrainSplitsIntoDatagramsThatOpen) {
  constexpr uint8_t kDcid[] = {1, 2, 3, 4, 5, 6, 7, 8};
  constexpr size_t kSegment = 1350;
  crypto::MbManager mb;
  crypto::PacketKeys keys;
  const std::vector<uint8_t> secret(32, 0x33);
  ASSERT_TRUE(keys.derive(mb, crypto::CipherSuite::kAes128Gcm, wire::kVersion1, secret));
  CryptoPacketSealer sealer(mb);
  auto builder = std::make_unique<BurstBuilder>(sealer);
  ChunkPool pool(8192, 1);
  std::vector<uint8_t> data(6000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13);

  testing::ScriptedSource source(wire::Role::kServer, kDcid, {});
  auto& app = source.level(crypto::EncryptionLevel::kApplication);
  app.keys = &keys;
  app.stream_id = 1;
  app.stream_data = pool.copy_from(data);

  std::vector<uint8_t> buffer(8 * kSegment);
  std::array<uint8_t*, 8> slices;
  lend_gso_buffer(buffer.data(), kSegment, slices);
  BurstDescriptor out;
  ASSERT_EQ(builder->build(source, BurstBuffers{slices, kSegment, kSegment, BurstMode::kGsoTrain},
                           {}, out),
            BurstStatus::kOk);
  ASSERT_EQ(out.datagram_count, 5u);

  // The train as the kernel would take it: one buffer, one segment size.
  const std::span<const uint8_t> train(buffer.data(), out.total_bytes());
  std::array<std::span<const uint8_t>, kMaxBurstDatagrams> datagrams;
  ASSERT_EQ(gso_split(train, out.segment_size, datagrams), out.datagram_count);
  std::vector<uint8_t> received;
  for (size_t d = 0; d < out.datagram_count; ++d) {
    EXPECT_EQ(datagrams[d].size(), out.lengths[d]);
    std::vector<testing::OpenedPacket> packets;
    ASSERT_TRUE(testing::open_datagram(mb, datagrams[d], sizeof(kDcid),
                                       testing::ReaderKeys{nullptr, nullptr, nullptr, &keys},
                                       packets));
    ASSERT_EQ(packets.size(), 1u);
    EXPECT_EQ(packets[0].packet_number, d);
    for (const wire::Frame& frame : packets[0].frames()) {
      ASSERT_EQ(frame.type, wire::FrameType::kStream);
      EXPECT_EQ(frame.stream.offset, received.size());
      received.insert(received.end(), frame.stream.data.begin(), frame.stream.data.end());
    }
  }
  EXPECT_EQ(received, data);
}

}  // namespace
}  // namespace dpquic::transmit
