#include "quic/conn/send_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "quic/transmit/chunk.h"
#include "quic/wire/frames.h"
#include "tests/quic/conn/send_stream_bench.h"

namespace dpquic::conn {
namespace {

using testing::ack_all;
using testing::Chunk;
using testing::ChunkPool;
using testing::decode_one;
using testing::kLots;
using testing::kStreamId;
using testing::PacketBench;
using testing::pattern;
using testing::Receiver;
using testing::SentFrame;

TEST(SendStreamTest, SendsEverythingByteExactAndReleasesChunks) {
  ChunkPool pool(4096, 16);
  const size_t free_at_start = pool.free_buffers();
  const std::vector<uint8_t> data = pattern(10000, 1);
  SendStream stream(kStreamId, kLots, 64 * 1024);
  EXPECT_EQ(stream.state(), SendStreamState::kReady);
  // Chunks of uneven sizes; the last carries FIN.
  const size_t sizes[] = {1, 4096, 700, 3000, 2203};
  size_t at = 0;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    Chunk chunk = pool.copy_from(std::span<const uint8_t>(data).subspan(at, sizes[i]));
    ASSERT_TRUE(chunk.valid());
    ASSERT_TRUE(stream.write(std::move(chunk), i + 1 == std::size(sizes)));
    at += sizes[i];
  }
  ASSERT_EQ(at, data.size());
  EXPECT_EQ(stream.queued_end(), 10000u);
  EXPECT_EQ(stream.chunk_count(), 5u);

  PacketBench bench;
  Receiver receiver;
  std::vector<SentFrame> all;
  uint64_t new_total = 0;
  while (stream.wants_to_send(kLots)) {
    std::vector<SentFrame> frames = bench.send(stream, 1200);
    ASSERT_FALSE(frames.empty());
    // Packets are filled: at most a frame header and one byte are left over.
    if (stream.sent_end() < 10000) {
      EXPECT_GE(bench.last_written(), 1200u - 6u);
    }
    for (SentFrame& f : frames) {
      new_total += f.new_bytes;
      all.push_back(std::move(f));
    }
    EXPECT_EQ(stream.state(),
              stream.sent_end() == 10000 ? SendStreamState::kDataSent : SendStreamState::kSend);
  }
  EXPECT_EQ(new_total, 10000u);
  EXPECT_EQ(stream.sent_end(), 10000u);
  // Only the last frame carries FIN; frames never span chunks.
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].record.fin, i + 1 == all.size());
  const uint64_t boundaries[] = {1, 4097, 4797, 7797, 10000};
  for (const SentFrame& f : all) {
    for (uint64_t b : boundaries) {
      EXPECT_FALSE(f.record.offset < b && f.record.offset + f.record.length > b)
          << "frame [" << f.record.offset << ", +" << f.record.length << ") spans " << b;
    }
  }
  EXPECT_EQ(stream.state(), SendStreamState::kDataSent);
  EXPECT_EQ(pool.free_buffers(), free_at_start - 5);

  // Acknowledge in reverse: nothing is released until the first bytes are.
  for (size_t i = all.size(); i-- > 1;) {
    receiver.deliver(all[i]);
    stream.on_stream_frame_acked(all[i].record);
  }
  EXPECT_EQ(stream.bytes_acked_contiguous(), 0u);
  EXPECT_EQ(stream.chunk_count(), 5u);
  receiver.deliver(all[0]);
  stream.on_stream_frame_acked(all[0].record);
  EXPECT_EQ(stream.bytes_acked_contiguous(), 10000u);
  EXPECT_EQ(stream.chunk_count(), 0u);
  EXPECT_EQ(pool.free_buffers(), free_at_start);
  EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
  EXPECT_TRUE(stream.finished());
  EXPECT_FALSE(stream.wants_to_send(kLots));
  ASSERT_TRUE(receiver.complete());
  EXPECT_EQ(receiver.bytes(), data);
}

