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
#include "tools/testbed/scripted_source.h"

namespace dpquic::transmit {
namespace {

// The datagrams of a train, as the kernel-UDP backend walks them.
std::vector<std::span<const uint8_t>> split(std::span<const uint8_t> train, size_t segment_size) {
  std::vector<std::span<const uint8_t>> out;
  size_t offset = 0;
  do {
    const size_t length = gso_segment_length(train.size(), segment_size, offset);
    out.push_back(train.subspan(offset, length));
    offset += length;
  } while (offset < train.size());
  return out;
}

TEST(GsoSplitTest, SegmentsOfTheTrain) {
  std::vector<uint8_t> train(2500);
  auto out = split(train, 1000);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data(), train.data());
  EXPECT_EQ(out[0].size(), 1000u);
  EXPECT_EQ(out[1].data(), train.data() + 1000);
  EXPECT_EQ(out[1].size(), 1000u);
  EXPECT_EQ(out[2].size(), 500u);
  // Exact multiple: no empty tail.
  out = split(std::span(train).first(2000), 1000);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].size(), 1000u);
  // One short datagram.
  out = split(std::span(train).first(10), 1000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].size(), 10u);
  EXPECT_EQ(gso_segment_count(2500, 1000), 3u);
  EXPECT_EQ(gso_segment_count(0, 1000), 0u);
  EXPECT_EQ(gso_segment_count(10, 0), 0u);
}

TEST(GsoSplitTest, SegmentSizeZeroIsOnePlainDatagram) {
  EXPECT_EQ(gso_segment_length(1200, 0, 0), 1200u);
  EXPECT_EQ(gso_segment_length(0, 0, 0), 0u);  // an empty datagram stays one
  std::vector<uint8_t> datagram(1200);
  const auto out = split(datagram, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].size(), 1200u);
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
  const auto datagrams = split(train, out.segment_size);
  ASSERT_EQ(datagrams.size(), out.datagram_count);
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
