// Chunks: copy retains, destruction releases, slices share the owner, and
// owners get their bytes back exactly once, when the last reference goes.
#include "quic/transmit/chunk.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace dpquic::transmit {
namespace {

struct ReleaseLog {
  int calls = 0;
  const uint8_t* data = nullptr;
  size_t length = 0;
};

void record_release(void* context, const uint8_t* data, size_t length) {
  auto* log = static_cast<ReleaseLog*>(context);
  ++log->calls;
  log->data = data;
  log->length = length;
}

TEST(ChunkTest, EmptyChunk) {
  Chunk chunk;
  EXPECT_FALSE(chunk.valid());
  EXPECT_EQ(chunk.size(), 0u);
  EXPECT_EQ(chunk.use_count(), 0u);
  EXPECT_FALSE(chunk.slice(0, 0).valid());
}

TEST(ChunkTest, PoolCopiesOnceAndReturnsTheBufferWithTheLastReference) {
  ChunkPool pool(64, 2);
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7};
  Chunk first = pool.copy_from(bytes);
  ASSERT_TRUE(first.valid());
  EXPECT_EQ(std::vector<uint8_t>(first.bytes().begin(), first.bytes().end()), bytes);
  EXPECT_NE(first.data(), bytes.data());
  EXPECT_EQ(pool.free_buffers(), 1u);
  EXPECT_EQ(first.use_count(), 1u);
  {
    Chunk copy = first;  // retain
    EXPECT_EQ(first.use_count(), 2u);
    Chunk slice = first.slice(2, 3);
    ASSERT_TRUE(slice.valid());
    EXPECT_EQ(slice.data(), first.data() + 2);
    EXPECT_EQ(slice.size(), 3u);
    EXPECT_EQ(first.use_count(), 3u);
    EXPECT_FALSE(first.slice(5, 3).valid());  // past the end
    EXPECT_FALSE(first.slice(8, 0).valid());
    EXPECT_TRUE(first.slice(7, 0).valid());
    Chunk moved = std::move(copy);
    EXPECT_FALSE(copy.valid());
    EXPECT_EQ(first.use_count(), 3u);
  }
  EXPECT_EQ(first.use_count(), 1u);
  EXPECT_EQ(pool.free_buffers(), 1u);
  first.reset();
  EXPECT_EQ(pool.free_buffers(), 2u);
}

TEST(ChunkTest, PoolExhaustedOrTooLargeGivesAnEmptyChunk) {
  ChunkPool pool(16, 1);
  const std::vector<uint8_t> big(17, 0xaa), small(16, 0xbb);
  EXPECT_FALSE(pool.copy_from(big).valid());
  Chunk held = pool.copy_from(small);
  ASSERT_TRUE(held.valid());
  EXPECT_FALSE(pool.copy_from(small).valid());
  held = Chunk();
  EXPECT_TRUE(pool.copy_from(small).valid());
  pool.grow(2, 0);
  EXPECT_EQ(pool.free_buffers(), 3u);
}

TEST(ChunkTest, AssignmentReleasesTheOldOwnerAndRetainsTheNew) {
  ChunkPool pool(8, 2);
  const std::vector<uint8_t> a = {1}, b = {2};
  Chunk x = pool.copy_from(a);
  Chunk y = pool.copy_from(b);
  EXPECT_EQ(pool.free_buffers(), 0u);
  x = y;
  EXPECT_EQ(pool.free_buffers(), 1u);
  EXPECT_EQ(y.use_count(), 2u);
  x = x;  // self-assignment keeps the reference
  EXPECT_EQ(y.use_count(), 2u);
  y = std::move(x);
  EXPECT_EQ(y.use_count(), 1u);
  y.reset();
  EXPECT_EQ(pool.free_buffers(), 2u);
}

TEST(ChunkTest, AdoptedMemoryIsReleasedOnceThroughItsCallback) {
  ChunkPool pool(8, 0, 1);
  const std::vector<uint8_t> application(100, 0x42);
  ReleaseLog log;
  Chunk chunk = pool.adopt(application.data(), application.size(), record_release, &log);
  ASSERT_TRUE(chunk.valid());
  EXPECT_EQ(chunk.data(), application.data());  // no copy
  EXPECT_EQ(pool.free_adopt_records(), 0u);
  EXPECT_FALSE(pool.adopt(application.data(), 1, record_release, &log).valid());
  Chunk part = chunk.slice(10, 20);
  chunk.reset();
  EXPECT_EQ(log.calls, 0);
  part.reset();
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.data, application.data());
  EXPECT_EQ(log.length, application.size());
  EXPECT_EQ(pool.free_adopt_records(), 1u);
}

}  // namespace
}  // namespace dpquic::transmit