TEST(SendStreamTest, OneFramePerChunkPieceAndChunksReleasedInOrder) {
  ChunkPool pool(16, 64);
  const std::vector<uint8_t> data = pattern(200, 2);
  SendStream stream(kStreamId, kLots, 1000);
  for (size_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        stream.write(pool.copy_from(std::span<const uint8_t>(data).subspan(i * 10, 10)), false));
  }
  EXPECT_EQ(stream.chunk_count(), 20u);
  EXPECT_EQ(stream.chunk_capacity(), 256u);  // 8, then straight to 256
  PacketBench bench;
  Receiver receiver;
  const std::vector<SentFrame> frames = bench.send(stream, 1200);
  ASSERT_EQ(frames.size(), 20u);
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].record.offset, i * 10);
    EXPECT_EQ(frames[i].record.length, 10u);
    EXPECT_FALSE(frames[i].record.fin);
  }
  for (size_t i = 0; i < 5; ++i) {
    receiver.deliver(frames[i]);
    stream.on_stream_frame_acked(frames[i].record);
  }
  EXPECT_EQ(stream.chunk_count(), 15u);
  EXPECT_EQ(pool.free_buffers(), 64u - 15u);
  // FIN alone, after all data was sent.
  EXPECT_FALSE(stream.wants_to_send(kLots));
  ASSERT_TRUE(stream.write(Chunk(), true));
  EXPECT_TRUE(stream.wants_to_send(0));
  const std::vector<SentFrame> fin = bench.send(stream, 1200);
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].record.offset, 200u);
  EXPECT_EQ(fin[0].record.length, 0u);
  EXPECT_TRUE(fin[0].record.fin);
  EXPECT_EQ(fin[0].new_bytes, 0u);
  ack_all(stream, receiver, std::vector<SentFrame>(frames.begin() + 5, frames.end()));
  EXPECT_EQ(stream.state(), SendStreamState::kDataSent);
  ack_all(stream, receiver, fin);
  EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
  EXPECT_EQ(pool.free_buffers(), 64u);
  EXPECT_EQ(stream.chunk_capacity(), 256u);  // kept
  ASSERT_TRUE(receiver.complete());
  EXPECT_EQ(receiver.bytes(), data);
}

TEST(SendStreamTest, FinOnlyStreamAndWritesAfterFinRefused) {
  ChunkPool pool(16, 4);
  SendStream stream(kStreamId, /*peer_max_stream_data=*/0, 100);
  Chunk zero = pool.copy_from({});
  ASSERT_TRUE(zero.valid());
  ASSERT_TRUE(stream.write(zero, true));
  EXPECT_EQ(stream.chunk_count(), 0u);  // nothing to hold
  EXPECT_EQ(stream.writable_bytes(), 0u);
  Chunk more = pool.copy_from(pattern(5, 3));
  EXPECT_FALSE(stream.write(more, false));
  EXPECT_FALSE(stream.write(Chunk(), true));
  EXPECT_EQ(more.use_count(), 1u);           // not kept
  EXPECT_FALSE(stream.blocked_frame_due());  // no data beyond the limit
  PacketBench bench;
  uint64_t credit = 0;
  const std::vector<SentFrame> frames = bench.send(stream, 100, credit);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].record.offset, 0u);
  EXPECT_EQ(frames[0].record.length, 0u);
  EXPECT_TRUE(frames[0].record.fin);
  // Type 0x0b (LEN|FIN, no OFF), stream 4, length 0: exact size.
  EXPECT_EQ(bench.last_written(), 3u);
  EXPECT_EQ(stream.state(), SendStreamState::kDataSent);
  EXPECT_FALSE(stream.wants_to_send(kLots));
  // Lost FIN: sent again.
  stream.on_stream_frame_lost(frames[0].record);
  EXPECT_TRUE(stream.wants_to_send(0));
  const std::vector<SentFrame> again = bench.send(stream, 100, credit);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].record.fin);
  stream.on_stream_frame_acked(again[0].record);
  EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
  EXPECT_TRUE(stream.finished());
}

