// Recycled stream objects: a connection keeps a freed stream's
// SendStream / ReceiveStream and re-initialises them for the slot's next
// stream. A recycled object must behave exactly like a new one, give back
// pooled memory when retired, keep its small storage (so short streams never
// allocate) and give back storage that grew beyond the caps.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "quic/conn/block_pool.h"
#include "quic/conn/range_set.h"
#include "quic/conn/receive_buffer.h"
#include "quic/conn/receive_stream.h"
#include "quic/conn/send_stream.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_writer.h"
#include "tests/quic/conn/send_stream_bench.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

using testing::kLots;
using testing::PacketBench;
using testing::pattern;
using testing::Receiver;
using testing::SentFrame;
using transmit::ChunkPool;

constexpr Duration kRtt = 20 * kMillisecond;

std::span<const uint8_t> piece(const std::vector<uint8_t>& data, size_t at, size_t length) {
  return std::span<const uint8_t>(data).subspan(at, length);
}

// --- RangeSet -------------------------------------------------------------------------------

TEST(RangeSetRecycleTest, ClearAndTrimKeepsSmallStorageAndGivesBackLarge) {
  RangeSet set(8);
  for (uint64_t i = 0; i < 10; ++i) set.insert(i * 10, i * 10 + 5);
  EXPECT_EQ(set.capacity(), 16u);
  set.clear_and_trim(64);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.capacity(), 16u);  // within the cap: kept

  for (uint64_t i = 0; i < 100; ++i) set.insert(i * 10, i * 10 + 5);
  EXPECT_EQ(set.capacity(), 128u);
  set.clear_and_trim(64);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.capacity(), 8u);  // back to the constructor's reservation
  // Usable as before.
  set.insert(5, 10);
  set.insert(0, 5);
  ASSERT_EQ(set.size(), 1u);
  EXPECT_EQ(set.front().begin, 0u);
  EXPECT_EQ(set.front().end, 10u);
}

// --- SendStream -----------------------------------------------------------------------------

// Sends everything `stream` has in packets of `packet_size`, returning the
// frames sent.
std::vector<SentFrame> send_all(PacketBench& bench, SendStream& stream, size_t packet_size) {
  std::vector<SentFrame> all;
  uint64_t credit = kLots;
  while (stream.wants_to_send(credit)) {
    std::vector<SentFrame> frames = bench.send(stream, packet_size, credit);
    if (frames.empty()) break;
    for (SentFrame& f : frames) all.push_back(std::move(f));
  }
  return all;
}

