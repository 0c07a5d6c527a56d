// After warm-up, the receive path (ReceiveStream + read, and the window
// updates it triggers) allocates nothing per frame, in order or not.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

#include "quic/conn/receive_stream.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

constexpr size_t kFrameSize = 1200;
constexpr size_t kGroup = 32;  // frames delivered out of order within a group
constexpr Duration kRtt = 20 * kMillisecond;

class Receiver {
 public:
  Receiver(BlockPool& pool) : stream_(pool, 64 * 1024, 1024 * 1024), out_(16 * 1024) {
    for (size_t i = 0; i < payload_.size(); ++i) payload_[i] = static_cast<uint8_t>(i * 7);
    for (size_t i = 0; i < kGroup; ++i) order_[i] = i;
  }

  // Delivers `groups` groups of frames, shuffled within each group if
  // `out_of_order` (with one duplicate per group). Reads after every 8
  // groups, or earlier when the stream's flow-control limit is reached, so
  // up to ~300 KB are buffered. Returns false on any error or wrong byte.
  bool run(size_t groups, bool out_of_order) {
    for (size_t g = 0; g < groups; ++g) {
      if (next_offset_ + kGroup * kFrameSize > stream_.window().limit() && !drain()) return false;
      if (out_of_order) std::shuffle(order_.begin(), order_.end(), rng_);
      const uint64_t base = next_offset_;
      for (size_t k = 0; k < kGroup; ++k) {
        if (!deliver(base + order_[k] * kFrameSize)) return false;
        if (out_of_order && k == kGroup / 2 && !deliver(base + order_[0] * kFrameSize))
          return false;
        ++frames_;
      }
      next_offset_ = base + kGroup * kFrameSize;
      now_ += kMillisecond;
      if (g % 8 == 7 && !drain()) return false;
    }
    return drain();
  }

  size_t frames() const { return frames_; }
  const ReceiveStream& stream() const { return stream_; }

 private:
  // Reads everything readable, checks it, and sends a window update if due.
  bool drain() {
    bool fin = false;
    size_t n;
    while ((n = stream_.read(out_, fin, now_, kRtt)) > 0) {
      for (size_t i = 0; i < n; ++i)
        if (out_[i] != expected(read_ + i)) return false;
      read_ += n;
    }
    if (read_ != next_offset_) return false;
    if (stream_.window().update_due())
      stream_.window().on_update_sent(stream_.window().next_limit());
    return true;
  }

  uint8_t expected(uint64_t offset) const { return payload_[offset % payload_.size()]; }

  bool deliver(uint64_t offset) {
    // The payload repeats every payload_.size() bytes, a multiple of kFrameSize.
    const size_t start = static_cast<size_t>(offset % payload_.size());
    uint64_t newly = 0;
    return stream_
        .on_stream_frame(offset, std::span<const uint8_t>(payload_).subspan(start, kFrameSize),
                         false, newly)
        .ok();
  }

  ReceiveStream stream_;
  std::vector<uint8_t> out_;
  std::array<uint8_t, kFrameSize * 7> payload_{};
  std::array<size_t, kGroup> order_{};
  std::mt19937 rng_{99};
  uint64_t next_offset_ = 0;
  uint64_t read_ = 0;
  size_t frames_ = 0;
  Instant now_ = 0;
};

TEST(ReceiveAllocTest, CounterSeesAllocations) {
  testing::AllocationWindow window;
  auto* probe = new std::vector<uint8_t>(100);
  delete probe;
  EXPECT_GE(window.count(), 1u);
}

TEST(ReceiveAllocTest, SteadyStateReceivingAllocatesNothing) {
  BlockPool pool(4096, 16, 4096);
  Receiver receiver(pool);
  // Warm-up: the pool, the block ring and the gap list reach their sizes,
  // and the window finishes auto-tuning.
  ASSERT_TRUE(receiver.run(200, true));
  ASSERT_TRUE(receiver.run(200, false));
  ASSERT_EQ(receiver.stream().window().window(), 1024u * 1024);
  const size_t warm_frames = receiver.frames();

  testing::AllocationWindow window;
  const bool in_order_ok = receiver.run(100'000 / kGroup, false);
  const bool out_of_order_ok = receiver.run(100'000 / kGroup, true);
  const size_t allocations = window.count();
  EXPECT_TRUE(in_order_ok);
  EXPECT_TRUE(out_of_order_ok);
  EXPECT_GE(receiver.frames() - warm_frames, 2 * (100'000 / kGroup) * kGroup);
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(pool.blocks_in_use(), receiver.stream().buffer().blocks_held());
}

}  // namespace
}  // namespace dpquic::conn