TEST(SendStreamTest, LostFinIsRetransmittedWithTheLastBytes) {
  ChunkPool pool(1024, 4);
  const std::vector<uint8_t> data = pattern(300, 4);
  SendStream stream(kStreamId, kLots, 1000);
  ASSERT_TRUE(stream.write(pool.copy_from(data), true));
  PacketBench bench;
  Receiver receiver;
  const std::vector<SentFrame> first = bench.send(stream, 1200);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].record.fin);
  stream.on_stream_frame_lost(first[0].record);
  EXPECT_EQ(stream.lost_bytes(), 300u);
  // Retransmitted in small packets: only the piece ending at 300 has FIN.
  std::vector<SentFrame> retransmitted;
  while (stream.wants_to_send(0)) {
    uint64_t credit = 0;
    for (SentFrame& f : bench.send(stream, 120, credit)) {
      EXPECT_EQ(f.new_bytes, 0u);
      retransmitted.push_back(std::move(f));
    }
  }
  ASSERT_EQ(retransmitted.size(), 3u);
  EXPECT_FALSE(retransmitted[0].record.fin);
  EXPECT_FALSE(retransmitted[1].record.fin);
  EXPECT_TRUE(retransmitted[2].record.fin);
  EXPECT_EQ(retransmitted[2].record.offset + retransmitted[2].record.length, 300u);
  ack_all(stream, receiver, retransmitted);
  EXPECT_TRUE(stream.finished());
  ASSERT_TRUE(receiver.complete());
  EXPECT_EQ(receiver.bytes(), data);
}

TEST(SendStreamTest, RetransmissionSkipsBytesAcknowledgedMeanwhile) {
  ChunkPool pool(1024, 4);
  const std::vector<uint8_t> data = pattern(300, 5);
  SendStream stream(kStreamId, kLots, 1000);
  ASSERT_TRUE(stream.write(pool.copy_from(data), false));
  PacketBench bench;
  Receiver receiver;
  // Small frames A, B, C, ... (B is in the middle).
  std::vector<SentFrame> small;
  while (stream.wants_to_send(kLots)) {
    for (SentFrame& f : bench.send(stream, 104)) small.push_back(std::move(f));
  }
  ASSERT_GE(small.size(), 3u);
  for (const SentFrame& f : small) stream.on_stream_frame_lost(f.record);
  EXPECT_EQ(stream.lost_bytes(), 300u);
  // All lost, retransmitted as one frame R.
  const std::vector<SentFrame> big = bench.send(stream, 1200);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0].record.offset, 0u);
  EXPECT_EQ(big[0].record.length, 300u);
  EXPECT_EQ(big[0].new_bytes, 0u);
  // B was only late (spurious loss): its ACK arrives, then R is lost. Only
  // what is still unacknowledged is queued again.
  receiver.deliver(small[1]);
  stream.on_stream_frame_acked(small[1].record);
  stream.on_stream_frame_lost(big[0].record);
  const uint64_t b_begin = small[1].record.offset;
  const uint64_t b_end = b_begin + small[1].record.length;
  EXPECT_EQ(stream.lost_bytes(), 300u - small[1].record.length);
  std::vector<SentFrame> again;
  while (stream.wants_to_send(0)) {
    uint64_t credit = 0;
    for (SentFrame& f : bench.send(stream, 1200, credit)) again.push_back(std::move(f));
  }
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].record.offset, 0u);
  EXPECT_EQ(again[0].record.offset + again[0].record.length, b_begin);
  EXPECT_EQ(again[1].record.offset, b_end);
  EXPECT_EQ(again[1].record.offset + again[1].record.length, 300u);
  // A late ACK of a range still queued for retransmission removes it.
  stream.on_stream_frame_lost(again[1].record);
  EXPECT_TRUE(stream.wants_to_send(0));
  receiver.deliver(again[1]);
  stream.on_stream_frame_acked(again[1].record);
  EXPECT_FALSE(stream.wants_to_send(0));
  ack_all(stream, receiver, {again[0]});
  EXPECT_EQ(stream.bytes_acked_contiguous(), 300u);
  EXPECT_EQ(stream.chunk_count(), 0u);
  EXPECT_EQ(stream.state(), SendStreamState::kSend);  // no FIN yet
  EXPECT_EQ(receiver.bytes(), data);
}

