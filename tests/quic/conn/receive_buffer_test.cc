#include "quic/conn/receive_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace dpquic::conn {
namespace {

std::vector<uint8_t> pattern(size_t size, uint32_t seed = 1) {
  std::vector<uint8_t> bytes(size);
  std::mt19937 rng(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

std::span<const uint8_t> slice(const std::vector<uint8_t>& bytes, uint64_t offset, size_t len) {
  return std::span<const uint8_t>(bytes).subspan(static_cast<size_t>(offset), len);
}

std::vector<uint8_t> read_all(ReceiveBuffer& buffer) {
  std::vector<uint8_t> out;
  for (auto piece = buffer.readable(); !piece.empty(); piece = buffer.readable()) {
    out.insert(out.end(), piece.begin(), piece.end());
    buffer.consume(piece.size());
  }
  return out;
}

constexpr uint64_t kBigLimit = uint64_t{1} << 40;

TEST(ReceiveBufferTest, InOrderDataIsReadablePiecewiseAtBlockBoundaries) {
  BlockPool pool(256, 4, 64);
  ReceiveBuffer buffer(pool);
  const auto data = pattern(1000);
  ASSERT_EQ(buffer.insert(0, slice(data, 0, 600), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.contiguous_end(), 600u);
  EXPECT_EQ(buffer.highest_received(), 600u);
  EXPECT_EQ(buffer.gap_count(), 0u);
  EXPECT_EQ(buffer.blocks_held(), 3u);
  EXPECT_EQ(pool.blocks_in_use(), 3u);
  auto piece = buffer.readable();
  ASSERT_EQ(piece.size(), 256u);  // ends at the first block boundary
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), data.begin()));
  buffer.consume(100);
  piece = buffer.readable();
  ASSERT_EQ(piece.size(), 156u);
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), data.begin() + 100));
  buffer.consume(156);
  EXPECT_EQ(buffer.blocks_held(), 2u);  // block 0 went back as soon as it was consumed
  EXPECT_EQ(pool.blocks_in_use(), 2u);
  ASSERT_EQ(buffer.insert(600, slice(data, 600, 400), kBigLimit), ReceiveResult::kOk);
  std::vector<uint8_t> out(2000);
  EXPECT_EQ(buffer.read(out), 744u);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 744, data.begin() + 256));
  EXPECT_EQ(buffer.read_offset(), 1000u);
  EXPECT_EQ(buffer.contiguous_end(), 1000u);
  EXPECT_TRUE(buffer.readable().empty());
  // Nothing unread is left, so the partly consumed last block is freed too.
  EXPECT_EQ(buffer.blocks_held(), 0u);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

TEST(ReceiveBufferTest, OutOfOrderGapsMergeAndDuplicatesAreIgnored) {
  BlockPool pool(256, 4, 64);
  ReceiveBuffer buffer(pool);
  const auto data = pattern(3000);
  ASSERT_EQ(buffer.insert(1000, slice(data, 1000, 100), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), 1u);
  ASSERT_EQ(buffer.insert(2000, slice(data, 2000, 100), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), 2u);
  EXPECT_EQ(buffer.highest_received(), 2100u);
  EXPECT_EQ(buffer.contiguous_end(), 0u);
  EXPECT_TRUE(buffer.readable().empty());
  // Touching ranges merge: [1100, 2000) joins both.
  ASSERT_EQ(buffer.insert(1100, slice(data, 1100, 900), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), 1u);
  // A duplicate carrying different bytes does not overwrite held bytes.
  std::vector<uint8_t> garbage(500, 0xEE);
  ASSERT_EQ(buffer.insert(1500, garbage, kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), 1u);
  // The prefix arrives overlapping the first range: everything is readable.
  ASSERT_EQ(buffer.insert(0, slice(data, 0, 1050), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), 0u);
  EXPECT_EQ(buffer.contiguous_end(), 2100u);
  const auto out = read_all(buffer);
  ASSERT_EQ(out.size(), 2100u);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), data.begin()));
  // Data entirely below read_offset is ignored.
  ASSERT_EQ(buffer.insert(0, slice(data, 0, 2100), kBigLimit), ReceiveResult::kOk);
  EXPECT_TRUE(buffer.readable().empty());
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

