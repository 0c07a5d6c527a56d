// The CID table allocates at construction only: inserts, lookups, erases and
// clear() afterwards never touch the heap.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "quic/endpoint/cid_table.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::endpoint {
namespace {

TEST(ConnectionIdTableAllocTest, NoAllocationAfterConstruction) {
  std::mt19937_64 rng(42);
  std::vector<wire::ConnectionId> cids;
  for (size_t i = 0; i < 6000; ++i) {
    uint8_t bytes[16];
    for (auto& byte : bytes) byte = static_cast<uint8_t>(rng());
    cids.emplace_back(std::span<const uint8_t>(bytes, 8 + i % 9));
  }
  ConnectionIdTable table(4096, rng());
  size_t inserted = 0;
  size_t found = 0;
  size_t erased = 0;
  {
    testing::AllocationWindow window;
    for (size_t round = 0; round < 3; ++round) {
      // Past 7/8 full, so failing inserts are exercised too.
      for (size_t i = 0; i < cids.size(); ++i) {
        inserted += table.insert(cids[i], static_cast<uint32_t>(i));
      }
      for (const auto& cid : cids) found += table.find(cid).has_value();
      for (size_t i = 0; i < cids.size(); i += 2) erased += table.erase(cids[i]);
      table.clear();
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(inserted, 3 * table.max_size());
  EXPECT_EQ(found, 3 * table.max_size());
  EXPECT_GT(erased, 0u);
}

}  // namespace
}  // namespace dpquic::endpoint
