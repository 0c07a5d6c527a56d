// ReceivedRanges: merging, out-of-order fills, duplicates, the bounded count
// (oldest dropped, floor raised), pruning, and a randomized comparison with a
// std::set reference model of the documented policy.
#include "quic/recovery/received_ranges.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace dpquic::recovery {
namespace {

using wire::AckRange;

std::vector<AckRange> ranges_of(const ReceivedRanges& received) {
  return {received.ranges().begin(), received.ranges().end()};
}

TEST(ReceivedRangesTest, StartsEmpty) {
  ReceivedRanges received;
  EXPECT_TRUE(received.empty());
  EXPECT_EQ(received.size(), 0u);
  EXPECT_EQ(received.capacity(), ReceivedRanges::kMaxRanges);
  EXPECT_EQ(received.floor(), 0u);
  EXPECT_FALSE(received.is_duplicate(0));
  EXPECT_FALSE(received.contains(0));
  EXPECT_EQ(received.find(0), nullptr);
}

TEST(ReceivedRangesTest, RejectsBadCapacity) {
  EXPECT_THROW(ReceivedRanges(0), std::invalid_argument);
  EXPECT_THROW(ReceivedRanges(ReceivedRanges::kMaxRanges + 1), std::invalid_argument);
  EXPECT_EQ(ReceivedRanges(1).capacity(), 1u);
}

TEST(ReceivedRangesTest, InOrderPacketsExtendOneRange) {
  ReceivedRanges received;
  for (uint64_t pn = 0; pn < 100; ++pn) EXPECT_TRUE(received.insert(pn));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{0, 99}}));
  EXPECT_EQ(received.largest(), 99u);
}

TEST(ReceivedRangesTest, GapsMakeRangesLargestFirst) {
  ReceivedRanges received;
  for (uint64_t pn : {1, 2, 5, 6, 7, 10}) EXPECT_TRUE(received.insert(pn));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 10}, {5, 7}, {1, 2}}));
  ASSERT_NE(received.find(6), nullptr);
  EXPECT_EQ(*received.find(6), (AckRange{5, 7}));
  EXPECT_EQ(received.find(8), nullptr);
  EXPECT_EQ(received.find(0), nullptr);
  EXPECT_EQ(received.find(11), nullptr);
}

TEST(ReceivedRangesTest, OutOfOrderFillsMergeAdjacentRanges) {
  ReceivedRanges received;
  for (uint64_t pn : {10, 4, 6, 0}) EXPECT_TRUE(received.insert(pn));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 10}, {6, 6}, {4, 4}, {0, 0}}));
  // Joins the range above only.
  EXPECT_TRUE(received.insert(9));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{9, 10}, {6, 6}, {4, 4}, {0, 0}}));
  // Joins the range below only.
  EXPECT_TRUE(received.insert(7));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{9, 10}, {6, 7}, {4, 4}, {0, 0}}));
  // Joins both: two ranges become one.
  EXPECT_TRUE(received.insert(8));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{6, 10}, {4, 4}, {0, 0}}));
  EXPECT_TRUE(received.insert(5));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{4, 10}, {0, 0}}));
  // A new range between two others, touching neither.
  EXPECT_TRUE(received.insert(2));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{4, 10}, {2, 2}, {0, 0}}));
  EXPECT_TRUE(received.insert(1));
  EXPECT_TRUE(received.insert(3));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{0, 10}}));
}

TEST(ReceivedRangesTest, DuplicatesAreNotNew) {
  ReceivedRanges received;
  for (uint64_t pn : {3, 4, 5, 9}) EXPECT_TRUE(received.insert(pn));
  for (uint64_t pn : {3, 4, 5, 9}) {
    EXPECT_TRUE(received.is_duplicate(pn)) << pn;
    EXPECT_FALSE(received.insert(pn)) << pn;
  }
  for (uint64_t pn : {0, 2, 6, 8, 10}) EXPECT_FALSE(received.is_duplicate(pn)) << pn;
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{9, 9}, {3, 5}}));
}

