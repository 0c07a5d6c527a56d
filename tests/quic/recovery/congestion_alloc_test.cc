// Proves the per-packet congestion control and pacing calls allocate
// nothing: thousands of sends, ACKs, losses and pacer polls run inside an
// allocation-counting window (//tools/testbed:allocation_counter).
#include <gtest/gtest.h>

#include "quic/recovery/cubic.h"
#include "quic/recovery/new_reno.h"
#include "quic/recovery/pacer.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::recovery {
namespace {

using ::dpquic::testing::AllocationWindow;

constexpr uint64_t kMds = 1200;
constexpr Duration kRtt = 20 * kMillisecond;

// Drives `cc` and `pacer` through slow start, losses, recovery and
// congestion avoidance; returns the number of packets sent.
uint64_t run_flow(CongestionController& cc, Pacer& pacer, RttEstimator& rtt) {
  Instant now = kSecond;
  uint64_t packet_number = 0, sent = 0;
  for (int round = 0; round < 200; ++round) {
    pacer.update(cc.congestion_window(), rtt.smoothed_rtt(), kMds);
    const uint64_t packets = cc.congestion_window() / kMds;
    const Instant round_start = now;
    for (uint64_t i = 0; i < packets; ++i) {
      if (pacer.datagrams_allowed(now) == 0) now = pacer.next_send_time(now);
      pacer.on_datagram_sent(kMds);
      cc.on_packet_sent(now, packet_number++, kMds, (i + 1) * kMds);
      ++sent;
    }
    now = round_start + kRtt;
    rtt.on_sample(kRtt + (round % 7) * kMillisecond, 0, true, 25 * kMillisecond);
    for (uint64_t i = 0; i < packets; ++i) {
      if (round % 5 == 4 && i == 3) {
        cc.on_congestion_event(now, round_start);
        continue;
      }
      cc.on_packet_acked(now, AckedPacket{packet_number - packets + i, round_start, kMds}, rtt,
                         (packets - i) * kMds, false);
      if (i % 2 == 1) cc.on_ack_processed(now, rtt);
    }
    cc.on_ack_processed(now, rtt);
    if (round == 150) cc.on_persistent_congestion(now);
  }
  return sent;
}

TEST(CongestionAllocTest, PerPacketCallsAllocateNothing) {
  NewReno reno(kMds);
  Cubic cubic(kMds);
  Pacer reno_pacer, cubic_pacer;
  RttEstimator reno_rtt, cubic_rtt;
  uint64_t sent = 0;
  {
    AllocationWindow window;
    sent += run_flow(reno, reno_pacer, reno_rtt);
    sent += run_flow(cubic, cubic_pacer, cubic_rtt);
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_GT(sent, 4000u);
  EXPECT_FALSE(cubic.hystart_active());  // a loss ended slow start
}

}  // namespace
}  // namespace dpquic::recovery
