#include "tools/quicload/port_pool.h"

#include <gtest/gtest.h>

#include <set>

namespace dpquic::tools {
namespace {

TEST(PortPoolTest, HandsOutEachPortOnceThenRunsDry) {
  PortPool pool(40000, 5);
  std::set<uint16_t> taken;
  for (int i = 0; i < 5; ++i) {
    const auto port = pool.take();
    ASSERT_TRUE(port.has_value());
    EXPECT_GE(*port, 40000);
    EXPECT_LT(*port, 40005);
    taken.insert(*port);
  }
  EXPECT_EQ(taken.size(), 5u);
  EXPECT_FALSE(pool.take().has_value());
  EXPECT_EQ(pool.free(), 0u);
}

TEST(PortPoolTest, TheLongestFreedComesBackFirst) {
  PortPool pool(40000, 3);
  const uint16_t a = *pool.take(), b = *pool.take(), c = *pool.take();
  pool.give_back(b);
  pool.give_back(a);
  EXPECT_EQ(*pool.take(), b);
  pool.give_back(c);
  EXPECT_EQ(*pool.take(), a);
  EXPECT_EQ(*pool.take(), c);
  EXPECT_FALSE(pool.take().has_value());
}

TEST(PortPoolTest, PortsNotTakenAreIgnored) {
  PortPool pool(40000, 2);
  const uint16_t a = *pool.take();
  pool.give_back(a);
  pool.give_back(a);      // twice
  pool.give_back(39999);  // outside the range
  pool.give_back(40002);
  pool.give_back(40001);  // in the range, never taken
  EXPECT_EQ(pool.free(), 2u);
  EXPECT_TRUE(pool.take().has_value());
  EXPECT_TRUE(pool.take().has_value());
  EXPECT_FALSE(pool.take().has_value());
}

TEST(PortPoolTest, ARangeUpToTheLastPort) {
  PortPool pool(65534, 2);
  EXPECT_EQ(*pool.take(), 65534);
  EXPECT_EQ(*pool.take(), 65535);
  EXPECT_FALSE(pool.take().has_value());
}

}  // namespace
}  // namespace dpquic::tools
