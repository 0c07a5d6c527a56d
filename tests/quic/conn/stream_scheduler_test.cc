// The transport's stream scheduler: critical first, then urgency 0..7;
// non-incremental streams one after another by stream ID, incremental ones
// round-robin; priorities changed while queued; no allocation once reserved.

#include "quic/conn/stream_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

StreamPriority urgency(uint8_t u, bool incremental) {
  StreamPriority priority;
  priority.urgency = u;
  priority.incremental = incremental;
  return priority;
}

// Pops `turns` times, pushing each popped slot back (a stream that still
// has data after its turn), and returns the order served.
std::vector<uint32_t> serve(StreamScheduler& scheduler, size_t turns) {
  std::vector<uint32_t> order;
  for (size_t i = 0; i < turns && !scheduler.empty(); ++i) {
    const uint32_t slot = scheduler.front();
    scheduler.pop();
    order.push_back(slot);
    scheduler.push(slot);
  }
  return order;
}

class StreamSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scheduler.reserve(8);
    for (uint32_t slot = 0; slot < 8; ++slot) scheduler.assign(slot, 4 * slot);
  }
  StreamScheduler scheduler;
};

TEST_F(StreamSchedulerTest, DefaultPriorityIsIncrementalUrgencyThreeRoundRobin) {
  EXPECT_EQ(scheduler.priority(0), StreamPriority{});
  EXPECT_EQ(scheduler.priority(0).urgency, 3);
  EXPECT_TRUE(scheduler.priority(0).incremental);
  for (uint32_t slot : {2u, 0u, 1u}) scheduler.push(slot);
  EXPECT_EQ(serve(scheduler, 6), (std::vector<uint32_t>{2, 0, 1, 2, 0, 1}));
}

TEST_F(StreamSchedulerTest, MoreUrgentFirstWhateverTheOrderOfArrival) {
  scheduler.set_priority(1, urgency(7, false));
  scheduler.set_priority(2, urgency(0, false));
  scheduler.set_priority(3, urgency(5, true));
  for (uint32_t slot : {1u, 3u, 2u}) scheduler.push(slot);
  // The urgency-0 stream is served every time while it is queued.
  EXPECT_EQ(serve(scheduler, 3), (std::vector<uint32_t>{2, 2, 2}));
  scheduler.pop();  // stream 2 finished
  EXPECT_EQ(serve(scheduler, 2), (std::vector<uint32_t>{3, 3}));
  scheduler.pop();
  EXPECT_EQ(scheduler.front(), 1u);
}

TEST_F(StreamSchedulerTest, NonIncrementalGoOneAfterAnotherByStreamId) {
  for (uint32_t slot : {5u, 2u, 4u}) {
    scheduler.set_priority(slot, urgency(3, false));
    scheduler.push(slot);
  }
  EXPECT_EQ(serve(scheduler, 3), (std::vector<uint32_t>{2, 2, 2}));
  scheduler.pop();
  // A lower stream ID arriving later goes ahead of the rest.
  scheduler.set_priority(1, urgency(3, false));
  scheduler.push(1);
  EXPECT_EQ(serve(scheduler, 2), (std::vector<uint32_t>{1, 1}));
  scheduler.pop();
  EXPECT_EQ(scheduler.front(), 4u);
  scheduler.pop();
  EXPECT_EQ(scheduler.front(), 5u);
}

TEST_F(StreamSchedulerTest, NonIncrementalBeforeIncrementalOfEqualUrgency) {
  scheduler.set_priority(1, urgency(2, true));
  scheduler.set_priority(2, urgency(2, false));
  scheduler.push(1);
  scheduler.push(2);
  EXPECT_EQ(serve(scheduler, 2), (std::vector<uint32_t>{2, 2}));
}

TEST_F(StreamSchedulerTest, CriticalStreamsPrecedeUrgencyZero) {
  StreamPriority critical;
  critical.critical = true;
  scheduler.set_priority(0, urgency(0, false));
  scheduler.set_priority(6, critical);
  scheduler.set_priority(7, critical);
  for (uint32_t slot : {0u, 6u, 7u}) scheduler.push(slot);
  EXPECT_EQ(serve(scheduler, 4), (std::vector<uint32_t>{6, 7, 6, 7}));
}

TEST_F(StreamSchedulerTest, PriorityChangeMovesAQueuedStream) {
  for (uint32_t slot : {1u, 2u, 3u}) scheduler.push(slot);
  EXPECT_EQ(scheduler.front(), 1u);
  scheduler.set_priority(3, urgency(1, true));
  EXPECT_EQ(scheduler.front(), 3u);
  scheduler.set_priority(3, urgency(6, true));
  EXPECT_EQ(serve(scheduler, 3), (std::vector<uint32_t>{1, 2, 1}));
  EXPECT_EQ(scheduler.size(), 3u);
  // The middle of a rotating list can leave it.
  scheduler.set_priority(1, urgency(6, true));
  EXPECT_EQ(serve(scheduler, 4), (std::vector<uint32_t>{2, 2, 2, 2}));
}

TEST_F(StreamSchedulerTest, UrgencyAboveSevenIsSeven) {
  scheduler.set_priority(1, urgency(200, true));
  EXPECT_EQ(scheduler.priority(1).urgency, 7);
}

TEST_F(StreamSchedulerTest, PushOfAQueuedSlotAndClear) {
  scheduler.push(1);
  scheduler.push(1);
  EXPECT_EQ(scheduler.size(), 1u);
  EXPECT_TRUE(scheduler.queued(1));
  scheduler.clear();
  EXPECT_TRUE(scheduler.empty());
  EXPECT_FALSE(scheduler.queued(1));
  scheduler.push(3);
  EXPECT_EQ(scheduler.front(), 3u);
}

TEST_F(StreamSchedulerTest, AssignRestoresTheDefault) {
  scheduler.set_priority(1, urgency(0, false));
  scheduler.assign(1, 400);
  EXPECT_EQ(scheduler.priority(1), StreamPriority{});
}

TEST_F(StreamSchedulerTest, NothingAllocatesOnceReserved) {
  scheduler.set_priority(4, urgency(1, false));
  dpquic::testing::AllocationWindow window;
  for (int round = 0; round < 1000; ++round) {
    for (uint32_t slot = 0; slot < 8; ++slot) scheduler.push(slot);
    scheduler.set_priority(static_cast<uint32_t>(round % 8), urgency(round % 8, round % 2 == 0));
    while (!scheduler.empty()) scheduler.pop();
  }
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace dpquic::conn
