// Proves the per-packet congestion control and pacing calls allocate
// nothing: thousands of sends, ACKs, losses and pacer polls run inside an
// allocation-counting window (//tools/testbed:allocation_counter).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "quic/recovery/bbr.h"
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
      if (i % 2 == 1) cc.on_ack_processed(now, rtt, 0);
    }
    cc.on_ack_processed(now, rtt, 0);
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

// A BBR flow through a 100 Mbit/s bottleneck with a 20 ms RTT for
// `duration`: paced sends, one ACK per packet after the bottleneck, every
// 97th packet lost and declared once a packet 3 later is acknowledged
// (RFC 9002 §6.1.1). The flight lives in a fixed array, so the flow itself
// allocates nothing.
class BbrFlow {
 public:
  explicit BbrFlow(Bbr& cc) : cc_(cc) {}

  uint64_t run(Duration duration) {
    const Instant end = now_ + duration;
    uint64_t sent = 0;
    while (now_ < end) {
      sent += send_allowed();
      Instant next = end;
      for (size_t i = head_; i != tail_; ++i) {
        const Packet& p = ring_[i % kRing];
        if (!p.done && p.ack_at != kNever) {
          next = std::min(next, p.ack_at);
          break;
        }
      }
      if (in_flight_ + kMds <= cc_.congestion_window()) next = std::min(next, next_send_);
      now_ = std::max(now_, next);
      deliver_acks();
    }
    return sent;
  }

 private:
  struct Packet {
    uint64_t number;
    Instant sent;
    Instant ack_at;  // kNever: lost
    bool done;
  };
  static constexpr size_t kRing = 8192;
  static constexpr double kRate = 12.5e6;  // bytes per second

  uint64_t send_allowed() {
    uint64_t sent = 0;
    while (in_flight_ + kMds <= cc_.congestion_window() && next_send_ <= now_ &&
           tail_ - head_ < kRing) {
      in_flight_ += kMds;
      cc_.on_packet_sent(now_, number_, kMds, in_flight_);
      Packet& p = ring_[tail_++ % kRing];
      p = Packet{number_, now_, kNever, false};
      if (number_++ % 97 != 0) {
        link_free_ = std::max(link_free_, now_) + static_cast<Duration>(kMds * kSecond / kRate);
        p.ack_at = link_free_ + kRtt;
      }
      ++sent;
      const uint64_t rate = std::max<uint64_t>(cc_.pacing_rate(), 1);
      next_send_ = std::max(next_send_, now_) + kMds * kSecond / rate;
    }
    return sent;
  }

  void deliver_acks() {
    for (size_t i = head_; i != tail_; ++i) {
      Packet& p = ring_[i % kRing];
      if (p.done || p.ack_at == kNever) continue;
      if (p.ack_at > now_) break;
      declare_lost_below(p.number);
      rtt_.on_sample(now_ - p.sent, 0, true, 25 * kMillisecond);
      const uint64_t before = in_flight_;
      in_flight_ -= kMds;
      cc_.on_packet_acked(now_, AckedPacket{p.number, p.sent, kMds, true}, rtt_, before, false);
      cc_.on_ack_processed(now_, rtt_, in_flight_);
      p.done = true;
    }
    while (head_ != tail_ && ring_[head_ % kRing].done) ++head_;
  }

  void declare_lost_below(uint64_t acked) {
    for (size_t i = head_; i != tail_; ++i) {
      Packet& p = ring_[i % kRing];
      if (p.number + 3 > acked) break;
      if (p.done || p.ack_at != kNever) continue;
      in_flight_ -= kMds;
      cc_.on_packet_lost(now_, AckedPacket{p.number, p.sent, kMds, true});
      cc_.on_congestion_event(now_, p.sent);
      p.done = true;
    }
  }

  Bbr& cc_;
  Packet ring_[kRing] = {};
  size_t head_ = 0, tail_ = 0;
  uint64_t number_ = 0, in_flight_ = 0;
  Instant now_ = kSecond, link_free_ = kSecond, next_send_ = kSecond;
  RttEstimator rtt_;
};

// BBR's delivery-rate ring grows while the flight first spans it; once the
// flow is past Startup, its sends, ACKs, losses and ProbeRTT allocate
// nothing.
TEST(CongestionAllocTest, BbrPerPacketCallsAllocateNothingOnceWarm) {
  Bbr bbr(kMds);
  auto flow = std::make_unique<BbrFlow>(bbr);
  flow->run(2 * kSecond);
  ASSERT_TRUE(bbr.full_bw_reached());
  const size_t slots = bbr.sampler().slots();
  uint64_t sent = 0;
  {
    AllocationWindow window;
    sent = flow->run(8 * kSecond);  // through a ProbeRTT (every 5 s)
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_GT(sent, 50'000u);
  EXPECT_EQ(bbr.sampler().slots(), slots);
  EXPECT_GE(bbr.probe_rtt_rounds_entered(), 1u);
}

}  // namespace
}  // namespace dpquic::recovery
