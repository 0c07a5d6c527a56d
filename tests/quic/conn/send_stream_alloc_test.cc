// A send stream allocates nothing per frame: after warm-up, 100k cycles of
// write / send / ACK (with some losses and retransmissions) inside an
// allocation-counting window.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "quic/conn/send_stream.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_writer.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

using ::dpquic::testing::AllocationWindow;

constexpr int kWarmUpCycles = 1000;
constexpr int kCycles = 100000;
constexpr size_t kMaxFramesPerCycle = 64;

struct Bench {
  transmit::ChunkPool pool{2048, 64};
  std::vector<uint8_t> source = std::vector<uint8_t>(2048, 0x3c);
  std::unique_ptr<transmit::GatherStorage> storage = std::make_unique<transmit::GatherStorage>();
  std::vector<uint8_t> packet = std::vector<uint8_t>(2400);
  std::array<StreamFrameRecord, kMaxFramesPerCycle> records{};
  uint64_t credit = 0;
  uint64_t frames_sent = 0;
  uint64_t bytes_written = 0;

  // One cycle: the application writes a chunk, a packet is filled, and its
  // frames are acknowledged, except that every other cycle the first frame
  // is lost (and retransmitted first in the next cycle).
  bool cycle(SendStream& stream, int round) {
    const size_t length = 200 + static_cast<size_t>(round % 7) * 150;
    if (stream.writable_bytes() >= length) {
      transmit::Chunk chunk = pool.copy_from(std::span<const uint8_t>(source).first(length));
      if (!chunk.valid() || !stream.write(std::move(chunk), false)) return false;
      bytes_written += length;
    }
    credit += length;
    stream.on_max_stream_data(stream.sent_end() + 8192);
    transmit::PacketPayloadWriter writer(std::span<uint8_t>(packet), *storage);
    size_t count = 0;
    uint64_t new_bytes = 0;
    while (count < kMaxFramesPerCycle &&
           stream.write_stream_frame(writer, credit, records[count], new_bytes)) {
      credit -= new_bytes;
      ++count;
    }
    frames_sent += count;
    storage->clear();
    for (size_t i = 0; i < count; ++i) {
      if (round % 2 == 0 && i == 0) {
        stream.on_stream_frame_lost(records[i]);  // retransmitted next cycle
      } else {
        stream.on_stream_frame_acked(records[i]);
      }
    }
    return true;
  }
};

TEST(SendStreamAllocTest, HundredThousandCyclesAllocateNothing) {
  Bench bench;
  SendStream stream(4, 8192, 32 * 1024);
  for (int round = 0; round < kWarmUpCycles; ++round) ASSERT_TRUE(bench.cycle(stream, round));
  const uint64_t frames_before = bench.frames_sent;
  size_t allocations = 0;
  bool ok = true;
  {
    AllocationWindow window;
    for (int round = kWarmUpCycles; round < kWarmUpCycles + kCycles && ok; ++round) {
      ok = bench.cycle(stream, round);
    }
    allocations = window.count();
  }
  ASSERT_TRUE(ok);
  EXPECT_EQ(allocations, 0u);
  EXPECT_GT(bench.frames_sent - frames_before, static_cast<uint64_t>(kCycles));
  // The stream kept up: the last cycle lost nothing and retransmitted the
  // one before's loss, so everything written is sent, acknowledged and
  // released.
  EXPECT_EQ(stream.sent_end(), bench.bytes_written);
  EXPECT_EQ(stream.bytes_acked_contiguous(), bench.bytes_written);
  EXPECT_EQ(stream.chunk_count(), 0u);
  EXPECT_EQ(bench.pool.free_buffers(), 64u);
}

}  // namespace
}  // namespace dpquic::conn
