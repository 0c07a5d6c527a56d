#pragma once
// Shared pieces of the loss detection tests: ACK frames built from ranges,
// a congestion controller that records every call, and a LossEvents that
// records every acknowledged and lost packet.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "quic/recovery/ack_processing.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/recovery/loss_detection.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/time.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/frames.h"
#include "quic/wire/varint.h"

namespace dpquic::recovery::testing {

constexpr Duration ms(uint64_t n) { return n * kMillisecond; }
constexpr Duration us(uint64_t n) { return n * kMicrosecond; }

inline constexpr wire::PacketNumberSpace kInitial = wire::PacketNumberSpace::kInitial;
inline constexpr wire::PacketNumberSpace kHandshake = wire::PacketNumberSpace::kHandshake;
inline constexpr wire::PacketNumberSpace kApplication = wire::PacketNumberSpace::kApplication;

// An ACK frame over `ranges` (descending, disjoint, non-adjacent). The frame's
// range view points into this object's bytes: it is neither copied nor moved.
class TestAck {
 public:
  TestAck(std::initializer_list<wire::AckRange> ranges, uint64_t raw_ack_delay = 0,
          wire::EcnCounts ecn = {}) {
    const std::vector<wire::AckRange> list(ranges);
    wire::ByteWriter writer(bytes_);
    EXPECT_TRUE(wire::encode_ack_ranges(writer, list));
    wire::ByteReader reader(writer.written());
    EXPECT_EQ(wire::AckRangeView::parse(reader, list.front().largest, frame_.ranges),
              wire::WireError::kOk);
    frame_.ack_delay = raw_ack_delay;
    frame_.ecn = ecn;
  }
  TestAck(const TestAck&) = delete;
  TestAck& operator=(const TestAck&) = delete;

  const wire::AckFrame& frame() const { return frame_; }

 private:
  std::array<uint8_t, 512> bytes_{};
  wire::AckFrame frame_;
};

// Records each call as a line of text, so tests compare whole sequences.
class RecordingCongestionController final : public CongestionController {
 public:
  void on_packet_sent(Instant now, uint64_t packet_number, uint64_t size,
                      uint64_t bytes_in_flight) override {
    if (record_sends) {
      calls.push_back("sent now=" + std::to_string(now) + " pn=" + std::to_string(packet_number) +
                      " size=" + std::to_string(size) + " bif=" + std::to_string(bytes_in_flight));
    }
  }
  void on_packet_acked(Instant now, const AckedPacket& packet, const RttEstimator& rtt,
                       uint64_t bytes_in_flight, bool app_limited) override {
    calls.push_back(
        "acked now=" + std::to_string(now) + " pn=" + std::to_string(packet.packet_number) +
        " sent=" + std::to_string(packet.time_sent) + " size=" + std::to_string(packet.size) +
        " srtt=" + std::to_string(rtt.smoothed_rtt()) + " bif=" + std::to_string(bytes_in_flight) +
        " app_limited=" + std::to_string(app_limited));
  }
  void on_ack_processed(Instant now, const RttEstimator&, uint64_t) override {
    calls.push_back("ack_processed now=" + std::to_string(now));
  }
  void on_ce_marks(Instant now, uint64_t count) override {
    calls.push_back("ce now=" + std::to_string(now) + " count=" + std::to_string(count));
  }
  void on_congestion_event(Instant now, Instant time_sent) override {
    calls.push_back("congestion now=" + std::to_string(now) + " sent=" + std::to_string(time_sent));
  }
  void on_persistent_congestion(Instant now) override {
    calls.push_back("persistent now=" + std::to_string(now));
  }
  bool undo_congestion_event() override {
    calls.push_back("undo");
    return true;
  }
  uint64_t congestion_window() const override { return 12000; }
  uint64_t slow_start_threshold() const override { return UINT64_MAX; }
  bool in_slow_start() const override { return true; }
  bool in_recovery(Instant) const override { return false; }
  CongestionControlAlgorithm algorithm() const override {
    return CongestionControlAlgorithm::kNewReno;
  }
  void reset() override { calls.push_back("reset"); }

  bool record_sends = false;
  std::vector<std::string> calls;
};

// Records acknowledged and lost packet numbers per space.
class RecordingEvents final : public LossEvents {
 public:
  void on_packet_acked(wire::PacketNumberSpace space, uint64_t packet_number,
                       const SentPacket&) override {
    acked[static_cast<size_t>(space)].push_back(packet_number);
  }
  void on_packet_lost(wire::PacketNumberSpace space, uint64_t packet_number,
                      const SentPacket&) override {
    lost[static_cast<size_t>(space)].push_back(packet_number);
  }

  const std::vector<uint64_t>& acked_in(wire::PacketNumberSpace space) const {
    return acked[static_cast<size_t>(space)];
  }
  const std::vector<uint64_t>& lost_in(wire::PacketNumberSpace space) const {
    return lost[static_cast<size_t>(space)];
  }
  void clear() {
    for (auto& list : acked) list.clear();
    for (auto& list : lost) list.clear();
  }

  std::array<std::vector<uint64_t>, wire::kPacketNumberSpaceCount> acked;
  std::array<std::vector<uint64_t>, wire::kPacketNumberSpaceCount> lost;
};

// An ack-eliciting, in-flight packet.
inline SentPacket data_packet(Instant time_sent, uint16_t size = 1200, uint32_t frames = 0) {
  return SentPacket{time_sent, frames, size, /*ack_eliciting=*/true, /*in_flight=*/true};
}
// An ACK-only packet: neither ack-eliciting nor in flight.
inline SentPacket ack_only_packet(Instant time_sent, uint16_t size = 50) {
  return SentPacket{time_sent, 0, size, /*ack_eliciting=*/false, /*in_flight=*/false};
}

// One connection's loss detection with its core-owned pieces and recorders.
struct Harness {
  explicit Harness(const LossDetectionConfig& config) : loss(config, pool, xor_buffer, cc) {}

  static LossDetectionConfig server() {
    LossDetectionConfig config;
    config.is_server = true;
    return config;
  }
  static LossDetectionConfig client() { return LossDetectionConfig{}; }

  bool send(Instant now, wire::PacketNumberSpace space, uint64_t packet_number) {
    return loss.on_packet_sent(now, space, packet_number, data_packet(now));
  }
  wire::WireError ack(Instant now, wire::PacketNumberSpace space, const TestAck& ack,
                      bool has_ecn_counts = false) {
    return loss.on_ack_received(now, space, ack.frame(), has_ecn_counts, events);
  }
  void timeout(Instant now) { loss.on_timeout(now, events); }

  SentPacketPool pool;
  AckXorBuffer xor_buffer;
  RecordingCongestionController cc;
  RecordingEvents events;
  LossDetection loss;
};

using Pns = std::vector<uint64_t>;
using Calls = std::vector<std::string>;

}  // namespace dpquic::recovery::testing