TEST(SendStreamTest, StreamLimitAndBlockedFrameOncePerLimit) {
  ChunkPool pool(4096, 4);
  const std::vector<uint8_t> data = pattern(3000, 6);
  SendStream stream(kStreamId, 1000, 1 << 20);
  ASSERT_TRUE(stream.write(pool.copy_from(data), true));
  EXPECT_FALSE(stream.blocked_frame_due());  // nothing sent yet, not blocked
  PacketBench bench;
  Receiver receiver;
  std::vector<SentFrame> all;
  while (true) {
    std::vector<SentFrame> frames = bench.send(stream, 1200);
    if (frames.empty()) break;
    for (SentFrame& f : frames) all.push_back(std::move(f));
  }
  EXPECT_EQ(stream.sent_end(), 1000u);
  EXPECT_TRUE(stream.blocked_frame_due());
  EXPECT_TRUE(stream.wants_to_send(kLots));

  std::array<uint8_t, 32> buffer{};
  wire::ByteWriter writer(buffer);
  ASSERT_TRUE(stream.write_blocked_frame(writer));
  // STREAM_DATA_BLOCKED (0x15), stream 4, limit 1000 (0x43e8).
  ASSERT_EQ(writer.position(), 4u);
  EXPECT_EQ(std::vector<uint8_t>(buffer.begin(), buffer.begin() + 4),
            (std::vector<uint8_t>{0x15, 0x04, 0x43, 0xe8}));
  const wire::Frame blocked = decode_one(std::span<const uint8_t>(buffer.data(), 4));
  EXPECT_EQ(blocked.type, wire::FrameType::kStreamDataBlocked);
  EXPECT_EQ(blocked.stream_data_blocked.maximum_stream_data, 1000u);
  // Once per limit value.
  EXPECT_FALSE(stream.blocked_frame_due());
  EXPECT_FALSE(stream.wants_to_send(kLots));
  wire::ByteWriter second(buffer);
  EXPECT_FALSE(stream.write_blocked_frame(second));
  EXPECT_EQ(second.position(), 0u);
  // Lost: due again for the same limit.
  stream.on_blocked_frame_lost();
  EXPECT_TRUE(stream.blocked_frame_due());
  wire::ByteWriter third(buffer);
  ASSERT_TRUE(stream.write_blocked_frame(third));
  EXPECT_FALSE(stream.blocked_frame_due());

  // A lower MAX_STREAM_DATA changes nothing.
  stream.on_max_stream_data(900);
  EXPECT_EQ(stream.peer_max_stream_data(), 1000u);
  EXPECT_FALSE(stream.wants_to_send(kLots));
  // A higher one: sends up to it, then one blocked frame for the new value.
  stream.on_max_stream_data(2000);
  EXPECT_FALSE(stream.blocked_frame_due());
  EXPECT_TRUE(stream.wants_to_send(kLots));
  while (true) {
    std::vector<SentFrame> frames = bench.send(stream, 1200);
    if (frames.empty()) break;
    for (SentFrame& f : frames) all.push_back(std::move(f));
  }
  EXPECT_EQ(stream.sent_end(), 2000u);
  EXPECT_TRUE(stream.blocked_frame_due());
  wire::ByteWriter fourth(buffer);
  ASSERT_TRUE(stream.write_blocked_frame(fourth));
  EXPECT_EQ(decode_one(std::span<const uint8_t>(buffer.data(), fourth.position()))
                .stream_data_blocked.maximum_stream_data,
            2000u);
  // The peer raised the limit before the 2000 frame was declared lost: that
  // frame is stale, so its loss re-arms nothing.
  stream.on_max_stream_data(3000);
  stream.on_blocked_frame_lost();  // the 2000 frame: stale now
  EXPECT_FALSE(stream.blocked_frame_due());
  while (true) {
    std::vector<SentFrame> frames = bench.send(stream, 1200);
    if (frames.empty()) break;
    for (SentFrame& f : frames) all.push_back(std::move(f));
  }
  EXPECT_EQ(stream.sent_end(), 3000u);
  EXPECT_FALSE(stream.blocked_frame_due());  // nothing queued beyond the limit
  EXPECT_TRUE(all.back().record.fin);
  ack_all(stream, receiver, all);
  EXPECT_TRUE(stream.finished());
  EXPECT_EQ(receiver.bytes(), data);
}