TEST(ReceiveBufferTest, LimitIsExactAndCheckedBeforeAnything) {
  BlockPool pool(256, 4, 64);
  ReceiveBuffer buffer(pool);
  const auto data = pattern(100);
  EXPECT_EQ(buffer.insert(0, slice(data, 0, 100), 99), ReceiveResult::kExceedsLimit);
  EXPECT_EQ(buffer.highest_received(), 0u);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
  EXPECT_EQ(buffer.insert(0, slice(data, 0, 100), 100), ReceiveResult::kOk);
  EXPECT_EQ(buffer.contiguous_end(), 100u);
  // Already-held bytes past the limit still exceed it.
  EXPECT_EQ(buffer.insert(50, slice(data, 0, 51), 100), ReceiveResult::kExceedsLimit);
}

TEST(ReceiveBufferTest, CryptoAtHugeOffsetIsRejectedWithoutAllocating) {
  // quiche CVE-2024-1765: CRYPTO frames at huge offsets must not allocate.
  BlockPool pool(4096, 4, 64);
  ReceiveBuffer buffer(pool);
  const uint8_t bytes[5] = {1, 2, 3, 4, 5};
  const uint64_t huge = (uint64_t{1} << 62) - 10;
  EXPECT_EQ(buffer.insert(huge, bytes, 64 * 1024), ReceiveResult::kExceedsLimit);
  // Offsets whose end would overflow 64 bits are rejected too.
  EXPECT_EQ(buffer.insert(UINT64_MAX - 2, bytes, 64 * 1024), ReceiveResult::kExceedsLimit);
  EXPECT_EQ(buffer.insert(UINT64_MAX - 2, bytes, UINT64_MAX), ReceiveResult::kExceedsLimit);
  // Zero-length data beyond the limit is still beyond it.
  EXPECT_EQ(buffer.insert(huge, {}, 64 * 1024), ReceiveResult::kExceedsLimit);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
  EXPECT_EQ(pool.blocks_allocated(), 4u);
  EXPECT_EQ(buffer.blocks_held(), 0u);
  EXPECT_EQ(buffer.highest_received(), 0u);
  EXPECT_EQ(buffer.gap_count(), 0u);
  // The last bytes inside the bound are accepted, and cost one block.
  EXPECT_EQ(buffer.insert(64 * 1024 - 5, bytes, 64 * 1024), ReceiveResult::kOk);
  EXPECT_EQ(pool.blocks_in_use(), 1u);
  EXPECT_EQ(buffer.gap_count(), 1u);
}