TEST(SendStreamRecycleTest, ReinitializeMakesAFreshStreamOnTheKeptStorage) {
  ChunkPool pool(64, 64);
  const size_t free_at_start = pool.free_buffers();
  const std::vector<uint8_t> data = pattern(200, 3);
  SendStream stream(4, kLots, 64 * 1024);
  // A first stream left in the middle of everything: chunks held, ranges
  // acknowledged out of order, ranges lost, FIN queued, STOP_SENDING
  // received... (20 chunks: the ring grows to 256 slots).
  for (size_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(stream.write(pool.copy_from(piece(data, i * 10, 10)), i == 19));
  }
  EXPECT_EQ(stream.chunk_capacity(), 256u);
  PacketBench bench;
  std::vector<SentFrame> sent = send_all(bench, stream, 40);
  ASSERT_GE(sent.size(), 6u);
  stream.on_stream_frame_acked(sent[1].record);
  stream.on_stream_frame_acked(sent[3].record);
  stream.on_stream_frame_lost(sent[2].record);
  stream.on_stream_frame_lost(sent[4].record);
  EXPECT_GT(stream.lost_bytes(), 0u);
  EXPECT_EQ(pool.free_buffers(), free_at_start - 20);

  stream.reinitialize(8, 500, 1000);
  EXPECT_EQ(pool.free_buffers(), free_at_start);  // every chunk released
  EXPECT_EQ(stream.id(), 8u);
  EXPECT_EQ(stream.state(), SendStreamState::kReady);
  EXPECT_EQ(stream.chunk_count(), 0u);
  EXPECT_EQ(stream.chunk_capacity(), 256u);  // within the cap: kept
  EXPECT_EQ(stream.queued_end(), 0u);
  EXPECT_EQ(stream.sent_end(), 0u);
  EXPECT_EQ(stream.bytes_acked_contiguous(), 0u);
  EXPECT_EQ(stream.lost_bytes(), 0u);
  EXPECT_EQ(stream.peer_max_stream_data(), 500u);
  EXPECT_EQ(stream.writable_bytes(), 1000u);
  EXPECT_FALSE(stream.final_size_known());
  EXPECT_FALSE(stream.wants_to_send(kLots));
  EXPECT_FALSE(stream.blocked_frame_due());
  EXPECT_FALSE(stream.reset_frame_due());
  EXPECT_FALSE(stream.finished());

  // The second stream: a complete transfer, byte-exact, under its own id
  // (PacketBench checks every frame's stream id) and limits: 600 bytes
  // queued against a limit of 500 stop at 500 with STREAM_DATA_BLOCKED due.
  const std::vector<uint8_t> second = pattern(600, 9);
  ASSERT_TRUE(stream.write(pool.copy_from(piece(second, 0, 64)), false));
  for (size_t at = 64; at < 600; at += 64) {
    ASSERT_TRUE(stream.write(pool.copy_from(piece(second, at, std::min<size_t>(64, 600 - at))),
                             at + 64 >= 600));
  }
  EXPECT_EQ(stream.writable_bytes(), 0u);  // FIN queued
  std::vector<SentFrame> frames = send_all(bench, stream, 1200);
  EXPECT_EQ(stream.sent_end(), 500u);
  EXPECT_TRUE(stream.blocked_frame_due());
  stream.on_max_stream_data(600);
  for (SentFrame& f : send_all(bench, stream, 1200)) frames.push_back(std::move(f));
  Receiver receiver;
  for (const SentFrame& f : frames) {
    receiver.deliver(f);
    stream.on_stream_frame_acked(f.record);
  }
  ASSERT_TRUE(receiver.complete());
  EXPECT_EQ(receiver.bytes(), second);
  EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
  EXPECT_EQ(pool.free_buffers(), free_at_start);
}

TEST(SendStreamRecycleTest, ReinitializeAfterResetForgetsTheReset) {
  ChunkPool pool(64, 8);
  SendStream stream(4, kLots, 1000);
  ASSERT_TRUE(stream.write(pool.copy_from(pattern(30, 1)), false));
  stream.on_stop_sending(77);
  ASSERT_TRUE(stream.reset_frame_due());
  stream.reinitialize(12, kLots, 1000);
  EXPECT_FALSE(stream.stop_sending_received());
  EXPECT_EQ(stream.stop_sending_error(), 0u);
  EXPECT_FALSE(stream.reset_frame_due());
  EXPECT_EQ(stream.reset_error_code(), 0u);
  EXPECT_EQ(stream.state(), SendStreamState::kReady);
  EXPECT_EQ(pool.free_buffers(), 8u);
  ASSERT_TRUE(stream.write(pool.copy_from(pattern(30, 1)), true));
  PacketBench bench;
  const std::vector<SentFrame> frames = send_all(bench, stream, 1200);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].record.offset, 0u);
  EXPECT_EQ(frames[0].record.length, 30u);
  EXPECT_TRUE(frames[0].record.fin);
}

TEST(SendStreamRecycleTest, RetireReleasesChunksAndLargeRingsAreTrimmed) {
  ChunkPool pool(16, 512);
  const std::vector<uint8_t> data = pattern(1000, 5);
  SendStream stream(4, kLots, 64 * 1024);
  for (size_t i = 0; i < 300; ++i)
    ASSERT_TRUE(stream.write(pool.copy_from(piece(data, i, 1)), false));
  EXPECT_EQ(stream.chunk_capacity(), 512u);
  EXPECT_EQ(pool.free_buffers(), 212u);
  stream.retire();
  EXPECT_EQ(pool.free_buffers(), 512u);
  EXPECT_EQ(stream.chunk_count(), 0u);
  stream.reinitialize(8, kLots, 64 * 1024);
  // Beyond the cap (256 slots): back to the initial ring.
  EXPECT_EQ(stream.chunk_capacity(), 8u);
  EXPECT_LE(stream.chunk_capacity(), SendStream::kMaxRetainedChunkSlots);
  ASSERT_TRUE(stream.write(pool.copy_from(piece(data, 0, 10)), true));
  EXPECT_EQ(stream.queued_end(), 10u);
}

