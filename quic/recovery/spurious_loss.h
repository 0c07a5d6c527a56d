#pragma once
// Spurious loss detection and the adaptive reordering thresholds (RFC 9002
// §6.1: "Implementations ... MAY adapt the thresholds", as RACK does for TCP,
// RFC 8985).
//
// A packet declared lost whose acknowledgment arrives later was not lost but
// reordered (or delayed) in the network. LossHistory remembers the most
// recent declared-lost packets of a connection in a fixed ring, so an ACK can
// be checked against them without any per-packet allocation; the packet's
// reordering (how far above it the largest acknowledged number was, how long
// after its send the acknowledgment came) then raises the thresholds so the
// same reordering is not taken for loss again, and the congestion reduction it
// caused can be undone (loss_detection.h).

#include <array>
#include <cstddef>
#include <cstdint>

#include "quic/recovery/rtt_estimator.h"
#include "quic/time.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/packet_type.h"

namespace dpquic::recovery {

// RFC 9002 §6.1.1: kPacketThreshold, the starting packet threshold.
inline constexpr uint64_t kPacketThreshold = 3;
// The adaptive packet threshold never exceeds this. Beyond it reordering is
// left to the time threshold, which bounds how late a real loss is found
// (Linux caps TCP's reordering degree similarly, at 300). 256 covers a few
// milliseconds of jitter at hundreds of Mbit/s of 1200-byte packets.
inline constexpr uint64_t kMaxPacketThreshold = 256;
// RFC 9002 §6.1.2: kTimeThreshold = 9/8, in eighths of an RTT; the adaptive
// one grows up to 2 RTTs (RACK's reordering window is at most one RTT on top
// of the RTT, RFC 8985 §6.2).
inline constexpr uint32_t kTimeThresholdEighths = 9;
inline constexpr uint32_t kMaxTimeThresholdEighths = 16;

// max(eighths / 8 * max(smoothed_rtt, latest_rtt), kGranularity).
Duration loss_delay(const RttEstimator& rtt, uint32_t eighths);

// The two loss thresholds of one connection: RFC 9002's until a spurious
// loss is seen, then raised (never lowered) to cover the reordering seen.
class ReorderingThresholds {
 public:
  uint64_t packet_threshold() const { return packet_threshold_; }
  uint32_t time_threshold_eighths() const { return time_eighths_; }

  // A packet declared lost while `distance` numbers below the largest
  // acknowledged was acknowledged after all: the packet threshold becomes at
  // least distance + 1 (capped at kMaxPacketThreshold).
  void on_spurious_by_packets(uint64_t distance);
  // A packet declared lost by the time threshold was acknowledged `elapsed`
  // after it was sent, with max(smoothed_rtt, latest_rtt) = `rtt_base`: the
  // time threshold becomes at least elapsed / rtt_base, rounded up to
  // eighths (capped at kMaxTimeThresholdEighths).
  void on_spurious_by_time(Duration elapsed, Duration rtt_base);

  // Back to RFC 9002's constants (a new path: its reordering is unknown).
  void reset() { *this = ReorderingThresholds(); }

 private:
  uint64_t packet_threshold_ = kPacketThreshold;
  uint32_t time_eighths_ = kTimeThresholdEighths;
};

// One packet declared lost, as remembered until its late acknowledgment.
struct LostPacketRecord {
  uint64_t packet_number = 0;
  Instant time_sent = 0;
  // Largest acknowledged minus packet_number when it was declared lost.
  uint64_t distance = 0;
  // The congestion event its loss was counted in (loss_detection.h).
  uint32_t congestion_event = 0;
  wire::PacketNumberSpace space = wire::PacketNumberSpace::kInitial;
  bool in_flight = false;
  // Which threshold(s) declared it lost.
  bool by_packets = false;
  bool by_time = false;
  // Not yet acknowledged (nor forgotten).
  bool pending = false;
};

// The most recently declared-lost packets of a connection (all spaces), a
// fixed ring: the oldest record is overwritten, so a packet acknowledged
// after kCapacity more losses is no longer recognised (its loss stands).
class LossHistory {
 public:
  static constexpr size_t kCapacity = 64;

  // Remembers a lost packet. Within a space, packet numbers must ascend
  // across calls (loss detection declares each space's losses in order).
  void record(const LostPacketRecord& record);

  // Calls on_spurious(const LostPacketRecord&) for each pending record of
  // `space` that `ranges` acknowledges, ascending, and stops remembering it.
  // O(records + ranges), and nothing at all while no record is pending.
  template <typename OnSpurious>
  void find_acknowledged(wire::PacketNumberSpace space, const wire::AckRangeView& ranges,
                         OnSpurious&& on_spurious);

  // Forgets every record of `space` (its keys were discarded, or its packets
  // abandoned without a congestion signal).
  void forget(wire::PacketNumberSpace space);
  void clear();

  size_t pending() const { return pending_; }

 private:
  std::array<LostPacketRecord, kCapacity> records_{};
  size_t next_ = 0;  // where the next record goes
  size_t pending_ = 0;
};

template <typename OnSpurious>
void LossHistory::find_acknowledged(wire::PacketNumberSpace space, const wire::AckRangeView& ranges,
                                    OnSpurious&& on_spurious) {
  if (pending_ == 0) return;
  // Newest to oldest is descending packet numbers within a space, as the
  // ranges are: one merge walk. Matches are collected (at most kCapacity
  // indices) and reported ascending.
  std::array<uint8_t, kCapacity> found;
  size_t found_count = 0;
  auto range = ranges.begin();
  for (size_t step = 1; step <= kCapacity && range != ranges.end(); ++step) {
    const size_t i = (next_ + kCapacity - step) % kCapacity;
    LostPacketRecord& record = records_[i];
    if (!record.pending || record.space != space) continue;
    while (range != ranges.end() && range->smallest > record.packet_number) ++range;
    if (range == ranges.end()) break;
    if (record.packet_number <= range->largest) {
      record.pending = false;
      --pending_;
      found[found_count++] = static_cast<uint8_t>(i);
    }
  }
  while (found_count > 0) on_spurious(records_[found[--found_count]]);
}

}  // namespace dpquic::recovery
