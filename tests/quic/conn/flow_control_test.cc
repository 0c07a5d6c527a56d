#include "quic/conn/flow_control.h"

#include <gtest/gtest.h>

namespace dpquic::conn {
namespace {

constexpr Duration kRtt = 100 * kMillisecond;

TEST(ReceiveWindowTest, LimitIsExactAtTheBoundary) {
  ReceiveWindow window(1000, 1000);
  EXPECT_EQ(window.limit(), 1000u);
  EXPECT_TRUE(window.on_received(999));
  EXPECT_TRUE(window.on_received(1000));
  EXPECT_FALSE(window.on_received(1001));
  EXPECT_EQ(window.highest_received(), 1000u);  // the violation is not recorded
  EXPECT_TRUE(window.on_received(10));          // lower values change nothing
  EXPECT_EQ(window.highest_received(), 1000u);
}

TEST(ReceiveWindowTest, UpdateDueAfterHalfTheWindowIsConsumed) {
  ReceiveWindow window(1000, 1000);
  EXPECT_FALSE(window.update_due());
  EXPECT_EQ(window.next_limit(), 1000u);
  window.on_consumed(499, 0, kRtt);
  EXPECT_FALSE(window.update_due());
  EXPECT_EQ(window.next_limit(), 1499u);
  window.on_consumed(500, 0, kRtt);
  EXPECT_TRUE(window.update_due());
  EXPECT_EQ(window.next_limit(), 1500u);
  window.on_consumed(400, 0, kRtt);  // not monotonic: ignored
  EXPECT_EQ(window.consumed(), 500u);
  window.on_update_sent(window.next_limit());
  EXPECT_EQ(window.limit(), 1500u);
  EXPECT_FALSE(window.update_due());
  EXPECT_TRUE(window.on_received(1500));
  EXPECT_FALSE(window.on_received(1501));
  EXPECT_EQ(window.window(), 1000u);
}

TEST(ReceiveWindowTest, LostUpdateIsDueAgainOnlyWhileLatest) {
  ReceiveWindow window(1000, 1000);
  window.on_consumed(600, 0, kRtt);
  ASSERT_TRUE(window.update_due());
  window.on_update_sent(1600);
  EXPECT_FALSE(window.update_due());
  window.on_update_lost(1600);
  EXPECT_TRUE(window.update_due());
  EXPECT_EQ(window.next_limit(), 1600u);
  window.on_update_sent(1600);
  EXPECT_FALSE(window.update_due());

  window.on_consumed(1200, 0, kRtt);
  window.on_update_sent(window.next_limit());  // 2200
  EXPECT_EQ(window.limit(), 2200u);
  window.on_update_lost(1600);  // superseded: nothing to resend
  EXPECT_FALSE(window.update_due());
  window.on_update_sent(1600);  // an old limit never lowers it
  EXPECT_EQ(window.limit(), 2200u);
}

TEST(ReceiveWindowTest, StopUpdatesSilencesIt) {
  ReceiveWindow window(1000, 1000);
  window.on_consumed(900, 0, kRtt);
  ASSERT_TRUE(window.update_due());
  window.stop_updates();
  EXPECT_FALSE(window.update_due());
  window.on_update_lost(1000);
  EXPECT_FALSE(window.update_due());
}

TEST(ReceiveWindowTest, NextLimitIsCappedAtTheVarintMaximum) {
  ReceiveWindow window(kMaxFlowLimit, kMaxFlowLimit);
  EXPECT_EQ(window.limit(), kMaxFlowLimit);
  window.on_consumed(kMaxFlowLimit - 5, 0, kRtt);
  EXPECT_EQ(window.next_limit(), kMaxFlowLimit);
  EXPECT_FALSE(window.update_due());
  ReceiveWindow huge(UINT64_MAX, UINT64_MAX);
  EXPECT_EQ(huge.limit(), kMaxFlowLimit);
  EXPECT_EQ(huge.window(), kMaxFlowLimit);
}

// Consumes half a window at `now` so an update becomes due, then sends it.
void run_update_cycle(ReceiveWindow& window, Instant now) {
  const uint64_t target = window.limit() - window.window() / 2;
  window.on_consumed(target, now, kRtt);
  ASSERT_TRUE(window.update_due());
  window.on_update_sent(window.next_limit());
}

TEST(ReceiveWindowTest, AutoTuningDoublesWhenUpdatesComeFasterThanTwoRtts) {
  ReceiveWindow window(1000, 5000);
  run_update_cycle(window, 1 * kSecond);  // the first update: nothing to compare with
  EXPECT_EQ(window.window(), 1000u);
  run_update_cycle(window, 1 * kSecond + 150 * kMillisecond);  // 1.5 RTT later
  EXPECT_EQ(window.window(), 2000u);
  EXPECT_EQ(window.limit(), window.consumed() + 2000);
  run_update_cycle(window, 1 * kSecond + 349 * kMillisecond);  // 199 ms later
  EXPECT_EQ(window.window(), 4000u);
  run_update_cycle(window, 1 * kSecond + 400 * kMillisecond);
  EXPECT_EQ(window.window(), 5000u);  // capped at max_window
  run_update_cycle(window, 1 * kSecond + 410 * kMillisecond);
  EXPECT_EQ(window.window(), 5000u);
}

TEST(ReceiveWindowTest, AutoTuningLeavesTheWindowAloneWhenUpdatesAreSlow) {
  ReceiveWindow window(1000, 8000);
  Instant now = 0;
  for (int i = 0; i < 10; ++i) {
    run_update_cycle(window, now);
    now += 2 * kRtt;  // exactly two RTTs apart: not faster
  }
  EXPECT_EQ(window.window(), 1000u);
  // Consuming more within the same cycle does not double twice.
  ReceiveWindow once(1000, 8000);
  run_update_cycle(once, 0);
  once.on_consumed(once.limit() - 500, 10 * kMillisecond, kRtt);
  EXPECT_EQ(once.window(), 2000u);
  once.on_consumed(once.limit() - 100, 11 * kMillisecond, kRtt);
  once.on_consumed(once.limit() - 50, 12 * kMillisecond, kRtt);
  EXPECT_EQ(once.window(), 2000u);
}

TEST(ReceiveWindowTest, MaxWindowBelowInitialIsRaised) {
  ReceiveWindow window(4000, 1000);
  EXPECT_EQ(window.window(), 4000u);
  EXPECT_EQ(window.max_window(), 4000u);
}

TEST(SendCreditTest, AvailableAndRaisingOnly) {
  SendCredit credit(1000);
  EXPECT_EQ(credit.available(), 1000u);
  credit.on_sent(400);
  EXPECT_EQ(credit.available(), 600u);
  EXPECT_EQ(credit.sent(), 400u);
  credit.on_max_data(900);  // lower: ignored
  EXPECT_EQ(credit.limit(), 1000u);
  credit.on_max_data(2000);
  EXPECT_EQ(credit.limit(), 2000u);
  EXPECT_EQ(credit.available(), 1600u);
  credit.on_sent(1600);
  EXPECT_EQ(credit.available(), 0u);
}

TEST(SendCreditTest, DataBlockedOncePerLimit) {
  SendCredit credit(100);
  EXPECT_FALSE(credit.blocked_frame_due());
  credit.on_sent(100);
  EXPECT_TRUE(credit.blocked_frame_due());
  credit.on_blocked_frame_sent();
  EXPECT_FALSE(credit.blocked_frame_due());
  credit.on_blocked_frame_lost(100);
  EXPECT_TRUE(credit.blocked_frame_due());
  credit.on_blocked_frame_sent();
  credit.on_max_data(200);
  EXPECT_FALSE(credit.blocked_frame_due());  // credit again
  credit.on_blocked_frame_lost(100);         // stale loss: nothing to do
  EXPECT_FALSE(credit.blocked_frame_due());
  credit.on_sent(100);
  EXPECT_TRUE(credit.blocked_frame_due());  // blocked at the new limit
  credit.on_blocked_frame_sent();
  credit.on_blocked_frame_lost(100);
  EXPECT_FALSE(credit.blocked_frame_due());
}

TEST(SendCreditTest, DefaultHasNoCredit) {
  SendCredit credit;
  EXPECT_EQ(credit.limit(), 0u);
  EXPECT_EQ(credit.available(), 0u);
  EXPECT_TRUE(credit.blocked_frame_due());
}

}  // namespace
}  // namespace dpquic::conn
