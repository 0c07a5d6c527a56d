#include "tools/quicload/request_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace dpquic::tools {
namespace {

TEST(RequestTableTest, InsertFindErase) {
  RequestTable table(4);
  EXPECT_EQ(table.capacity(), 4u);
  RequestRecord* a = table.insert(10);
  ASSERT_NE(a, nullptr);
  a->slot = 3;
  EXPECT_EQ(table.find(10), a);
  EXPECT_EQ(table.find(10)->slot, 3u);
  EXPECT_EQ(table.find(11), nullptr);
  EXPECT_EQ(table.insert(10), nullptr);  // already there
  EXPECT_EQ(table.insert(0), nullptr);   // 0 is "free"
  table.erase(10);
  EXPECT_EQ(table.find(10), nullptr);
  EXPECT_EQ(table.size(), 0u);
  table.erase(10);  // absent: no-op
}

TEST(RequestTableTest, FullTableRefusesAndRecordsAreFresh) {
  RequestTable table(3);
  for (uint64_t id = 1; id <= 3; ++id) {
    RequestRecord* r = table.insert(id);
    ASSERT_NE(r, nullptr);
    r->received = 99;
    r->content_ok = false;
  }
  EXPECT_EQ(table.insert(4), nullptr);
  table.erase(2);
  RequestRecord* r = table.insert(4);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->received, 0u);  // reset on reuse
  EXPECT_TRUE(r->content_ok);
  EXPECT_EQ(table.find(1)->id, 1u);
  EXPECT_EQ(table.find(3)->id, 3u);
}

TEST(RequestTableTest, MatchesAMapUnderRandomChurn) {
  // Sequential ids as the clients hand them out, completing out of order.
  constexpr size_t kCapacity = 64;
  RequestTable table(kCapacity);
  std::map<uint64_t, uint32_t> reference;
  std::mt19937_64 rng(1);
  uint64_t next_id = 1;
  for (int step = 0; step < 200000; ++step) {
    const bool add = reference.size() < kCapacity && (reference.empty() || rng() % 2 == 0);
    if (add) {
      RequestRecord* r = table.insert(next_id);
      ASSERT_NE(r, nullptr);
      r->slot = static_cast<uint32_t>(next_id * 7);
      reference[next_id] = static_cast<uint32_t>(next_id * 7);
      ++next_id;
    } else {
      auto it = reference.begin();
      std::advance(it, rng() % reference.size());
      table.erase(it->first);
      reference.erase(it);
    }
    if (step % 1000 == 0) {
      ASSERT_EQ(table.size(), reference.size());
      for (const auto& [id, slot] : reference) {
        RequestRecord* r = table.find(id);
        ASSERT_NE(r, nullptr) << id;
        ASSERT_EQ(r->slot, slot);
      }
      ASSERT_EQ(table.find(next_id), nullptr);
    }
  }
  size_t visited = 0;
  table.for_each([&](RequestRecord& r) {
    ++visited;
    EXPECT_EQ(reference.count(r.id), 1u);
  });
  EXPECT_EQ(visited, reference.size());
}

}  // namespace
}  // namespace dpquic::tools
