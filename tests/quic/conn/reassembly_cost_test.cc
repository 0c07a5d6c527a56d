// A peer's worst case for reassembly work (RFC 9000 §21.9): it opens as
// many gaps as one stream allows with small frames at spread offsets, then
// sends frames that split and fill the hole at the front (or in the middle),
// where a sorted array of ranges shifts every range above for every frame.
// The work is counted, not timed: range entries moved per frame
// (ReceiveBuffer::range_entries_moved()). The bound must not depend on the
// number of gaps; the CPU figures are in tools/bench/reassembly_bench.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "quic/conn/block_pool.h"
#include "quic/conn/receive_buffer.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

constexpr uint64_t kLimit = uint64_t{1} << 40;
constexpr uint64_t kSpacing = 16;  // an 8-byte range, then an 8-byte hole
// Range entries a frame may move, whatever the number of gaps.
constexpr uint64_t kMaxEntriesMovedPerFrame = 0;

uint8_t pattern(uint64_t offset) { return static_cast<uint8_t>(offset * 131 + (offset >> 8)); }

// Where the peer aims: the hole in front of the lowest range (the prefix
// takes it), or the hole max_gaps / 2 ranges above the prefix (the next one
// each round; the prefix stays).
enum class Target { kFront, kMiddle };

class Attack {
 public:
  Attack(size_t max_gaps, Target target)
      : pool_(4096, 16, 4096),
        buffer_(pool_, max_gaps),
        target_(target),
        middle_(kSpacing * (max_gaps / 2)) {}

  // max_gaps - 1 ranges [16 i + 8, 16 i + 16), lowest first: the prefix ends
  // at 0 and every range has a hole in front of it.
  void open_gaps() {
    for (size_t i = 0; i + 1 < buffer_.max_gaps(); ++i) send_range_at_back();
  }

  // One round of four frames on the hole [h, h + 8), the gap count back
  // where it started:
  //   split it with [h + 2, h + 4)                  (gaps + 1, the bound)
  //   fill [h, h + 2): takes the new range          (gaps - 1)
  //   fill [h + 4, h + 8): takes the range above    (gaps - 1)
  //   a new range at the back                       (gaps + 1)
  // At the front the prefix takes what the fills join. Reads what became
  // contiguous. Returns the most entries one frame moved.
  uint64_t round() {
    const uint64_t prefix = buffer_.contiguous_end();
    const uint64_t h = target_ == Target::kFront ? prefix : middle_;
    uint64_t most = 0;
    most = std::max(most, send(h + 2, 2));
    EXPECT_EQ(buffer_.gap_count(), buffer_.max_gaps());
    most = std::max(most, send(h, 2));
    most = std::max(most, send(h + 4, 4));
    EXPECT_EQ(buffer_.contiguous_end(), target_ == Target::kFront ? prefix + kSpacing : 0);
    most = std::max(most, send_range_at_back());
    EXPECT_EQ(buffer_.gap_count(), buffer_.max_gaps() - 1);
    middle_ += kSpacing;
    read_contiguous();
    return most;
  }

  uint64_t entries_moved() const { return buffer_.range_entries_moved(); }
  bool bytes_ok() const { return bytes_ok_; }
  const ReceiveBuffer& buffer() const { return buffer_; }

 private:
  uint64_t send_range_at_back() {
    const uint64_t moved = send(back_ + kSpacing / 2, kSpacing / 2);
    back_ += kSpacing;
    return moved;
  }

  // Inserts [offset, offset + length); returns the entries it moved.
  uint64_t send(uint64_t offset, size_t length) {
    std::array<uint8_t, kSpacing> bytes{};
    for (size_t i = 0; i < length; ++i) bytes[i] = pattern(offset + i);
    const uint64_t before = buffer_.range_entries_moved();
    const ReceiveResult result =
        buffer_.insert(offset, std::span<const uint8_t>(bytes.data(), length), kLimit);
    EXPECT_EQ(result, ReceiveResult::kOk);
    return buffer_.range_entries_moved() - before;
  }

  void read_contiguous() {
    std::array<uint8_t, 64> out{};
    size_t n;
    while ((n = buffer_.read(out)) > 0) {
      for (size_t i = 0; i < n; ++i) bytes_ok_ = bytes_ok_ && out[i] == pattern(read_ + i);
      read_ += n;
    }
  }

  BlockPool pool_;
  ReceiveBuffer buffer_;
  Target target_;
  uint64_t middle_;  // the hole a middle round aims at
  uint64_t back_ = 0;
  uint64_t read_ = 0;
  bool bytes_ok_ = true;
};

// Opens the gaps, then runs 2 * max_gaps rounds. Returns the most range
// entries one frame moved in the rounds; `allocations` counts heap
// allocations after a warm-up of four rounds.
uint64_t most_moved_per_frame(Attack& attack, size_t& allocations) {
  const size_t max_gaps = attack.buffer().max_gaps();
  attack.open_gaps();
  EXPECT_EQ(attack.buffer().gap_count(), max_gaps - 1);
  // Opening the gaps: storage growth only, fewer copies than gaps in all.
  EXPECT_LE(attack.entries_moved(), max_gaps);
  // Warm-up: the block ring and the pool reach their sizes.
  uint64_t most = 0;
  for (int r = 0; r < 4; ++r) most = std::max(most, attack.round());
  testing::AllocationWindow window;
  for (size_t r = 4; r < 2 * max_gaps; ++r) most = std::max(most, attack.round());
  allocations = window.count();
  return most;
}

TEST(ReassemblyCostTest, FramesAtTheFrontMoveNoRangeWhateverTheGapCount) {
  for (const size_t max_gaps : {size_t{16}, size_t{1024}, size_t{4096}}) {
    SCOPED_TRACE(max_gaps);
    Attack attack(max_gaps, Target::kFront);
    size_t allocations = 0;
    EXPECT_EQ(most_moved_per_frame(attack, allocations), kMaxEntriesMovedPerFrame);
    EXPECT_EQ(allocations, 0u);
    EXPECT_TRUE(attack.bytes_ok());
    // Two rounds per gap: every range held at the start went through the
    // prefix, and the bytes came out in order.
    EXPECT_EQ(attack.buffer().read_offset(), 2 * max_gaps * kSpacing);
    EXPECT_EQ(attack.buffer().gap_count(), max_gaps - 1);
  }
}

TEST(ReassemblyCostTest, FramesInTheMiddleMoveNoRangeWhateverTheGapCount) {
  for (const size_t max_gaps : {size_t{16}, size_t{1024}, size_t{4096}}) {
    SCOPED_TRACE(max_gaps);
    Attack attack(max_gaps, Target::kMiddle);
    // Nothing becomes readable here, so the pool and the ring keep growing
    // with the bytes held: allocations are not this test's point.
    size_t allocations = 0;
    EXPECT_EQ(most_moved_per_frame(attack, allocations), kMaxEntriesMovedPerFrame);
    EXPECT_EQ(attack.buffer().contiguous_end(), 0u);
    EXPECT_EQ(attack.buffer().gap_count(), max_gaps - 1);
    // The back range of the last round: max_gaps - 1 + 2 max_gaps ranges in.
    EXPECT_EQ(attack.buffer().highest_received(), (3 * max_gaps - 1) * kSpacing);
  }
}

}  // namespace
}  // namespace dpquic::conn