TEST(ReceivedRangesTest, OverflowDropsTheOldestRangeAndRaisesTheFloor) {
  ReceivedRanges received(3);
  for (uint64_t pn : {0, 1, 3, 5}) EXPECT_TRUE(received.insert(pn));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{5, 5}, {3, 3}, {0, 1}}));
  // A fourth range: {0, 1} goes, and everything below the oldest kept range
  // is too old.
  EXPECT_TRUE(received.insert(7));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{7, 7}, {5, 5}, {3, 3}}));
  EXPECT_EQ(received.floor(), 3u);
  for (uint64_t pn : {0, 1, 2}) {
    EXPECT_TRUE(received.is_duplicate(pn)) << pn;
    EXPECT_FALSE(received.insert(pn)) << pn;
  }
  // Gaps above the floor still fill.
  EXPECT_TRUE(received.insert(4));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{7, 7}, {3, 5}}));
}

TEST(ReceivedRangesTest, OverflowByAFillBetweenRangesDropsTheOldest) {
  ReceivedRanges received(2);
  EXPECT_TRUE(received.insert(2));
  EXPECT_TRUE(received.insert(10));
  EXPECT_TRUE(received.insert(6));  // new middle range; {2, 2} goes
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 10}, {6, 6}}));
  EXPECT_EQ(received.floor(), 6u);
  // When the fill lands just above the oldest range, the new range itself is
  // the oldest kept.
  EXPECT_TRUE(received.insert(8));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 10}, {8, 8}}));
  EXPECT_EQ(received.floor(), 8u);
  EXPECT_FALSE(received.insert(7));
}

TEST(ReceivedRangesTest, FullSetRejectsANewRangeBelowTheOldest) {
  ReceivedRanges received(2);
  EXPECT_TRUE(received.insert(5));
  EXPECT_TRUE(received.insert(10));
  EXPECT_TRUE(received.is_duplicate(2));
  EXPECT_FALSE(received.insert(2));
  EXPECT_EQ(received.floor(), 5u);
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 10}, {5, 5}}));
  // Below the floor now, even though it would have joined {5, 5}.
  EXPECT_FALSE(received.insert(4));
  // Extending the oldest range upwards needs no new range.
  EXPECT_TRUE(received.insert(6));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 10}, {5, 6}}));
}

TEST(ReceivedRangesTest, FullSetOfOneMovesWithTheNewestPacket) {
  ReceivedRanges received(1);
  EXPECT_TRUE(received.insert(0));
  EXPECT_TRUE(received.insert(1));
  EXPECT_TRUE(received.insert(3));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{3, 3}}));
  EXPECT_EQ(received.floor(), 3u);
  EXPECT_FALSE(received.insert(2));
}

TEST(ReceivedRangesTest, RemoveBelowTrimsDropsAndRaisesTheFloor) {
  ReceivedRanges received;
  for (uint64_t pn : {1, 2, 5, 6, 7, 8, 10, 11, 12}) EXPECT_TRUE(received.insert(pn));
  received.remove_below(6);
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{10, 12}, {6, 8}}));
  EXPECT_EQ(received.floor(), 6u);
  EXPECT_FALSE(received.insert(5));
  EXPECT_FALSE(received.insert(3));  // never received, but too old now
  EXPECT_TRUE(received.insert(9));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{6, 12}}));
  // A lower bound never lowers the floor.
  received.remove_below(2);
  EXPECT_EQ(received.floor(), 6u);
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{6, 12}}));
  // Pruning everything.
  received.remove_below(13);
  EXPECT_TRUE(received.empty());
  EXPECT_EQ(received.floor(), 13u);
  EXPECT_FALSE(received.insert(12));
  EXPECT_TRUE(received.insert(13));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{13, 13}}));
}