// --- ReceiveBuffer / ReceiveStream ----------------------------------------------------------

TEST(ReceiveBufferRecycleTest, KeepsASmallRingAndGivesBackALargeOne) {
  BlockPool pool(256, 16, 4096);
  const std::vector<uint8_t> data = pattern(64 * 1024, 2);
  ReceiveBuffer buffer(pool, 1024);
  // A short stream: a 4-slot ring and a couple of gaps.
  ASSERT_EQ(buffer.insert(0, piece(data, 0, 100), kLots), ReceiveResult::kOk);
  ASSERT_EQ(buffer.insert(300, piece(data, 300, 100), kLots), ReceiveResult::kOk);
  ASSERT_EQ(buffer.insert(600, piece(data, 600, 100), kLots), ReceiveResult::kOk);
  const size_t small_ring = buffer.ring_capacity();
  const size_t small_ranges = buffer.range_capacity();
  EXPECT_EQ(small_ring, 4u);
  buffer.reinitialize();
  EXPECT_EQ(pool.blocks_in_use(), 0u);
  EXPECT_EQ(buffer.ring_capacity(), small_ring);
  EXPECT_EQ(buffer.range_capacity(), small_ranges);
  EXPECT_EQ(buffer.read_offset(), 0u);
  EXPECT_EQ(buffer.highest_received(), 0u);
  EXPECT_EQ(buffer.gap_count(), 0u);

  // A large one: 100 gaps and 40 KB span (160 blocks -> 256 ring slots).
  for (size_t i = 0; i < 100; ++i) {
    ASSERT_EQ(buffer.insert(1 + i * 400, piece(data, 1 + i * 400, 10), kLots), ReceiveResult::kOk);
  }
  EXPECT_EQ(buffer.gap_count(), 100u);
  EXPECT_GT(buffer.ring_capacity(), ReceiveBuffer::kMaxRetainedRingSlots);
  EXPECT_GT(buffer.range_capacity(), ReceiveBuffer::kMaxRetainedRanges);
  buffer.reinitialize(2);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
  EXPECT_EQ(buffer.ring_capacity(), 0u);
  EXPECT_EQ(buffer.range_capacity(), 2u);  // the initial reservation, at most max_gaps
  EXPECT_EQ(buffer.max_gaps(), 2u);

  // Usable from the empty ring, with the new gap bound.
  ASSERT_EQ(buffer.insert(1000, piece(data, 1000, 10), kLots), ReceiveResult::kOk);
  ASSERT_EQ(buffer.insert(2000, piece(data, 2000, 10), kLots), ReceiveResult::kOk);
  EXPECT_EQ(buffer.insert(3000, piece(data, 3000, 10), kLots), ReceiveResult::kTooFragmented);
  ASSERT_EQ(buffer.insert(0, piece(data, 0, 2010), kLots), ReceiveResult::kOk);
  std::vector<uint8_t> out(4000);
  ASSERT_EQ(buffer.read(out), 2010u);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 2010, data.begin()));
}

TEST(ReceiveStreamRecycleTest, RetireGivesBlocksBackAndReinitializeSetsTheGapBound) {
  BlockPool pool(256, 16, 4096);
  const std::vector<uint8_t> data = pattern(4096, 4);
  ReceiveStream stream(pool, 4096, 4096, 1024);
  uint64_t newly = 0;
  ASSERT_TRUE(stream.on_stream_frame(0, piece(data, 0, 700), false, newly).ok());
  ASSERT_TRUE(stream.on_stream_frame(1000, piece(data, 1000, 700), false, newly).ok());
  EXPECT_GT(pool.blocks_in_use(), 0u);
  stream.retire();
  EXPECT_EQ(pool.blocks_in_use(), 0u);

  stream.reinitialize(2048, 8192, 1);
  EXPECT_EQ(stream.buffer().max_gaps(), 1u);
  EXPECT_EQ(stream.state(), ReceiveStreamState::kRecv);
  EXPECT_EQ(stream.window().limit(), 2048u);
  ASSERT_TRUE(stream.on_stream_frame(100, piece(data, 100, 10), false, newly).ok());
  const TransportError error = stream.on_stream_frame(200, piece(data, 200, 10), false, newly);
  EXPECT_EQ(error.code, wire::TransportErrorCode::kProtocolViolation);
  ASSERT_TRUE(stream.on_stream_frame(0, piece(data, 0, 2048), true, newly).ok());
  std::vector<uint8_t> out(4096);
  bool fin = false;
  ASSERT_EQ(stream.read(out, fin, 0, kRtt), 2048u);
  EXPECT_TRUE(fin);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 2048, data.begin()));
  EXPECT_TRUE(stream.finished());
}

