// Building bursts allocates nothing after warm-up: 1000 bursts of 32
// datagrams of 1-RTT stream data from chunks, sealed with real AES-128-GCM,
// with ACKs and Initial/Handshake coalescing mixed in, inside an
// allocation-counting window.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/transmit/burst_builder.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/wire/version.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/scripted_source.h"

namespace dpquic::transmit {
namespace {

using crypto::EncryptionLevel;
using ::dpquic::testing::AllocationWindow;

constexpr uint8_t kDcid[] = {1, 2, 3, 4, 5, 6, 7, 8};
constexpr size_t kSegment = 1200;
constexpr size_t kDatagrams = 32;
constexpr int kBursts = 1000;

TEST(BurstAllocTest, ThousandBurstsAllocateNothing) {
  crypto::MbManager mb;
  crypto::PacketKeys initial, handshake, one_rtt;
  ASSERT_TRUE(initial.derive(mb, crypto::CipherSuite::kAes128Gcm, wire::kVersion1,
                             std::vector<uint8_t>(32, 1)));
  ASSERT_TRUE(handshake.derive(mb, crypto::CipherSuite::kAes128Gcm, wire::kVersion1,
                               std::vector<uint8_t>(32, 2)));
  ASSERT_TRUE(one_rtt.derive(mb, crypto::CipherSuite::kAes128Gcm, wire::kVersion1,
                             std::vector<uint8_t>(32, 3)));
  CryptoPacketSealer sealer(mb);
  auto builder = std::make_unique<BurstBuilder>(sealer);
  ChunkPool pool(64 * 1024, 4);
  std::vector<uint8_t> data(kDatagrams * kSegment);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  const std::vector<uint8_t> crypto_bytes(200, 0x5c);

  testing::ScriptedSource source(wire::Role::kServer, kDcid, kDcid);
  std::vector<uint8_t> buffer(kDatagrams * kSegment);
  std::array<uint8_t*, kDatagrams> slices;
  lend_gso_buffer(buffer.data(), kSegment, slices);
  const BurstBuffers buffers{slices, kSegment, kSegment, BurstMode::kGsoTrain};
  Chunk stream_chunk = pool.copy_from(data);
  Chunk crypto_chunk = pool.copy_from(crypto_bytes);
  ASSERT_TRUE(stream_chunk.valid() && crypto_chunk.valid());

  auto script = [&](int round) {
    source.clear_sent();  // keeps the vector's capacity
    auto& app = source.level(EncryptionLevel::kApplication);
    app.keys = &one_rtt;
    app.ack = true;
    app.ack_largest = static_cast<uint64_t>(round);
    app.stream_data = stream_chunk;
    app.stream_sent = 0;
    app.stream_offset = static_cast<uint64_t>(round) * data.size();
    if (round % 10 == 0) {
      auto& init = source.level(EncryptionLevel::kInitial);
      init.keys = &initial;
      init.ack = true;
      init.crypto_data = crypto_chunk;
      init.crypto_sent = 0;
      auto& hs = source.level(EncryptionLevel::kHandshake);
      hs.keys = &handshake;
      hs.crypto_data = crypto_chunk;
      hs.crypto_sent = 0;
    }
  };

  // Warm-up.
  BurstDescriptor out;
  script(0);
  ASSERT_EQ(builder->build(source, buffers, {}, out), BurstStatus::kOk);
  ASSERT_EQ(out.datagram_count, kDatagrams);

  size_t datagrams = 0, packets = 0;
  size_t window_count = 0;
  {
    AllocationWindow window;
    for (int round = 1; round <= kBursts; ++round) {
      script(round);
      if (builder->build(source, buffers, {}, out) != BurstStatus::kOk) break;
      datagrams += out.datagram_count;
      packets += source.sent().size();
    }
    window_count = window.count();
  }
  EXPECT_EQ(window_count, 0u);
  EXPECT_EQ(datagrams, kBursts * kDatagrams);
  EXPECT_GE(packets, datagrams);
  EXPECT_EQ(stream_chunk.use_count(), 2u);  // ours and the script's
}

}  // namespace
}  // namespace dpquic::transmit
