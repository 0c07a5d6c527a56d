#include "quic/conn/range_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace dpquic::conn {
namespace {

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;
using Handle = RangeTree::Handle;

Pairs as_pairs(const RangeTree& tree) {
  Pairs out;
  tree.for_each([&](const RangeTree::Range& r) { out.emplace_back(r.start, r.end); });
  return out;
}

// The AVL bound: height <= 1.44 log2(size + 2).
int height_bound(size_t size) {
  return static_cast<int>(1.4405 * std::log2(static_cast<double>(size) + 2));
}

TEST(RangeTreeTest, StartsEmpty) {
  RangeTree tree(16, 4);
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(tree.height(), 0);
  EXPECT_EQ(tree.front(), RangeTree::kNone);
  EXPECT_EQ(tree.first_ending_at_or_after(0), RangeTree::kNone);
  EXPECT_EQ(tree.first_starting_after(0), RangeTree::kNone);
  EXPECT_EQ(tree.capacity(), 4u);
  EXPECT_TRUE(tree.valid());
}

TEST(RangeTreeTest, LookupsFindTheRangesThatOverlapOrTouch) {
  RangeTree tree(16, 4);
  const Handle b = tree.insert({30, 40});
  const Handle a = tree.insert({10, 20});
  const Handle c = tree.insert({50, 60});
  EXPECT_EQ(as_pairs(tree), (Pairs{{10, 20}, {30, 40}, {50, 60}}));
  EXPECT_EQ(tree.front(), a);
  EXPECT_EQ(tree.first_ending_at_or_after(0), a);
  EXPECT_EQ(tree.first_ending_at_or_after(20), a);  // touches [10, 20)
  EXPECT_EQ(tree.first_ending_at_or_after(21), b);
  EXPECT_EQ(tree.first_ending_at_or_after(60), c);
  EXPECT_EQ(tree.first_ending_at_or_after(61), RangeTree::kNone);
  EXPECT_EQ(tree.first_starting_after(9), a);
  EXPECT_EQ(tree.first_starting_after(10), b);
  EXPECT_EQ(tree.first_starting_after(49), c);
  EXPECT_EQ(tree.first_starting_after(50), RangeTree::kNone);
  EXPECT_EQ(tree.back(), c);
  EXPECT_EQ(tree.next(a), b);
  EXPECT_EQ(tree.next(b), c);
  EXPECT_EQ(tree.next(c), RangeTree::kNone);
  EXPECT_EQ(tree.at(b).start, 30u);
  EXPECT_EQ(tree.at(b).end, 40u);
}

TEST(RangeTreeTest, EraseAndReplaceKeepOtherHandles) {
  RangeTree tree(64, 4);
  std::vector<Handle> handles;
  for (uint64_t i = 0; i < 40; ++i) handles.push_back(tree.insert({10 * i, 10 * i + 5}));
  // Erase every third range (inner nodes with two children among them).
  for (uint64_t i = 0; i < 40; i += 3) tree.erase(handles[i]);
  ASSERT_TRUE(tree.valid());
  for (uint64_t i = 0; i < 40; ++i) {
    if (i % 3 == 0) continue;
    EXPECT_EQ(tree.at(handles[i]).start, 10 * i);
    EXPECT_EQ(tree.at(handles[i]).end, 10 * i + 5);
  }
  // [11, 15) grows over the room its erased neighbour left: [5, 19).
  tree.replace(handles[1], {5, 19});
  EXPECT_TRUE(tree.valid());
  EXPECT_EQ(tree.front(), handles[1]);
  EXPECT_EQ(tree.size(), 26u);
}

TEST(RangeTreeTest, FullTreeRefusesAndStorageStopsAtMaxSize) {
  RangeTree tree(10, 4);
  for (uint64_t i = 0; i < 10; ++i) ASSERT_NE(tree.insert({2 * i, 2 * i + 1}), RangeTree::kNone);
  EXPECT_EQ(tree.insert({100, 101}), RangeTree::kNone);
  EXPECT_EQ(tree.size(), 10u);
  EXPECT_EQ(tree.capacity(), 10u);  // 4, 8, then 10 (not 16)
  // Growth copied the 4 and then the 8 nodes held: the only moves.
  EXPECT_EQ(tree.entries_moved(), 12u);
  // An erased node is reused: no growth, no move.
  tree.erase(tree.front());
  ASSERT_NE(tree.insert({100, 101}), RangeTree::kNone);
  EXPECT_EQ(tree.capacity(), 10u);
  EXPECT_EQ(tree.entries_moved(), 12u);
  EXPECT_TRUE(tree.valid());
}

TEST(RangeTreeTest, ClearKeepsStorageAndClearAndTrimGivesItBack) {
  RangeTree tree(1000, 4);
  for (uint64_t i = 0; i < 100; ++i) tree.insert({2 * i, 2 * i + 1});
  const size_t grown = tree.capacity();
  EXPECT_EQ(grown, 128u);
  tree.clear();
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.capacity(), grown);
  for (uint64_t i = 0; i < 100; ++i) tree.insert({2 * i, 2 * i + 1});
  EXPECT_EQ(tree.capacity(), grown);
  tree.clear_and_trim(200, 4);
  EXPECT_EQ(tree.capacity(), grown);  // within the bound: kept
  tree.clear_and_trim(64, 4);
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.capacity(), 4u);
  tree.set_max_size(2);
  tree.insert({0, 1});
  tree.insert({5, 6});
  EXPECT_EQ(tree.insert({9, 10}), RangeTree::kNone);
  EXPECT_EQ(as_pairs(tree), (Pairs{{0, 1}, {5, 6}}));
}

