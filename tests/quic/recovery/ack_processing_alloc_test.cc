// Proves ACK processing allocates nothing in steady state: after a warm-up
// that reaches the largest window, 100k send/ACK rounds (sends with skipped
// numbers, ACKs with reordered holes and duplicate ranges below the window,
// stalls that let the window grow to ~1000 packets, and a second connection
// sharing the core's pool and XOR buffer) run inside an allocation-counting
// window (//tools/testbed:allocation_counter).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "quic/recovery/ack_processing.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/recovery/sent_packets.h"
#include "tests/quic/recovery/ack_frame_builder.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::recovery {
namespace {

using ::dpquic::testing::AllocationWindow;

class Counter final : public NewlyAckedVisitor {
 public:
  void on_newly_acked(uint64_t packet_number, const SentPacket& packet) override {
    ++count;
    checksum += packet_number ^ packet.time_sent;
  }
  uint64_t count = 0;
  uint64_t checksum = 0;
};

// One connection's sender and the peer's ACKs, as a deterministic pattern.
class Connection {
 public:
  Connection(SentPacketPool& pool, uint64_t first_packet_number)
      : sent_(pool), first_(first_packet_number), next_(first_packet_number) {}

  // One round: send three packets (every 97th round skips a number), and
  // unless stalled, process an ACK of everything from 50 below the window
  // up to the newest packet, except the skipped numbers and the packet before
  // the newest (reordered: the next ACK covers it). Returns false on an error.
  bool round(uint64_t index, AckXorBuffer& buffer, Counter& counter) {
    for (int i = 0; i < 3; ++i) {
      if (index % 97 == 0 && i == 1) remember_skip(next_++);
      SentPacket packet;
      packet.time_sent = next_ * 10;
      packet.size = 1200;
      packet.ack_eliciting = true;
      packet.in_flight = true;
      if (!sent_.insert(next_++, packet)) return false;
      ++sent_count_;
    }
    // Every 1000 rounds, 300 without ACKs: the window grows to ~900.
    if (index % 1000 >= 700) return true;

    const uint64_t newest = next_ - 1;
    // (Not below the first number: those were never sent.)
    const uint64_t lo =
        std::max(first_, sent_.window_begin() - std::min<uint64_t>(sent_.window_begin(), 50));
    // Excluded numbers, descending: the reordered one and recent skips.
    std::array<uint64_t, kSkips + 1> excluded{};
    size_t excluded_count = 0;
    excluded[excluded_count++] = newest - 1;
    for (size_t k = 0; k < kSkips; ++k) {
      const uint64_t skip = skips_[(skip_index_ + kSkips - 1 - k) % kSkips];
      if (skip != kNone && skip >= lo && skip <= newest) excluded[excluded_count++] = skip;
    }
    std::sort(excluded.begin(), excluded.begin() + excluded_count,
              [](uint64_t a, uint64_t b) { return a > b; });
    size_t range_count = 0;
    uint64_t top = newest;
    bool done = false;
    for (size_t k = 0; k < excluded_count && !done; ++k) {
      const uint64_t x = excluded[k];
      if (x > top) continue;
      if (x < top) ranges_[range_count++] = {x + 1, top};
      if (x == lo) done = true;
      top = x - 1;
    }
    if (!done && top >= lo) ranges_[range_count++] = {lo, top};

    wire::AckRangeView view;
    if (!testing::make_ack_view(std::span(ranges_.data(), range_count), frame_, view)) {
      return false;
    }
    AckSummary summary;
    return process_ack(view, sent_, buffer, counter, summary) == wire::WireError::kOk;
  }

  const SentPackets& sent() const { return sent_; }
  uint64_t sent_count() const { return sent_count_; }

 private:
  static constexpr size_t kSkips = 8;
  static constexpr uint64_t kNone = UINT64_MAX;

  void remember_skip(uint64_t pn) {
    skips_[skip_index_] = pn;
    skip_index_ = (skip_index_ + 1) % kSkips;
  }

  SentPackets sent_;
  uint64_t first_;
  uint64_t next_;
  uint64_t sent_count_ = 0;
  std::array<uint64_t, kSkips> skips_ = {kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone};
  size_t skip_index_ = 0;
  std::array<wire::AckRange, 16> ranges_{};
  std::array<uint8_t, 512> frame_{};
};

TEST(AckProcessingAllocTest, HundredThousandAcksAllocateNothingAfterWarmUp) {
  SentPacketPool pool;  // the core's pool and XOR buffer, shared
  AckXorBuffer buffer;
  Connection a(pool, 0);
  Connection b(pool, 1'000'000);
  Counter counter;
  constexpr uint64_t kWarmUp = 2000;  // two full stall cycles
  for (uint64_t i = 0; i < kWarmUp; ++i) {
    ASSERT_TRUE(a.round(i, buffer, counter)) << i;
    ASSERT_TRUE(b.round(i + 500, buffer, counter)) << i;
  }
  const size_t pool_allocations = pool.allocations();
  const size_t buffer_growth = buffer.growth_count();
  const uint64_t in_flight_before = a.sent().size() + b.sent().size();
  const uint64_t sent_before = a.sent_count() + b.sent_count();
  const uint64_t acked_before = counter.count;

  constexpr uint64_t kRounds = 50'000;  // two connections: 100k ACK rounds
  uint64_t failures = 0;
  {
    AllocationWindow window;
    for (uint64_t i = kWarmUp; i < kWarmUp + kRounds; ++i) {
      failures += !a.round(i, buffer, counter);
      failures += !b.round(i + 500, buffer, counter);
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(pool.allocations(), pool_allocations);
  EXPECT_EQ(buffer.growth_count(), buffer_growth);
  // The work was done: every packet sent in the window and everything in
  // flight before it was acknowledged, except what is in flight now.
  const uint64_t sent_during = a.sent_count() + b.sent_count() - sent_before;
  const uint64_t in_flight_after = a.sent().size() + b.sent().size();
  EXPECT_EQ(counter.count - acked_before, sent_during + in_flight_before - in_flight_after);
  EXPECT_EQ(sent_during, 2 * kRounds * 3);
  // The stalls grew the windows past 512 packets.
  EXPECT_EQ(a.sent().capacity(), 1024u);
  EXPECT_EQ(b.sent().capacity(), 1024u);
  EXPECT_GT(counter.count - acked_before, 2 * kRounds * 3 - 2000);
}

}  // namespace
}  // namespace dpquic::recovery
