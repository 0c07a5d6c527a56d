// Proves ACK generation allocates nothing: 100k received packets (with loss,
// reordering, duplicates and ECN marks), the ACKs they call for, and the
// pruning when those ACKs are acknowledged, all inside an allocation-counting
// window (//tools/testbed:allocation_counter).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>

#include "quic/recovery/ack_tracker.h"
#include "quic/wire/frame_codec.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::recovery {
namespace {

using ::dpquic::testing::AllocationWindow;

TEST(AckTrackerAllocTest, ReceivingAndAcknowledgingAllocatesNothing) {
  constexpr int kPackets = 100000;
  AckTracker tracker;  // Application space, threshold 2, 25 ms
  std::mt19937_64 rng(7);
  std::array<uint8_t, 1500> buffer;
  // Largest Acknowledged of ACKs "in flight", acknowledged a few ACKs later.
  std::array<uint64_t, 8> sent_acks{};
  size_t acks_sent = 0, duplicates = 0, bytes_written = 0;
  uint64_t next = 0;
  Instant now = 1000 * kSecond;
  {
    AllocationWindow window;
    for (int i = 0; i < kPackets; ++i) {
      now += 10 * kMicrosecond;
      const uint64_t roll = rng() % 100;
      uint64_t pn;
      if (roll < 3) {
        next += 1 + rng() % 3;  // loss
        pn = next++;
      } else if (roll < 8 && next > 8) {
        pn = next - 1 - rng() % 8;  // late, or a duplicate
      } else {
        pn = next++;
      }
      const bool ack_eliciting = roll % 4 != 0;
      const uint8_t ecn = static_cast<uint8_t>(rng() % 4);
      if (tracker.on_packet_received(now, pn, ack_eliciting, ecn)) ++duplicates;
      if (tracker.ack_required(now) || (i % 16 == 0 && tracker.has_ack_to_send())) {
        wire::ByteWriter writer(buffer);
        const size_t written = tracker.write_ack_frame(writer, now);
        ASSERT_NE(written, 0u);
        bytes_written += written;
        sent_acks[acks_sent % sent_acks.size()] = tracker.on_ack_sent(now);
        ++acks_sent;
        // The ACK sent four ACKs ago is acknowledged by the peer now.
        if (acks_sent >= 4) {
          tracker.on_ack_frame_acknowledged(sent_acks[(acks_sent - 4) % sent_acks.size()]);
        }
      }
      // Whatever was due has gone: the next deadline is in the future.
      ASSERT_GT(tracker.ack_deadline(), now);
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_GT(acks_sent, static_cast<size_t>(kPackets) / 4);
  EXPECT_GT(duplicates, 0u);
  EXPECT_GT(bytes_written, acks_sent * 4);
  EXPECT_LE(tracker.received().size(), ReceivedRanges::kMaxRanges);

  // The last ACK still decodes and names the largest packet received.
  wire::ByteWriter writer(buffer);
  ASSERT_FALSE(tracker.on_packet_received(now, next, true, 2));
  ASSERT_NE(tracker.write_ack_frame(writer, now), 0u);
  wire::ByteReader reader(writer.written());
  wire::Frame frame;
  ASSERT_EQ(wire::decode_frame(reader, frame), wire::WireError::kOk);
  EXPECT_EQ(frame.type, wire::FrameType::kAckEcn);
  EXPECT_EQ(frame.ack.ranges.largest(), next);
  EXPECT_EQ(frame.ack.ecn, tracker.ecn_counts());
}

}  // namespace
}  // namespace dpquic::recovery