TEST(SendStreamTest, ConnectionCreditLimitsNewBytesOnly) {
  ChunkPool pool(4096, 4);
  const std::vector<uint8_t> data = pattern(1000, 7);
  SendStream stream(kStreamId, kLots, 1 << 20);
  ASSERT_TRUE(stream.write(pool.copy_from(data), false));
  PacketBench bench;
  uint64_t credit = 0;
  EXPECT_FALSE(stream.wants_to_send(0));
  EXPECT_TRUE(bench.send(stream, 1200, credit).empty());
  EXPECT_FALSE(stream.blocked_frame_due());  // the stream limit is not what blocks
  credit = 300;
  EXPECT_TRUE(stream.wants_to_send(credit));
  const std::vector<SentFrame> frames = bench.send(stream, 1200, credit);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].record.length, 300u);
  EXPECT_EQ(frames[0].new_bytes, 300u);
  EXPECT_EQ(credit, 0u);
  EXPECT_EQ(stream.sent_end(), 300u);
  EXPECT_FALSE(stream.wants_to_send(0));
  // Retransmission needs no credit and charges none.
  stream.on_stream_frame_lost(frames[0].record);
  EXPECT_TRUE(stream.wants_to_send(0));
  const std::vector<SentFrame> again = bench.send(stream, 1200, credit);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].record.offset, 0u);
  EXPECT_EQ(again[0].record.length, 300u);
  EXPECT_EQ(again[0].new_bytes, 0u);
  EXPECT_EQ(again[0].data, std::vector<uint8_t>(data.begin(), data.begin() + 300));
  // Credit split across packets and frames: the total never exceeds it.
  credit = 450;
  uint64_t new_total = 0;
  while (stream.wants_to_send(credit)) {
    for (const SentFrame& f : bench.send(stream, 100, credit)) new_total += f.new_bytes;
  }
  EXPECT_EQ(new_total, 450u);
  EXPECT_EQ(stream.sent_end(), 750u);
}

TEST(SendStreamTest, BackPressureOnUnacknowledgedBytes) {
  ChunkPool pool(1024, 8);
  SendStream stream(kStreamId, kLots, 1000);
  EXPECT_EQ(stream.writable_bytes(), 1000u);
  Chunk a = pool.copy_from(pattern(600, 8));
  ASSERT_TRUE(stream.write(a, false));
  EXPECT_EQ(stream.writable_bytes(), 400u);
  Chunk b = pool.copy_from(pattern(500, 9));
  EXPECT_FALSE(stream.write(b, true));  // refused whole, FIN included
  EXPECT_EQ(b.use_count(), 1u);
  EXPECT_EQ(stream.queued_end(), 600u);
  EXPECT_EQ(a.use_count(), 2u);
  PacketBench bench;
  const std::vector<SentFrame> frames = bench.send(stream, 1200);
  EXPECT_EQ(stream.writable_bytes(), 400u);  // sent is not acknowledged
  for (const SentFrame& f : frames) stream.on_stream_frame_acked(f.record);
  EXPECT_EQ(a.use_count(), 1u);
  EXPECT_EQ(stream.writable_bytes(), 1000u);
  EXPECT_TRUE(stream.write(b, true));
  EXPECT_EQ(stream.writable_bytes(), 0u);  // after FIN
}

