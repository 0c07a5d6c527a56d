#include "quic/conn/id_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace dpquic::conn {
namespace {

TEST(IdIndexTest, InsertFindErase) {
  IdIndex index;
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.find(0), std::nullopt);
  EXPECT_TRUE(index.insert(0, 7));
  EXPECT_TRUE(index.insert(4, 8));
  EXPECT_FALSE(index.insert(4, 9));  // present: unchanged
  EXPECT_EQ(index.find(4), 8u);
  EXPECT_EQ(index.find(0), 7u);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_TRUE(index.erase(0));
  EXPECT_FALSE(index.erase(0));
  EXPECT_EQ(index.find(0), std::nullopt);
  EXPECT_EQ(index.find(4), 8u);
  EXPECT_EQ(index.size(), 1u);
  index.clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.find(4), std::nullopt);
}

TEST(IdIndexTest, RefusesIdsBeyondTheVarintRange) {
  IdIndex index;
  EXPECT_TRUE(index.insert(kMaxStreamId, 1));
  EXPECT_EQ(index.find(kMaxStreamId), 1u);
  EXPECT_FALSE(index.insert(kMaxStreamId + 1, 2));
  EXPECT_FALSE(index.insert(~uint64_t{0}, 3));  // the empty marker
  EXPECT_FALSE(index.insert(8, IdIndex::kNoSlot));
  EXPECT_EQ(index.slot_of(8), IdIndex::kNoSlot);
  EXPECT_EQ(index.slot_of(kMaxStreamId), 1u);
  EXPECT_EQ(index.find(~uint64_t{0}), std::nullopt);
  EXPECT_FALSE(index.erase(~uint64_t{0}));
  EXPECT_EQ(index.size(), 1u);
}

TEST(IdIndexTest, CapacityIsAPowerOfTwoGrownAtThreeQuarters) {
  IdIndex small(5);
  EXPECT_EQ(small.capacity(), 8u);
  IdIndex index(16);
  EXPECT_EQ(index.capacity(), 16u);
  for (uint32_t i = 0; i < 12; ++i) ASSERT_TRUE(index.insert(uint64_t{i} * 4, i));
  EXPECT_EQ(index.capacity(), 16u);  // 12/16 is exactly 3/4
  ASSERT_TRUE(index.insert(48, 12));
  EXPECT_EQ(index.capacity(), 32u);
  for (uint32_t i = 0; i <= 12; ++i) EXPECT_EQ(index.find(uint64_t{i} * 4), i);
  index.reserve(100);
  EXPECT_EQ(index.capacity(), 256u);  // 100 <= 192
  for (uint32_t i = 0; i <= 12; ++i) EXPECT_EQ(index.find(uint64_t{i} * 4), i);
}

TEST(IdIndexTest, ChurnWithoutTombstonesNeverGrows) {
  // Streams come and go; the table stays at the size of the live set.
  IdIndex index(64);
  uint64_t next_id = 0;
  std::vector<uint64_t> live;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(index.insert(next_id, static_cast<uint32_t>(next_id)));
    live.push_back(next_id);
    next_id += 4;
  }
  for (int round = 0; round < 200'000; ++round) {
    const size_t victim = static_cast<size_t>(round) % live.size();
    ASSERT_TRUE(index.erase(live[victim]));
    ASSERT_TRUE(index.insert(next_id, static_cast<uint32_t>(next_id)));
    live[victim] = next_id;
    next_id += 4;
  }
  EXPECT_EQ(index.capacity(), 64u);
  EXPECT_EQ(index.size(), 40u);
  for (const uint64_t id : live) EXPECT_EQ(index.find(id), static_cast<uint32_t>(id));
}

// 100k random operations against std::unordered_map. Keys come from a small
// universe of stream ids (all four types) so that probe runs collide, wrap
// around the table and are cut by deletions all the time.
// The remembered last lookup never answers for an erased id, nor with the
// slot of an id erased and inserted again.
TEST(IdIndexTest, RememberedLookupFollowsEraseInsertAndGrowth) {
  IdIndex index(4);
  ASSERT_TRUE(index.insert(8, 1));
  EXPECT_EQ(index.find(8), 1u);
  EXPECT_EQ(index.find(8), 1u);
  ASSERT_TRUE(index.erase(8));
  EXPECT_EQ(index.find(8), std::nullopt);
  ASSERT_TRUE(index.insert(8, 2));
  EXPECT_EQ(index.find(8), 2u);
  // Growth moves buckets, not slots.
  for (uint64_t id = 100; id < 200; id += 4) ASSERT_TRUE(index.insert(id, 9));
  EXPECT_EQ(index.find(8), 2u);
  // Erasing another id whose probe run the remembered one is in.
  ASSERT_TRUE(index.erase(100));
  EXPECT_EQ(index.find(8), 2u);
  index.clear();
  EXPECT_EQ(index.find(8), std::nullopt);
  // With nothing remembered, the empty marker still finds nothing.
  EXPECT_EQ(index.find(~uint64_t{0}), std::nullopt);
}

TEST(IdIndexTest, MatchesUnorderedMapOverRandomOperations) {
  IdIndex index(4);
  std::unordered_map<uint64_t, uint32_t> model;
  std::mt19937_64 rng(0x5eed1d);
  for (int op = 0; op < 100'000; ++op) {
    // Grow the universe slowly so the table doubles several times.
    const uint64_t universe = 64 + static_cast<uint64_t>(op) / 50;
    // Half the operations reuse the previous id, as a bulk transfer does.
    static uint64_t previous = 0;
    const uint64_t id = rng() % 2 == 0 ? previous : rng() % (universe * 4);
    previous = id;
    const uint32_t slot = static_cast<uint32_t>(rng());
    switch (rng() % 3) {
      case 0: {
        const bool inserted = model.emplace(id, slot).second;
        ASSERT_EQ(index.insert(id, slot), inserted) << "op " << op;
        break;
      }
      case 1: ASSERT_EQ(index.erase(id), model.erase(id) == 1) << "op " << op; break;
      default: {
        const auto it = model.find(id);
        const std::optional<uint32_t> expected =
            it == model.end() ? std::nullopt : std::optional<uint32_t>(it->second);
        ASSERT_EQ(index.find(id), expected) << "op " << op;
      }
    }
    ASSERT_EQ(index.size(), model.size());
    ASSERT_LE(index.size() * 4, index.capacity() * 3);
  }
  // Everything the model holds is findable, nothing else is.
  for (const auto& [id, slot] : model) EXPECT_EQ(index.find(id), slot);
  size_t found = 0;
  for (uint64_t id = 0; id < (64 + 100'000 / 50) * 4; ++id) found += index.find(id).has_value();
  EXPECT_EQ(found, model.size());
}

}  // namespace
}  // namespace dpquic::conn