TEST(RangeTreeTest, AscendingInsertsAndErasesFromTheFrontStayBalanced) {
  // What a sorted array handles worst: everything at one end.
  constexpr size_t kCount = 4096;
  RangeTree tree(kCount, 4);
  for (uint64_t i = 0; i < kCount; ++i) {
    tree.insert({16 * i + 8, 16 * i + 16});
    ASSERT_LE(tree.height(), height_bound(tree.size()));
  }
  EXPECT_EQ(tree.height(), 13);  // a full tree of 4095 nodes plus one level
  EXPECT_TRUE(tree.valid());
  while (tree.size() > 1) {
    tree.erase(tree.front());
    ASSERT_LE(tree.height(), height_bound(tree.size()));
  }
  EXPECT_TRUE(tree.valid());
  EXPECT_EQ(as_pairs(tree), (Pairs{{16 * (kCount - 1) + 8, 16 * kCount}}));
}

// Random inserts (with and without the range above given), erases and
// replacements against a std::map (fixed seed), every invariant checked
// after every operation.
TEST(RangeTreeTest, MatchesAMapUnderRandomOperations) {
  constexpr size_t kMax = 300;
  RangeTree tree(kMax, 4);
  std::map<uint64_t, std::pair<uint64_t, Handle>> model;  // start -> (end, handle)
  std::mt19937_64 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const uint64_t slot = rng() % 1000;  // ranges [4 slot, 4 slot + 1 or 2)
    const auto it = model.find(4 * slot);
    if (it == model.end()) {
      // Half the time with the range above it given (no search).
      const auto above = model.upper_bound(4 * slot);
      const Handle hint = above == model.end() ? RangeTree::kNone : above->second.second;
      const Handle handle = rng() % 2 == 0 ? tree.insert({4 * slot, 4 * slot + 1})
                                           : tree.insert_before(hint, {4 * slot, 4 * slot + 1});
      if (model.size() == kMax) {
        ASSERT_EQ(handle, RangeTree::kNone);
        continue;
      }
      ASSERT_NE(handle, RangeTree::kNone);
      model.emplace(4 * slot, std::make_pair(4 * slot + 1, handle));
    } else if (rng() % 3 == 0) {
      const uint64_t end = it->second.first == 4 * slot + 1 ? 4 * slot + 2 : 4 * slot + 1;
      tree.replace(it->second.second, {4 * slot, end});
      it->second.first = end;
    } else {
      tree.erase(it->second.second);
      model.erase(it);
    }
    ASSERT_EQ(tree.size(), model.size());
    ASSERT_LE(tree.height(), height_bound(tree.size()));
    ASSERT_TRUE(tree.valid());
    ASSERT_EQ(tree.front(), model.empty() ? RangeTree::kNone : model.begin()->second.second);
    ASSERT_EQ(tree.back(), model.empty() ? RangeTree::kNone : model.rbegin()->second.second);
    const uint64_t probe = rng() % 4100;
    const Handle found = tree.first_ending_at_or_after(probe);
    // A range is at most 2 long, so one starting below probe - 2 ends
    // before `probe`.
    auto reference = model.end();
    for (auto m = model.lower_bound(probe >= 2 ? probe - 2 : 0); m != model.end(); ++m) {
      if (m->second.first >= probe) {
        reference = m;
        break;
      }
    }
    if (reference == model.end()) {
      ASSERT_EQ(found, RangeTree::kNone);
    } else {
      ASSERT_EQ(found, reference->second.second);
    }
    const auto after = model.upper_bound(probe);
    const Handle next = tree.first_starting_after(probe);
    if (after == model.end()) {
      ASSERT_EQ(next, RangeTree::kNone);
    } else {
      ASSERT_EQ(next, after->second.second);
    }
  }
  // next() walks the same order.
  Handle walk = tree.front();
  for (const auto& [start, value] : model) {
    ASSERT_EQ(walk, value.second);
    walk = tree.next(walk);
  }
  EXPECT_EQ(walk, RangeTree::kNone);
  Pairs expected;
  for (const auto& [start, value] : model) expected.emplace_back(start, value.first);
  EXPECT_EQ(as_pairs(tree), expected);
  EXPECT_TRUE(tree.valid());
  EXPECT_LE(tree.capacity(), kMax);
}

}  // namespace
}  // namespace dpquic::conn