TEST(SendStreamTest, ResetSendsFinalSizeStopsDataAndReleasesChunks) {
  ChunkPool pool(2048, 8);
  SendStream stream(kStreamId, kLots, 1 << 20);
  std::vector<Chunk> held;
  for (uint32_t i = 0; i < 3; ++i) {
    held.push_back(pool.copy_from(pattern(1000, 10 + i)));
    ASSERT_TRUE(stream.write(held.back(), false));
  }
  PacketBench bench;
  const std::vector<SentFrame> frames = bench.send(stream, 1200);
  ASSERT_EQ(frames.size(),
            2u);  // 1000 from the first chunk, the rest of the packet from the second
  const uint64_t sent = stream.sent_end();
  EXPECT_GT(sent, 1000u);
  EXPECT_LT(sent, 3000u);
  for (const Chunk& c : held) EXPECT_EQ(c.use_count(), 2u);

  stream.reset(0x77);
  EXPECT_EQ(stream.state(), SendStreamState::kResetSent);
  for (const Chunk& c : held) EXPECT_EQ(c.use_count(), 1u);  // all released at once
  EXPECT_EQ(stream.chunk_count(), 0u);
  EXPECT_TRUE(stream.final_size_known());
  EXPECT_EQ(stream.final_size(), sent);
  EXPECT_TRUE(stream.reset_frame_due());
  EXPECT_TRUE(stream.wants_to_send(0));
  EXPECT_TRUE(bench.send(stream, 1200).empty());  // no more STREAM frames
  EXPECT_FALSE(stream.blocked_frame_due());
  EXPECT_FALSE(stream.write(pool.copy_from(pattern(10, 1)), false));
  EXPECT_EQ(stream.writable_bytes(), 0u);

  std::array<uint8_t, 32> buffer{};
  wire::ByteWriter writer(buffer);
  ASSERT_TRUE(stream.write_reset_frame(writer));
  // RESET_STREAM (0x04), stream 4, error 0x77 (2-byte varint), final size.
  std::vector<uint8_t> expected = {0x04, 0x04, 0x40, 0x77};
  expected.push_back(static_cast<uint8_t>(0x40 | (sent >> 8)));
  expected.push_back(static_cast<uint8_t>(sent));
  EXPECT_EQ(std::vector<uint8_t>(buffer.begin(), buffer.begin() + writer.position()), expected);
  const wire::Frame frame = decode_one(std::span<const uint8_t>(buffer.data(), writer.position()));
  ASSERT_EQ(frame.type, wire::FrameType::kResetStream);
  EXPECT_EQ(frame.reset_stream.stream_id, kStreamId);
  EXPECT_EQ(frame.reset_stream.application_error_code, 0x77u);
  EXPECT_EQ(frame.reset_stream.final_size, sent);
  EXPECT_FALSE(stream.reset_frame_due());
  EXPECT_FALSE(stream.wants_to_send(kLots));

  // Data losses and ACKs after the reset change nothing.
  for (const SentFrame& f : frames) stream.on_stream_frame_lost(f.record);
  EXPECT_EQ(stream.lost_bytes(), 0u);
  EXPECT_FALSE(stream.wants_to_send(kLots));
  stream.on_stream_frame_acked(frames[0].record);
  EXPECT_EQ(stream.bytes_acked_contiguous(), 0u);
  // A second reset or a STOP_SENDING keeps the first code.
  stream.reset(1);
  stream.on_stop_sending(2);
  EXPECT_EQ(stream.reset_error_code(), 0x77u);
  EXPECT_TRUE(stream.stop_sending_received());
  EXPECT_EQ(stream.stop_sending_error(), 2u);

  stream.on_reset_frame_lost();
  EXPECT_TRUE(stream.reset_frame_due());
  wire::ByteWriter again(buffer);
  ASSERT_TRUE(stream.write_reset_frame(again));
  EXPECT_EQ(again.position(), expected.size());
  stream.on_reset_frame_acked();
  EXPECT_EQ(stream.state(), SendStreamState::kResetRecvd);
  EXPECT_TRUE(stream.finished());
  stream.on_reset_frame_lost();  // after the ACK: stays done
  EXPECT_FALSE(stream.reset_frame_due());
  EXPECT_FALSE(stream.wants_to_send(kLots));
}

TEST(SendStreamTest, ResetBeforeSendingHasFinalSizeZero) {
  ChunkPool pool(64, 2);
  SendStream stream(kStreamId, kLots, 100);
  Chunk chunk = pool.copy_from(pattern(50, 1));
  ASSERT_TRUE(stream.write(chunk, true));
  EXPECT_EQ(stream.state(), SendStreamState::kReady);
  stream.reset(9);
  EXPECT_EQ(chunk.use_count(), 1u);
  EXPECT_EQ(stream.final_size(), 0u);
  std::array<uint8_t, 16> buffer{};
  wire::ByteWriter writer(buffer);
  ASSERT_TRUE(stream.write_reset_frame(writer));
  EXPECT_EQ(std::vector<uint8_t>(buffer.begin(), buffer.begin() + writer.position()),
            (std::vector<uint8_t>{0x04, 0x04, 0x09, 0x00}));
  // Too small a buffer: nothing written, still due.
  stream.on_reset_frame_lost();
  std::array<uint8_t, 3> tiny{};
  wire::ByteWriter small(tiny);
  EXPECT_FALSE(stream.write_reset_frame(small));
  EXPECT_EQ(small.position(), 0u);
  EXPECT_TRUE(stream.reset_frame_due());
}

