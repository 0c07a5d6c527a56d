// Proves loss detection allocates nothing per packet or per ACK once warm:
// thousands of rounds of sends, ACKs with a hole (a packet-threshold loss),
// ECN counts, time-threshold expiries and PTOs run inside an
// allocation-counting window (//tools/testbed:allocation_counter).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "quic/recovery/ack_processing.h"
#include "quic/recovery/loss_detection.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/frames.h"
#include "quic/wire/varint.h"
#include "tests/quic/recovery/loss_detection_test_util.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::recovery {
namespace {

using namespace ::dpquic::recovery::testing;  // NOLINT: test vocabulary
using ::dpquic::testing::AllocationWindow;

constexpr uint64_t kPacketsPerRound = 32;

// Counts instead of recording: recording would allocate.
class CountingEvents final : public LossEvents {
 public:
  void on_packet_acked(wire::PacketNumberSpace, uint64_t, const SentPacket&) override { ++acked; }
  void on_packet_lost(wire::PacketNumberSpace, uint64_t, const SentPacket&) override { ++lost; }
  uint64_t acked = 0;
  uint64_t lost = 0;
};

class NullCongestionController final : public CongestionController {
 public:
  void on_packet_sent(Instant, uint64_t, uint64_t, uint64_t) override {}
  void on_packet_acked(Instant, const AckedPacket&, const RttEstimator&, uint64_t, bool) override {}
  void on_ack_processed(Instant, const RttEstimator&, uint64_t) override {}
  void on_congestion_event(Instant, Instant) override { ++congestion_events; }
  void on_persistent_congestion(Instant) override {}
  uint64_t congestion_window() const override { return UINT64_MAX; }
  uint64_t slow_start_threshold() const override { return UINT64_MAX; }
  bool in_slow_start() const override { return true; }
  bool in_recovery(Instant) const override { return false; }
  CongestionControlAlgorithm algorithm() const override {
    return CongestionControlAlgorithm::kNewReno;
  }
  void reset() override {}
  uint64_t congestion_events = 0;
};

// One round: 32 packets 10 us apart, then one ACK_ECN for all but the 4th
// from the end (lost by packet threshold), ECN-CE up by one, 20 ms later.
// Every 8th round the ACK also leaves the 2nd from the end unacknowledged,
// to be lost by the time threshold timer, and every 16th round nothing is
// acknowledged until a PTO fired.
void run_round(LossDetection& loss, CountingEvents& events, uint64_t round, Instant& now) {
  const uint64_t first = round * kPacketsPerRound;
  const uint64_t last = first + kPacketsPerRound - 1;
  for (uint64_t pn = first; pn <= last; ++pn) {
    ASSERT_TRUE(loss.on_packet_sent(now, kApplication, pn, data_packet(now)));
    now += us(10);
  }
  if (round % 16 == 15) {
    now = loss.timer();
    loss.on_timeout(now, events);  // PTO
    ASSERT_EQ(loss.probes_pending(kApplication), kProbesPerPto);
    loss.on_probe_sent(kApplication);
    loss.on_probe_sent(kApplication);
  }
  now += ms(20);

  std::array<wire::AckRange, 3> ranges;
  size_t count = 0;
  if (round % 8 == 7) {
    ranges[count++] = {last, last};
    ranges[count++] = {last - 2, last - 2};
  } else {
    ranges[count++] = {last - 2, last};
  }
  ranges[count++] = {first, last - 4};
  std::array<uint8_t, 64> bytes;
  wire::ByteWriter writer(bytes);
  ASSERT_TRUE(wire::encode_ack_ranges(writer, std::span(ranges.data(), count)));
  wire::ByteReader reader(writer.written());
  wire::AckFrame frame;
  ASSERT_EQ(wire::AckRangeView::parse(reader, last, frame.ranges), wire::WireError::kOk);
  frame.ack_delay = 100;
  frame.ecn = {kPacketsPerRound * (round + 1), 0, round + 1};
  ASSERT_EQ(loss.on_ack_received(now, kApplication, frame, true, events), wire::WireError::kOk);
  if (round % 8 == 7) {
    ASSERT_NE(loss.loss_time(kApplication), kNever);
    now = loss.timer();
    loss.on_timeout(now, events);  // time threshold
  }
  ASSERT_EQ(loss.bytes_in_flight(), 0u);
}

TEST(LossDetectionAllocTest, SteadyStateAllocatesNothing) {
  SentPacketPool pool;
  AckXorBuffer xor_buffer;
  NullCongestionController cc;
  CountingEvents events;
  LossDetectionConfig config;
  config.is_server = true;
  LossDetection loss(config, pool, xor_buffer, cc);
  loss.on_handshake_confirmed(0);

  Instant now = ms(1);
  uint64_t round = 0;
  for (; round < 64; ++round) run_round(loss, events, round, now);  // warm-up

  constexpr uint64_t kRounds = 4000;  // 128k packets
  const uint64_t acked_before = events.acked;
  const uint64_t lost_before = events.lost;
  const uint64_t events_before = cc.congestion_events;
  {
    AllocationWindow window;
    for (uint64_t end = round + kRounds; round < end; ++round) {
      run_round(loss, events, round, now);
    }
    EXPECT_EQ(window.count(), 0u);
  }
  // Per round: 31 acknowledged and 1 lost; every 8th round one more is lost
  // (by time) instead of acknowledged.
  EXPECT_EQ(events.lost - lost_before, kRounds * 1 + kRounds / 8);
  EXPECT_EQ(events.acked - acked_before, kRounds * 31 - kRounds / 8);
  EXPECT_GT(cc.congestion_events - events_before, 0u);
}

}  // namespace
}  // namespace dpquic::recovery
