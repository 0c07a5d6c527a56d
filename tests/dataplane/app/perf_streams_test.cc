// The perf apps' bookkeeping: the (connection, stream) hash map against a
// std::map under random inserts and erasures (backward-shift deletion must
// keep every entry reachable), the record pool and the intrusive list.

#include "dataplane/app/perf_streams.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace dpquic::dataplane {
namespace {

struct Item {
  uint32_t slot = 0;
  int value = 0;
  ListLinks<Item> links;
};
using ItemList = IntrusiveList<Item, &Item::links>;

TEST(PerfStreamsTest, StreamTableMatchesAReferenceMap) {
  StreamTable<Item> table(16);
  std::map<std::pair<uint32_t, uint64_t>, Item*> reference;
  std::vector<Item> items(4096);
  std::mt19937_64 random(7);
  size_t next_item = 0;
  for (int step = 0; step < 200'000; ++step) {
    // Few handles and stream ids of one type, as on a server: long probe runs.
    const uint32_t handle = static_cast<uint32_t>(random() % 4);
    const uint64_t stream = (random() % 600) * 4;
    const auto key = std::make_pair(handle, stream);
    if (random() % 3 != 0) {
      Item* item = &items[next_item++ % items.size()];
      table.insert(handle, stream, item);
      reference[key] = item;
    } else {
      EXPECT_EQ(table.erase(handle, stream), reference.erase(key) == 1);
    }
    if (step % 1000 == 0) {
      ASSERT_EQ(table.size(), reference.size());
      for (const auto& [k, item] : reference) ASSERT_EQ(table.find(k.first, k.second), item);
    }
  }
  for (uint32_t handle = 0; handle < 4; ++handle) {
    for (uint64_t stream = 0; stream < 2400; ++stream) {
      const auto it = reference.find({handle, stream});
      ASSERT_EQ(table.find(handle, stream), it == reference.end() ? nullptr : it->second);
    }
  }
}

TEST(PerfStreamsTest, RecordPoolReusesRecordsAndKeepsSlots) {
  RecordPool<Item> pool;
  std::set<uint32_t> slots;
  std::vector<Item*> taken;
  for (size_t i = 0; i < RecordPool<Item>::kBlock + 1; ++i) {
    taken.push_back(pool.take());
    slots.insert(taken.back()->slot);
  }
  EXPECT_EQ(slots.size(), RecordPool<Item>::kBlock + 1);  // distinct slots
  EXPECT_EQ(pool.capacity(), 2 * RecordPool<Item>::kBlock);
  EXPECT_EQ(pool.live(), RecordPool<Item>::kBlock + 1);
  for (Item* item : taken) EXPECT_EQ(pool.at(item->slot), item);
  taken[5]->value = 42;
  const uint32_t slot = taken[5]->slot;
  pool.give(taken[5]);
  EXPECT_EQ(pool.at(slot)->value, 0);  // reset on return
  EXPECT_EQ(pool.at(slot)->slot, slot);
  EXPECT_EQ(pool.take(), taken[5]);  // the free list is last in, first out
  EXPECT_EQ(pool.capacity(), 2 * RecordPool<Item>::kBlock);
  EXPECT_EQ(pool.at(static_cast<uint32_t>(pool.capacity())), nullptr);
}

TEST(PerfStreamsTest, IntrusiveListKeepsOrderThroughRemovals) {
  std::vector<Item> items(5);
  ItemList list;
  for (int i = 0; i < 5; ++i) {
    items[i].value = i;
    list.push_back(&items[i]);
  }
  list.push_back(&items[2]);  // already linked: no effect
  list.remove(&items[0]);
  list.remove(&items[3]);
  list.remove(&items[3]);  // not linked: no effect
  list.push_front(&items[3]);
  std::vector<int> order;
  for (Item* item = list.front(); item != nullptr; item = ItemList::next(item)) {
    order.push_back(item->value);
  }
  EXPECT_EQ(order, (std::vector<int>{3, 1, 2, 4}));
  EXPECT_FALSE(ItemList::contains(&items[0]));
  EXPECT_TRUE(ItemList::contains(&items[4]));
  ItemList other;
  other.splice_back(list);
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(other.front(), &items[3]);
  while (Item* item = other.front()) other.remove(item);
  EXPECT_TRUE(other.empty());
}

}  // namespace
}  // namespace dpquic::dataplane
