// The windowed filters of BBR's model: the running maximum over a sliding
// window (Kathleen Nichols' algorithm) against a brute-force maximum, and
// the two-cycle max_bw filter.
#include "quic/recovery/windowed_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <utility>

namespace dpquic::recovery {
namespace {

TEST(WindowedMaxFilterTest, NewMaximumReplacesEverything) {
  WindowedMaxFilter<uint64_t> filter;
  filter.reset(10, 0);
  EXPECT_EQ(filter.update(5, 1, 10), 10u);
  EXPECT_EQ(filter.update(20, 2, 10), 20u);
  EXPECT_EQ(filter.update(1, 3, 10), 20u);
}

TEST(WindowedMaxFilterTest, MaximumExpiresAfterTheWindow) {
  WindowedMaxFilter<uint64_t> filter;
  filter.reset(100, 0);
  EXPECT_EQ(filter.update(50, 4, 10), 100u);
  EXPECT_EQ(filter.update(40, 8, 10), 100u);
  EXPECT_EQ(filter.update(30, 10, 10), 100u);  // age 10: still in the window
  // Age 11: the 100 leaves; the best of the later samples takes over.
  EXPECT_EQ(filter.update(20, 11, 10), 50u);
}

// Nichols' filter keeps three samples, so it is an estimate: it never
// reports more than the true windowed maximum, nor a value older than the
// window, and with samples every time unit it tracks the maximum of a
// window slightly shorter than requested.
TEST(WindowedMaxFilterTest, NeverAboveTheTrueMaximumOverTheWindow) {
  std::mt19937_64 rng(7);
  WindowedMaxFilter<uint64_t> filter;
  filter.reset(0, 0);
  std::deque<std::pair<uint64_t, uint64_t>> history;  // (time, value)
  constexpr uint64_t kWindow = 10;
  for (uint64_t t = 1; t < 5000; ++t) {
    const uint64_t value = rng() % 1000;
    history.emplace_back(t, value);
    while (t - history.front().first > kWindow) history.pop_front();
    uint64_t truth = 0;
    for (const auto& [time, v] : history) truth = std::max(truth, v);
    const uint64_t best = filter.update(value, t, kWindow);
    ASSERT_LE(best, truth) << "t=" << t;
    ASSERT_GE(best, value) << "t=" << t;
  }
}

TEST(TwoCycleMaxFilterTest, RemembersTheCurrentAndThePreviousCycle) {
  TwoCycleMaxFilter<double> filter;
  filter.update(100);
  filter.update(80);
  EXPECT_EQ(filter.best(), 100);
  filter.advance();
  filter.update(60);
  EXPECT_EQ(filter.best(), 100);  // the previous cycle still counts
  filter.advance();
  EXPECT_EQ(filter.best(), 60);  // two cycles later the 100 is gone
  filter.advance();
  EXPECT_EQ(filter.best(), 0);
}

}  // namespace
}  // namespace dpquic::recovery