TEST(SendStreamTest, StopSendingResetsWithThePeersCode) {
  ChunkPool pool(2048, 4);
  SendStream stream(kStreamId, kLots, 1 << 20);
  Chunk chunk = pool.copy_from(pattern(1500, 11));
  ASSERT_TRUE(stream.write(chunk, false));
  PacketBench bench;
  ASSERT_EQ(bench.send(stream, 1200).size(), 1u);
  EXPECT_EQ(stream.state(), SendStreamState::kSend);
  EXPECT_FALSE(stream.stop_sending_received());
  stream.on_stop_sending(42);
  EXPECT_TRUE(stream.stop_sending_received());
  EXPECT_EQ(stream.stop_sending_error(), 42u);
  EXPECT_EQ(stream.state(), SendStreamState::kResetSent);
  EXPECT_EQ(stream.reset_error_code(), 42u);
  EXPECT_EQ(stream.final_size(), stream.sent_end());
  EXPECT_EQ(chunk.use_count(), 1u);
  std::array<uint8_t, 16> buffer{};
  wire::ByteWriter writer(buffer);
  ASSERT_TRUE(stream.write_reset_frame(writer));
  const wire::Frame frame = decode_one(std::span<const uint8_t>(buffer.data(), writer.position()));
  EXPECT_EQ(frame.reset_stream.application_error_code, 42u);
  EXPECT_EQ(frame.reset_stream.final_size, stream.sent_end());
}

TEST(SendStreamTest, StopSendingAfterEverythingAcknowledgedChangesNothing) {
  ChunkPool pool(64, 2);
  SendStream stream(kStreamId, kLots, 100);
  ASSERT_TRUE(stream.write(pool.copy_from(pattern(20, 12)), true));
  PacketBench bench;
  for (const SentFrame& f : bench.send(stream, 100)) stream.on_stream_frame_acked(f.record);
  EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
  stream.on_stop_sending(5);
  stream.reset(6);
  EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
  EXPECT_FALSE(stream.reset_frame_due());
  EXPECT_TRUE(stream.stop_sending_received());
  EXPECT_TRUE(stream.finished());
}

TEST(SendStreamTest, RefusesOffsetsBeyondTheVarintRange) {
  // A chunk claiming 2^62 - 1 bytes (never read: nothing is sent).
  transmit::ChunkOwner owner;
  owner.on_last_release = [](transmit::ChunkOwner*) {};
  const uint8_t byte = 0;
  {
    // Credit for the whole range: only the offsets limit the writes.
    SendStream stream(kStreamId, wire::kVarintMax, UINT64_MAX);
    ASSERT_TRUE(stream.write(Chunk(&owner, &byte, wire::kVarintMax - 1), false));
    EXPECT_EQ(stream.queued_end(), wire::kVarintMax - 1);
    EXPECT_FALSE(stream.write(Chunk(&owner, &byte, 2), false));
    EXPECT_TRUE(stream.write(Chunk(&owner, &byte, 1), true));
    EXPECT_EQ(stream.queued_end(), wire::kVarintMax);
    EXPECT_EQ(owner.references, 2u);
  }
  EXPECT_EQ(owner.references, 0u);
}