// --- No allocation once recycled ------------------------------------------------------------

// Short streams through one recycled SendStream and one ReceiveStream (a
// request of a few chunks, a lost frame, out-of-order arrival): after the
// first stream, reinitialize() and the whole stream allocate nothing.
TEST(StreamRecycleAllocTest, RecycledShortStreamsAllocateNothing) {
  ChunkPool chunks(256, 16);
  BlockPool blocks(1024, 16, 1024);
  const std::vector<uint8_t> data = pattern(1024, 6);
  auto storage = std::make_unique<transmit::GatherStorage>();
  std::vector<uint8_t> packet(1200);
  std::array<uint8_t, 2048> out{};
  SendStream send(0, kLots, 64 * 1024);
  ReceiveStream receive(blocks, 64 * 1024, 1024 * 1024, 1024);

  // One stream: 3 chunks + FIN sent in 150-byte packets; the receiver gets
  // every frame but the first, then the first's retransmission.
  auto one_stream = [&](uint64_t index) {
    std::array<StreamFrameRecord, 16> records{};
    size_t count = 0;
    for (size_t c = 0; c < 3; ++c) {
      if (!send.write(chunks.copy_from(piece(data, c * 100 + index % 50, 100)), c == 2))
        return false;
    }
    uint64_t credit = kLots;
    uint64_t new_bytes = 0;
    while (count < records.size()) {
      transmit::PacketPayloadWriter writer(std::span<uint8_t>(packet).first(150), *storage);
      const bool written = send.write_stream_frame(writer, credit, records[count], new_bytes);
      storage->clear();
      if (!written) break;
      ++count;
    }
    if (count < 3) return false;
    send.on_stream_frame_lost(records[0]);
    for (size_t i = 1; i < count; ++i) send.on_stream_frame_acked(records[i]);
    transmit::PacketPayloadWriter writer(std::span<uint8_t>(packet), *storage);
    StreamFrameRecord retransmitted{};
    if (!send.write_stream_frame(writer, credit, retransmitted, new_bytes)) return false;
    storage->clear();
    send.on_stream_frame_acked(retransmitted);
    if (!send.finished()) return false;

    uint64_t newly = 0;
    const uint64_t base = index % 50;
    for (size_t i = 1; i < count; ++i) {
      const StreamFrameRecord& r = records[i];
      if (!receive.on_stream_frame(r.offset, piece(data, base + r.offset, r.length), r.fin, newly)
               .ok())
        return false;
    }
    const StreamFrameRecord& first = records[0];
    if (!receive
             .on_stream_frame(first.offset, piece(data, base + first.offset, first.length),
                              first.fin, newly)
             .ok())
      return false;
    bool fin = false;
    const size_t n = receive.read(out, fin, 0, kRtt);
    if (n != 300 || !fin || !receive.finished()) return false;
    return std::equal(out.begin(), out.begin() + 300,
                      data.begin() + static_cast<std::ptrdiff_t>(base));
  };
  auto recycle = [&](uint64_t index) {
    send.retire();
    receive.retire();
    send.reinitialize(index * 4, kLots, 64 * 1024);
    receive.reinitialize(64 * 1024, 1024 * 1024, 1024);
  };

  ASSERT_TRUE(one_stream(0));
  size_t allocations = 0;
  bool ok = true;
  {
    ::dpquic::testing::AllocationWindow window;
    for (uint64_t i = 1; i <= 1000 && ok; ++i) {
      recycle(i);
      ok = one_stream(i);
    }
    allocations = window.count();
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(chunks.free_buffers(), 16u);
  EXPECT_EQ(blocks.blocks_in_use(), 0u);
}

}  // namespace
}  // namespace dpquic::conn