TEST(ReceivedRangesTest, LargestPacketNumbers) {
  constexpr uint64_t kMax = (uint64_t{1} << 62) - 1;
  ReceivedRanges received;
  EXPECT_TRUE(received.insert(kMax));
  EXPECT_TRUE(received.insert(kMax - 1));
  EXPECT_TRUE(received.insert(0));
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{kMax - 1, kMax}, {0, 0}}));
  received.remove_below(kMax);
  EXPECT_EQ(ranges_of(received), (std::vector<AckRange>{{kMax, kMax}}));
}

// The documented policy, on a std::set.
class Model {
 public:
  explicit Model(size_t capacity) : capacity_(capacity) {}

  bool insert(uint64_t pn) {
    if (pn < floor_ || set_.count(pn) != 0) return false;
    std::set<uint64_t> with = set_;
    with.insert(pn);
    const std::vector<AckRange> ranges = ranges_of(with);
    if (ranges.size() <= capacity_) {
      set_ = std::move(with);
      return true;
    }
    // One range too many: the oldest goes (the new one, if it is the oldest).
    const bool accepted = ranges.back() != AckRange{pn, pn};
    floor_ = ranges[capacity_ - 1].smallest;
    if (accepted) set_ = std::move(with);
    set_.erase(set_.begin(), set_.lower_bound(floor_));
    return accepted;
  }

  void remove_below(uint64_t pn) {
    if (pn <= floor_) return;
    floor_ = pn;
    set_.erase(set_.begin(), set_.lower_bound(pn));
  }

  std::vector<AckRange> ranges() const { return ranges_of(set_); }
  uint64_t floor() const { return floor_; }

 private:
  static std::vector<AckRange> ranges_of(const std::set<uint64_t>& set) {
    std::vector<AckRange> out;
    for (auto it = set.rbegin(); it != set.rend(); ++it) {
      if (!out.empty() && out.back().smallest == *it + 1) {
        out.back().smallest = *it;
      } else {
        out.push_back({*it, *it});
      }
    }
    return out;
  }

  size_t capacity_;
  std::set<uint64_t> set_;
  uint64_t floor_ = 0;
};

void compare_with_model(size_t capacity, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "capacity " << capacity << " seed " << seed);
  std::mt19937_64 rng(seed);
  ReceivedRanges received(capacity);
  Model model(capacity);
  uint64_t next = 0;  // the sender's next packet number
  for (int step = 0; step < 20000; ++step) {
    const uint64_t roll = rng() % 100;
    if (roll < 3) {
      const uint64_t bound = next > 40 ? next - rng() % 40 : rng() % (next + 1);
      received.remove_below(bound);
      model.remove_below(bound);
    } else {
      uint64_t pn;
      if (roll < 60) {
        pn = next++;  // in order
      } else if (roll < 75) {
        next += 1 + rng() % 4;  // loss before this one
        pn = next++;
      } else {
        pn = next > 0 ? next - 1 - rng() % std::min<uint64_t>(next, 64) : 0;  // late or duplicate
      }
      const bool duplicate = received.is_duplicate(pn);
      const bool inserted = received.insert(pn);
      ASSERT_EQ(inserted, model.insert(pn)) << "step " << step << " pn " << pn;
      ASSERT_EQ(duplicate, !inserted) << "step " << step << " pn " << pn;
    }
    ASSERT_EQ(ranges_of(received), model.ranges()) << "step " << step;
    ASSERT_EQ(received.floor(), model.floor()) << "step " << step;
    ASSERT_LE(received.size(), capacity);
  }
}

TEST(ReceivedRangesTest, MatchesReferenceModel) {
  for (size_t capacity : {size_t{1}, size_t{2}, size_t{4}, ReceivedRanges::kMaxRanges}) {
    compare_with_model(capacity, 20240501);
  }
  const uint32_t seed = std::random_device{}();
  compare_with_model(8, seed);
}

}  // namespace
}  // namespace dpquic::recovery