// Random packet sizes, random loss and ACK order, spurious losses, growing
// limits, with a fixed seed, until everything is acknowledged.
TEST(SendStreamTest, RandomLossAndAckUntilDoneIsByteExact) {
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE(seed);
    std::mt19937_64 random(seed);
    ChunkPool pool(4096, 64);
    const size_t free_at_start = pool.free_buffers();
    const std::vector<uint8_t> data = pattern(200000 + seed * 777, seed);
    SendStream stream(kStreamId + 4 * seed, 4000, 48 * 1024);
    PacketBench bench;
    Receiver receiver;
    std::vector<SentFrame> in_flight;
    std::vector<SentFrame> declared_lost;  // may still be acknowledged late
    size_t written = 0;
    uint64_t connection_credit = 3000;
    uint64_t credit_granted = 3000;
    uint64_t new_total = 0;
    uint64_t blocked_frames = 0;
    uint64_t losses = 0;
    uint64_t late_acks = 0;
    int rounds = 0;
    while (!stream.finished()) {
      ASSERT_LT(++rounds, 200000);
      // The application writes what back-pressure and the pool allow.
      while (written < data.size()) {
        const size_t n = std::min<size_t>(1 + random() % 4096, data.size() - written);
        if (n > stream.writable_bytes()) break;
        Chunk chunk = pool.copy_from(std::span<const uint8_t>(data).subspan(written, n));
        if (!chunk.valid()) break;
        ASSERT_TRUE(stream.write(std::move(chunk), written + n == data.size()));
        written += n;
      }
      // The peer's receiver opens windows now and then.
      if (random() % 8 == 0) stream.on_max_stream_data(stream.sent_end() + random() % 8000);
      if (random() % 3 == 0) {
        const uint64_t more = random() % 20000;
        connection_credit += more;
        credit_granted += more;
      }
      if (stream.blocked_frame_due()) {
        std::array<uint8_t, 32> buffer{};
        wire::ByteWriter writer(buffer);
        ASSERT_TRUE(stream.write_blocked_frame(writer));
        ++blocked_frames;
        if (random() % 2 == 0) stream.on_blocked_frame_lost();
      }
      if (stream.wants_to_send(connection_credit)) {
        const size_t size = 10 + random() % 1490;
        for (SentFrame& f : bench.send(stream, size, connection_credit)) {
          new_total += f.new_bytes;
          in_flight.push_back(std::move(f));
        }
      }
      ASSERT_LE(stream.sent_end(), stream.peer_max_stream_data());
      ASSERT_LE(new_total, credit_granted);
      ASSERT_EQ(new_total, stream.sent_end());
      // ACK, lose, or keep each frame in flight, in a shuffled order.
      std::shuffle(in_flight.begin(), in_flight.end(), random);
      std::vector<SentFrame> keep;
      for (SentFrame& f : in_flight) {
        const uint64_t roll = random() % 10;
        if (roll < 4) {
          receiver.deliver(f);
          stream.on_stream_frame_acked(f.record);
        } else if (roll < 6) {
          stream.on_stream_frame_lost(f.record);
          declared_lost.push_back(std::move(f));
          ++losses;
        } else {
          keep.push_back(std::move(f));
        }
      }
      in_flight = std::move(keep);
      // A few losses were spurious: the frame arrives after all.
      for (size_t i = 0; i < declared_lost.size();) {
        if (random() % 16 == 0) {
          receiver.deliver(declared_lost[i]);
          stream.on_stream_frame_acked(declared_lost[i].record);
          ++late_acks;
          declared_lost[i] = std::move(declared_lost.back());
          declared_lost.pop_back();
        } else {
          ++i;
        }
      }
      if (declared_lost.size() > 256)
        declared_lost.erase(declared_lost.begin(), declared_lost.begin() + 128);
    }
    EXPECT_EQ(written, data.size());
    EXPECT_EQ(stream.state(), SendStreamState::kDataRecvd);
    EXPECT_EQ(stream.bytes_acked_contiguous(), data.size());
    EXPECT_EQ(stream.chunk_count(), 0u);
    EXPECT_EQ(pool.free_buffers(), free_at_start);
    EXPECT_GT(blocked_frames, 0u);
    EXPECT_GT(losses, 100u);
    EXPECT_GT(late_acks, 10u);
    ASSERT_TRUE(receiver.complete());
    EXPECT_EQ(receiver.final_size(), data.size());
    EXPECT_TRUE(receiver.bytes() == data);
  }
}

// A reset in the middle of a lossy transfer releases every chunk at once.
TEST(SendStreamTest, RandomTransferThenResetReleasesEverything) {
  std::mt19937_64 random(99);
  ChunkPool pool(1024, 128);
  const size_t free_at_start = pool.free_buffers();
  SendStream stream(kStreamId, kLots, 64 * 1024);
  const std::vector<uint8_t> data = pattern(1024, 13);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(stream.write(pool.copy_from(data), false));
  PacketBench bench;
  std::vector<SentFrame> in_flight;
  for (int i = 0; i < 20; ++i) {
    for (SentFrame& f : bench.send(stream, 200 + random() % 1300))
      in_flight.push_back(std::move(f));
  }
  for (size_t i = 0; i < in_flight.size(); ++i) {
    if (i % 3 == 0) stream.on_stream_frame_acked(in_flight[i].record);
    if (i % 3 == 1) stream.on_stream_frame_lost(in_flight[i].record);
  }
  EXPECT_GT(stream.lost_bytes(), 0u);
  const uint64_t sent = stream.sent_end();
  stream.reset(3);
  EXPECT_EQ(pool.free_buffers(), free_at_start);
  EXPECT_EQ(stream.final_size(), sent);
  EXPECT_EQ(stream.lost_bytes(), 0u);
  EXPECT_TRUE(bench.send(stream, 1200).empty());
}

}  // namespace
}  // namespace dpquic::conn