TEST(ReceiveBufferTest, WindowWiderThanThePoolCannotGrowTheRing) {
  BlockPool pool(256, 4, 4);
  ReceiveBuffer buffer(pool);
  const uint8_t byte[1] = {7};
  // One byte needs one block, but it lies 10 blocks past read_offset: the
  // block ring would have to span more than the pool holds.
  EXPECT_EQ(buffer.insert(256 * 10, byte, kBigLimit), ReceiveResult::kOutOfMemory);
  EXPECT_EQ(buffer.insert((uint64_t{1} << 61), byte, UINT64_MAX), ReceiveResult::kOutOfMemory);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
  EXPECT_EQ(buffer.insert(256 * 3, byte, kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(pool.blocks_in_use(), 1u);
}

TEST(ReceiveBufferTest, ZeroLengthDataStoresNothing) {
  BlockPool pool(256, 4, 64);
  ReceiveBuffer buffer(pool);
  EXPECT_EQ(buffer.insert(0, {}, 100), ReceiveResult::kOk);
  EXPECT_EQ(buffer.insert(100, {}, 100), ReceiveResult::kOk);  // exactly at the limit
  EXPECT_EQ(buffer.insert(101, {}, 100), ReceiveResult::kExceedsLimit);
  EXPECT_EQ(buffer.highest_received(), 100u);
  EXPECT_EQ(buffer.gap_count(), 0u);
  EXPECT_EQ(buffer.contiguous_end(), 0u);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

TEST(ReceiveBufferTest, OutOfMemoryStoresNothing) {
  BlockPool pool(256, 2, 2);
  ReceiveBuffer buffer(pool);
  const auto data = pattern(1024);
  ASSERT_EQ(buffer.insert(0, slice(data, 0, 10), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(pool.blocks_in_use(), 1u);
  // Needs blocks 1 and 2 but only one is left.
  EXPECT_EQ(buffer.insert(300, slice(data, 300, 300), kBigLimit), ReceiveResult::kOutOfMemory);
  EXPECT_EQ(pool.blocks_in_use(), 1u);
  EXPECT_EQ(buffer.gap_count(), 0u);
  EXPECT_EQ(buffer.highest_received(), 10u);
  // One block's worth fits.
  ASSERT_EQ(buffer.insert(10, slice(data, 10, 400), kBigLimit), ReceiveResult::kOk);
  EXPECT_EQ(pool.blocks_in_use(), 2u);
  const auto out = read_all(buffer);
  ASSERT_EQ(out.size(), 410u);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), data.begin()));
}

TEST(ReceiveBufferTest, FragmentationAttackIsBoundedByMaxGaps) {
  // RFC 9000 §21.9: 10k one-byte frames at every other offset, in reverse.
  constexpr size_t kMaxGaps = 16;
  constexpr uint64_t kLimit = 64 * 1024;
  BlockPool pool(256, 4, 1024);
  ReceiveBuffer buffer(pool, kMaxGaps);
  const uint8_t byte[1] = {0x42};
  size_t accepted = 0;
  size_t refused = 0;
  size_t max_blocks = 0;
  for (int i = 9999; i >= 0; --i) {
    const ReceiveResult result = buffer.insert(2 * static_cast<uint64_t>(i) + 2, byte, kLimit);
    if (result == ReceiveResult::kOk) {
      ++accepted;
    } else {
      ASSERT_EQ(result, ReceiveResult::kTooFragmented);
      ++refused;
    }
    ASSERT_LE(buffer.gap_count(), kMaxGaps);
    max_blocks = std::max(max_blocks, pool.blocks_in_use());
  }
  EXPECT_EQ(accepted, kMaxGaps);
  EXPECT_EQ(refused, 10000 - kMaxGaps);
  EXPECT_EQ(buffer.gap_count(), kMaxGaps);
  // 16 one-byte ranges two bytes apart at the top: one block.
  EXPECT_EQ(max_blocks, 1u);
  EXPECT_EQ(buffer.highest_received(), 2 * 9999u + 3);
  // Filling a hole between two ranges lowers the count, so it is accepted
  // even at the bound.
  EXPECT_EQ(buffer.insert(2 * 9999 + 1, byte, kLimit), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), kMaxGaps - 1);
}

TEST(ReceiveBufferTest, ReverseContiguousOneByteFramesMergeIntoOneGap) {
  BlockPool pool(256, 4, 1024);
  ReceiveBuffer buffer(pool, 4);
  const auto data = pattern(10000);
  for (int i = 9999; i >= 1; --i) {
    ASSERT_EQ(buffer.insert(static_cast<uint64_t>(i), slice(data, static_cast<uint64_t>(i), 1),
                            64 * 1024),
              ReceiveResult::kOk);
    ASSERT_EQ(buffer.gap_count(), 1u);
  }
  EXPECT_LE(pool.blocks_in_use(), 10000u / 256 + 1);
  ASSERT_EQ(buffer.insert(0, slice(data, 0, 1), 64 * 1024), ReceiveResult::kOk);
  EXPECT_EQ(buffer.gap_count(), 0u);
  const auto out = read_all(buffer);
  EXPECT_EQ(out, data);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

TEST(ReceiveBufferTest, ClearFreesBlocksAndKeepsOffsets) {
  BlockPool pool(256, 4, 64);
  {
    ReceiveBuffer buffer(pool);
    const auto data = pattern(2000);
    ASSERT_EQ(buffer.insert(0, slice(data, 0, 700), kBigLimit), ReceiveResult::kOk);
    ASSERT_EQ(buffer.insert(1000, slice(data, 1000, 500), kBigLimit), ReceiveResult::kOk);
    buffer.consume(300);
    EXPECT_GT(pool.blocks_in_use(), 0u);
    buffer.clear();
    EXPECT_EQ(pool.blocks_in_use(), 0u);
    EXPECT_EQ(buffer.read_offset(), 300u);
    EXPECT_EQ(buffer.contiguous_end(), 300u);
    EXPECT_EQ(buffer.highest_received(), 1500u);
    EXPECT_EQ(buffer.gap_count(), 0u);
    EXPECT_TRUE(buffer.readable().empty());
    // Still usable after clear(); the destructor returns what it holds.
    ASSERT_EQ(buffer.insert(300, slice(data, 300, 100), kBigLimit), ReceiveResult::kOk);
    EXPECT_EQ(pool.blocks_in_use(), 1u);
    buffer.reinitialize();
    EXPECT_EQ(buffer.read_offset(), 0u);
    EXPECT_EQ(buffer.highest_received(), 0u);
    ASSERT_EQ(buffer.insert(0, slice(data, 0, 600), kBigLimit), ReceiveResult::kOk);
    EXPECT_EQ(pool.blocks_in_use(), 3u);
  }
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

// Random out-of-order, overlapping and duplicate inserts with random reads,
// checked against a byte-per-byte model (fixed seed).
TEST(ReceiveBufferTest, MatchesModelUnderRandomInsertsAndReads) {
  constexpr size_t kStreamSize = 256 * 1024;
  constexpr uint64_t kWindow = 16 * 1024;
  constexpr size_t kMaxGaps = 16;
  const auto data = pattern(kStreamSize, 7);
  BlockPool pool(1024, 8, 4096);
  ReceiveBuffer buffer(pool, kMaxGaps);
  std::vector<uint8_t> have(kStreamSize, 0);
  uint64_t model_read = 0;
  uint64_t model_highest = 0;
  std::vector<uint8_t> received;
  std::vector<uint64_t> newly_set;
  std::mt19937_64 rng(12345);
  size_t ops = 0;
  size_t too_fragmented = 0;
  size_t exceeded = 0;
  size_t duplicates = 0;
  while (model_read < kStreamSize || ops < 10000) {
    ++ops;
    ASSERT_LT(ops, 1'000'000u);
    const uint64_t limit = std::min<uint64_t>(model_read + kWindow, kStreamSize);
    if (rng() % 3 != 0) {
      // Mostly inside the window; sometimes below read_offset or past the limit.
      const uint64_t low = model_read > 2048 ? model_read - 2048 : 0;
      uint64_t offset = low + rng() % (limit + 512 - low);
      size_t len = static_cast<size_t>(rng() % 1200);
      if (rng() % 4 == 0) len = static_cast<size_t>(rng() % 8);
      if (offset >= kStreamSize) offset = kStreamSize - 1;
      len = static_cast<size_t>(std::min<uint64_t>(len, kStreamSize - offset));
      const ReceiveResult result = buffer.insert(offset, slice(data, offset, len), limit);
      if (offset + len > limit) {
        ASSERT_EQ(result, ReceiveResult::kExceedsLimit);
        ++exceeded;
        continue;
      }
      newly_set.clear();
      for (uint64_t i = std::max(offset, model_read); i < offset + len; ++i) {
        if (!have[i]) {
          have[i] = 1;
          newly_set.push_back(i);
        }
      }
      if (len > 0 && newly_set.empty()) ++duplicates;
      uint64_t contiguous = model_read;
      while (contiguous < kStreamSize && have[contiguous]) ++contiguous;
      size_t gaps = 0;
      for (uint64_t i = contiguous; i < limit; ++i)
        if (have[i] && !have[i - 1]) ++gaps;
      if (gaps > kMaxGaps) {
        ASSERT_EQ(result, ReceiveResult::kTooFragmented);
        ++too_fragmented;
        for (uint64_t i : newly_set) have[i] = 0;
      } else {
        ASSERT_EQ(result, ReceiveResult::kOk);
        model_highest = std::max(model_highest, offset + len);
        ASSERT_EQ(buffer.gap_count(), gaps);
        ASSERT_EQ(buffer.contiguous_end(), contiguous);
      }
    } else {
      std::vector<uint8_t> out(static_cast<size_t>(rng() % 3000));
      const size_t n = buffer.read(out);
      uint64_t contiguous = model_read;
      while (contiguous < kStreamSize && have[contiguous]) ++contiguous;
      ASSERT_EQ(n, std::min<uint64_t>(out.size(), contiguous - model_read));
      received.insert(received.end(), out.begin(), out.begin() + static_cast<ptrdiff_t>(n));
      model_read += n;
    }
    ASSERT_EQ(buffer.read_offset(), model_read);
    ASSERT_EQ(buffer.highest_received(), model_highest);
    // Memory stays inside [read_offset, limit).
    ASSERT_LE(pool.blocks_in_use(), kWindow / 1024 + 1);
    ASSERT_EQ(pool.blocks_in_use(), buffer.blocks_held());
  }
  EXPECT_GE(ops, 10000u);
  EXPECT_GT(too_fragmented, 0u);
  EXPECT_GT(exceeded, 0u);
  EXPECT_GT(duplicates, 0u);
  ASSERT_EQ(received.size(), kStreamSize);
  EXPECT_TRUE(received == data);
  EXPECT_EQ(pool.blocks_in_use(), 0u);
}

}  // namespace
}  // namespace dpquic::conn
